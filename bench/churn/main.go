// Command churn is the process churn of bench/soak.sh: it starts short-lived
// processes with names never seen before (churn-N, its threads cw-N-I), each
// living a moment and doing a few syscalls, while a steady load of small
// reads and writes runs beside them. A long-running exporter or top must keep
// its memory flat under it: every new name, pid and tid is something it
// could remember for ever.
//
// A child is this program run again with -child N: Go cannot run code
// between fork and exec, so the child names itself (prctl PR_SET_NAME)
// once it is running.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The main goroutine stays on the main thread, so that the name a child
// gives itself is its process's (the main thread's comm), not a worker's.
func init() { runtime.LockOSThread() }

func main() {
	rate := flag.Int("rate", 20, "processes started per second")
	threads := flag.Int("threads", 3, "named threads per process")
	dur := flag.Duration("d", time.Minute, "how long to churn")
	child := flag.Int("child", -1, "run as child number N (internal)")
	flag.Parse()
	if *child >= 0 {
		runChild(*child, *threads)
		return
	}
	if err := run(*rate, *threads, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "churn:", err)
		os.Exit(1)
	}
}

func run(rate, threads int, dur time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program: %w", err)
	}
	stop := time.Now().Add(dur)
	go steadyLoad(stop)
	tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
	defer tick.Stop()
	var wg sync.WaitGroup
	n := 0
	for time.Now().Before(stop) {
		<-tick.C
		cmd := exec.Command(self, "-child", fmt.Sprint(n), "-threads", fmt.Sprint(threads))
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting child %d: %w", n, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); cmd.Wait() }()
		n++
	}
	wg.Wait()
	fmt.Printf("churn: %d processes, %d named threads\n", n, n*threads)
	return nil
}

// runChild names itself churn-N, starts threads named cw-N-I that each do a
// few syscalls and sleep a little, and exits.
func runChild(n, threads int) {
	setName(fmt.Sprintf("churn-%d", n))
	var wg sync.WaitGroup
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the name is the thread's; it exits with it (not unlocked)
			setName(fmt.Sprintf("cw-%d-%d", n, i))
			buf := make([]byte, 4096)
			if f, err := os.Open("/proc/self/stat"); err == nil {
				f.Read(buf)
				f.Close()
			}
			time.Sleep(time.Duration(5+i*5) * time.Millisecond)
		}()
	}
	wg.Wait()
}

func setName(name string) {
	b := append([]byte(name), 0)
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafePtr(b)), 0, 0, 0)
}

// steadyLoad reads and writes a small file in a loop, a few thousand
// syscalls a second, and sleeps between rounds so as not to take a CPU.
func steadyLoad(stop time.Time) {
	f, err := os.CreateTemp("", "churn-load-*")
	if err != nil {
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 512)
	for time.Now().Before(stop) {
		for range 200 {
			f.WriteAt(buf, 0)
			f.ReadAt(buf, 0)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
