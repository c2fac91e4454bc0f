// Command soak runs whyslow's long-running modes under process churn and
// samples their memory once a minute: the evidence that they run for weeks.
//
//	go run ./bench/soak -whyslow bin/whyslow -minutes 30 -modes watch,exporter,top
//
// The churn: short-lived processes and threads, each with a name of its own
// (thousands a minute), and a steady syscall load (reads of /dev/zero). Each
// mode runs the whole time; its VmRSS (and the anonymous part: the heap's)
// is read from /proc each minute, and for the modes that serve metrics, the
// Go heap and the lost events. Before minute 0 a warm-up writes 20,000
// distinct small files (-warmup-files), filling the views' bounded tables
// of file names as a long run does.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var (
	whyslow = flag.String("whyslow", "bin/whyslow", "the whyslow binary")
	minutes = flag.Int("minutes", 30, "how long")
	modes   = flag.String("modes", "watch,exporter,top", "the modes to run side by side: watch, exporter, top")
	child   = flag.String("churn-child", "", "internal: a short-lived process that names itself so and exits")
	procs   = flag.Int("procs", 20, "short-lived processes started a second")
	threads = flag.Int("threads", 20, "short-lived threads started a second")
	warmup  = flag.Int("warmup-files", 20000, "distinct small files written (and removed) before minute 0, filling the views' bounded tables of file names as a long run does")
)

func main() {
	flag.Parse()
	if *child != "" {
		unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(unsafeName(*child))), 0, 0, 0)
		time.Sleep(5 * time.Millisecond)
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type mode struct {
	name    string
	cmd     *exec.Cmd
	metrics string // host:port of /metrics, or ""
}

func run() error {
	// The modes die with the driver (Pdeathsig), which the kernel ties to
	// the thread that started them: Go retires idle threads, which killed
	// a watch a minute in. The main goroutine keeps its thread.
	runtime.LockOSThread()
	dir, err := os.MkdirTemp("", "whyslow-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// A copy written front to back, as a package installs it: the file
	// the Go linker wrote through a mapping faults more of itself in
	// (BENCHMARKS.md, section 4), which would count in every RSS here.
	b, err := os.ReadFile(*whyslow)
	if err != nil {
		return err
	}
	installed := filepath.Join(dir, "whyslow")
	if err := os.WriteFile(installed, b, 0o755); err != nil {
		return err
	}
	*whyslow = installed
	var ms []*mode
	for _, name := range strings.Split(*modes, ",") {
		m := &mode{name: name}
		switch name {
		case "watch":
			m.metrics = freeAddr()
			m.cmd = exec.Command(*whyslow, "watch", "--dir", filepath.Join(dir, "incidents"), "--requests",
				"--slow-request", "10s", "--stall", "2s", "--listen", m.metrics)
		case "exporter":
			m.metrics = freeAddr()
			m.cmd = exec.Command(*whyslow, "exporter", "--listen", m.metrics, "--group-by", "comm")
		case "top":
			// batch mode: the same capture and frames as the interactive
			// view, drawn as text, kept to check what it showed
			m.cmd = exec.Command(*whyslow, "top", "--batch", "--threads", "--limit", "50", "-d", "1s")
			out, err := os.Create(filepath.Join(dir, "top.out"))
			if err != nil {
				return err
			}
			defer out.Close()
			m.cmd.Stdout = out
		default:
			return fmt.Errorf("no mode %q", name)
		}
		// Should the driver die, its modes go with it.
		m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return err
		}
		m.cmd.Stderr = log
		if err := m.cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
		defer func() {
			m.cmd.Process.Signal(os.Interrupt)
			m.cmd.Wait()
			if b, _ := os.ReadFile(log.Name()); len(b) > 0 {
				fmt.Fprintf(os.Stderr, "%s's stderr:\n%s", m.name, tail(string(b), 10))
			}
		}()
		ms = append(ms, m)
	}
	time.Sleep(3 * time.Second)
	if err := warmUp(filepath.Join(dir, "warmup"), *warmup); err != nil {
		return err
	}
	stop := make(chan struct{})
	var started atomic.Int64
	go churnProcesses(stop, &started)
	go churnThreads(stop, &started)
	go syscallLoad(stop)

	fmt.Printf("minute")
	for _, m := range ms {
		fmt.Printf(" | %s RSS (anon) MiB", m.name)
		if m.metrics != "" {
			fmt.Printf(" | %s Go heap MiB | %s lost", m.name, m.name)
		}
	}
	fmt.Println(" | processes and threads started")
	for minute := 0; minute <= *minutes; minute++ {
		if minute > 0 {
			time.Sleep(time.Minute)
		}
		fmt.Printf("%d", minute)
		for _, m := range ms {
			if m.cmd.ProcessState != nil || syscall.Kill(m.cmd.Process.Pid, 0) != nil {
				return fmt.Errorf("%s ended", m.name)
			}
			rss, anon := vmRSS(m.cmd.Process.Pid)
			fmt.Printf(" | %.1f (%.1f)", float64(rss)/1024, float64(anon)/1024)
			if m.metrics != "" {
				heap, lost := scrape(m.metrics)
				fmt.Printf(" | %.1f | %.0f", heap/(1<<20), lost)
			}
		}
		fmt.Printf(" | %d\n", started.Load())
	}
	close(stop)
	if m, _ := filepath.Glob(filepath.Join(dir, "incidents", "*.txt")); len(m) > 0 {
		fmt.Printf("\nwatch wrote %d incidents\n", len(m))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "top.out")); err == nil {
		frames, over, unnamed, unnamedFiles := checkTop(string(b))
		fmt.Printf("top: %d frames; thread rows above 100%%: %d; rows named [pid N]: %d; files named by inode: %d\n",
			frames, len(over), unnamed, unnamedFiles)
		for _, row := range over[:min(len(over), 5)] {
			fmt.Println("  " + row)
		}
	}
	return nil
}

// checkTop reads top's batch output: how many frames it drew, the thread
// rows with a share above 100% of one thread (LOST to OTHER), the rows it
// could name only by number ("[pid N]"), and the files it could name only
// by inode ("inode N on 8:1"). Thread rows are those under a
// "PID COMM" header, until the next table's (DEVICE, WAITED).
func checkTop(out string) (frames int, over []string, unnamed, unnamedFiles int) {
	inThreads, inFiles := false, false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "whyslow top"):
			frames++
			inThreads, inFiles = false, false
			continue
		case len(f) >= 2 && f[0] == "PID" && f[1] == "COMM":
			inThreads = true
			continue
		case len(f) > 0 && f[0] == "WAITED":
			inThreads, inFiles = false, true
			continue
		case len(f) == 0 || f[0] == "DEVICE":
			inThreads, inFiles = false, false
			continue
		}
		if inFiles && strings.Contains(line, " inode ") {
			unnamedFiles++ // a file whose name was lost
		}
		if !inThreads || len(f) < 3 {
			continue
		}
		if f[1] == "[pid" {
			unnamed++
		}
		// LOST … OTHER: the 13 numbers before MOSTLY, after PID and COMM
		// (a name may hold spaces: counted from the first number after it)
		nums := 0
		for _, v := range f[2:] {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				if nums > 0 {
					break
				}
				continue
			}
			if nums++; x > 100 {
				over = append(over, line)
				break
			}
			if nums == 13 {
				break
			}
		}
	}
	return frames, over, unnamed, unnamedFiles
}

// churnProcesses starts *procs processes a second, each naming itself
// churn-N with a new N, living 5 ms.
func churnProcesses(stop chan struct{}, started *atomic.Int64) {
	self, _ := os.Executable()
	tick := time.NewTicker(time.Second / time.Duration(*procs))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		cmd := exec.Command(self, "-churn-child", fmt.Sprintf("churn-%d", n))
		if cmd.Start() == nil {
			started.Add(1)
			go cmd.Wait()
		}
	}
}

// churnThreads starts *threads OS threads a second, each naming itself
// thread-N, doing a little I/O and exiting.
func churnThreads(stop chan struct{}, started *atomic.Int64) {
	tick := time.NewTicker(time.Second / time.Duration(*threads))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(unsafeName(fmt.Sprintf("thread-%d", n)))), 0, 0, 0)
			f, err := os.Open("/proc/self/stat")
			if err == nil {
				io.Copy(io.Discard, f)
				f.Close()
			}
			time.Sleep(2 * time.Millisecond)
			started.Add(1)
		}()
	}
}

// syscallLoad reads /dev/zero 4 KiB at a time, about 20,000 calls a second.
func syscallLoad(stop chan struct{}) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for range 200 {
			f.Read(buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:9477"
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape reads the Go heap in use and the lost events from /metrics.
func scrape(addr string) (heap, lost float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case f[0] == "go_memstats_heap_alloc_bytes":
			heap = v
		case strings.HasPrefix(f[0], "whyslow_lost_events_total"):
			lost += v
		}
	}
	return heap, lost
}

// vmRSS is a process's resident set and its anonymous part, in KiB: the
// anonymous part is the heap's, the rest the binary's pages and mappings.
func vmRSS(pid int) (rss, anon int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "RssAnon:":
			anon = n
		}
	}
	return rss, anon
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n") + "\n"
}

// unsafeName is a C string for prctl(PR_SET_NAME): at most 15 bytes and a NUL.
func unsafeName(s string) *byte {
	b := make([]byte, 16)
	copy(b[:15], s)
	return &b[0]
}

// warmUp writes n distinct small files and removes them. Each dirties a
// page, which the views name (their file-name and dirtier tables hold the
// last 16,384): under the churn alone those tables fill over most of an
// hour, and a slow rise until then is their filling, not a leak. Measured
// after this, the run shows what the views hold once full.
func warmUp(dir string, n int) error {
	if n <= 0 {
		return nil
	}
	start := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	page := make([]byte, 4096)
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), page, 0o644); err != nil {
			return err
		}
	}
	unix.Sync()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Printf("warm-up: %d files written and removed in %.0f s\n", n, time.Since(start).Seconds())
	return nil
}
