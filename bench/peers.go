package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// peers measures what following the processes a target waits on costs
// (bpf/peers.bpf.h): every user task's wait history, kept at each of its
// context switches, and a peer's waits sent as a target's are.
//   - bystanders: two processes that are not the target ping-pong over a
//     pipe (perf bench sched pipe) while whyslow follows an idle target:
//     the history's cost to the rest of the machine;
//   - a conversation: the target ping-pongs one byte with a server over a
//     Unix socket; the server becomes a peer, and its every wait is sent.
//
// Each is measured untraced, under the baseline binary (-baseline: whyslow
// before peers, the same attach points less the history and the peers), and
// under this one, alternating in each round; the ratio is untraced time over
// traced time, the median of the rounds.
func peers(w io.Writer) {
	fmt.Fprintf(w, "\n## 6. Following peers\n\nWhat the waits of processes outside the target cost: every user task keeps its last waits at each of its switches (task storage), and a peer's waits are sent as a target's are. %d rounds, each untraced, under `%s` (before peers) and under this build, alternating; the ratio is untraced time over traced time (1 = free), the median.\n\n", *pairs, baselineName())
	fmt.Fprint(w, "| work | untraced s | baseline ratio | this build ratio | this build's range |\n|---|---:|---:|---:|---:|\n")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(w, "| peers | failed: %v | | | |\n", err)
		return
	}
	sock := filepath.Join(work, "pingpong.sock")
	rows := []struct {
		name string
		work func(wrap []string) (float64, error)
	}{
		{"bystanders: `perf bench sched pipe -l 200000`, beside `whyslow run -- sleep`", func(wrap []string) (float64, error) {
			return besideIdleTarget(wrap, []string{"perf", "bench", "sched", "pipe", "-l", "200000"})
		}},
		{"a conversation: 100000 one-byte round trips with a server over a Unix socket (`whyslow run -- client`)", func(wrap []string) (float64, error) {
			return conversation(self, sock, wrap)
		}},
	}
	for _, r := range rows {
		var base, now []float64
		var untraced []float64
		for range *pairs {
			a, err := r.work(nil)
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", r.name, err)
				return
			}
			untraced = append(untraced, a)
			if *baseline != "" {
				b, err := r.work([]string{*baseline})
				if err != nil {
					fmt.Fprintf(w, "| %s | baseline failed: %v | | | |\n", r.name, err)
					return
				}
				base = append(base, a/b)
			}
			c, err := r.work([]string{*whyslow})
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", r.name, err)
				return
			}
			now = append(now, a/c)
		}
		b := "—"
		if len(base) > 0 {
			b = fmt.Sprintf("%.3f", median(base))
		}
		fmt.Fprintf(w, "| %s | %.2f | %s | %.3f | %s |\n", r.name, median(untraced), b, median(now), spread(now))
	}
}

func baselineName() string {
	if *baseline == "" {
		return "no baseline (-baseline not given)"
	}
	return filepath.Base(*baseline)
}

// besideIdleTarget runs work, timed, while whyslow (wrap, if any) follows a
// sleeping target.
func besideIdleTarget(wrap, work []string) (float64, error) {
	if len(wrap) > 0 {
		bg := exec.Command(wrap[0], "run", "--linger=0", "--", "sleep", "60")
		if err := bg.Start(); err != nil {
			return 0, err
		}
		defer func() { bg.Process.Kill(); bg.Wait() }()
		time.Sleep(time.Second) // attached
	}
	start := time.Now()
	if out, err := exec.Command(work[0], work[1:]...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", work[0], err, out)
	}
	return time.Since(start).Seconds(), nil
}

// conversation starts the ping-pong server (this program, -pingpong-server),
// and times the client under whyslow run (wrap, if any).
func conversation(self, sock string, wrap []string) (float64, error) {
	os.Remove(sock)
	srv := exec.Command(self, "-pingpong-server", sock)
	out, err := srv.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := srv.Start(); err != nil {
		return 0, err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		return 0, fmt.Errorf("the ping-pong server did not start: %v", err)
	}
	argv := []string{self, "-pingpong-client", sock, "-rounds", "100000"}
	if len(wrap) > 0 {
		argv = append([]string{wrap[0], "run", "--linger=0", "--"}, argv...)
	}
	c := exec.Command(argv[0], argv[1:]...)
	res, err := c.Output()
	if err != nil {
		return 0, fmt.Errorf("the ping-pong client: %v", err)
	}
	return strconv.ParseFloat(strings.TrimSpace(string(res)), 64)
}

// network is the ping-pong's: TCP for an address (host:port), else a Unix
// socket's path.
func network(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return "unix"
	}
	return "tcp"
}

// pingPongServer answers each byte with a byte, on each connection; it
// prints its address when it listens (a TCP port chosen by the kernel).
func pingPongServer(path string) {
	l, err := net.Listen(network(path), path)
	if err != nil {
		fail(err)
	}
	fmt.Println(l.Addr().String())
	for {
		c, err := l.Accept()
		if err != nil {
			fail(err)
		}
		go func() {
			defer c.Close()
			b := make([]byte, 1)
			for {
				if _, err := c.Read(b); err != nil {
					return
				}
				if _, err := c.Write(b); err != nil {
					return
				}
			}
		}()
	}
}

// pingPongClient makes rounds round trips and prints the seconds they took.
func pingPongClient(path string, rounds int) {
	c, err := net.Dial(network(path), path)
	if err != nil {
		fail(err)
	}
	b := make([]byte, 1)
	start := time.Now()
	for range rounds {
		if _, err := c.Write(b); err != nil {
			fail(err)
		}
		if _, err := c.Read(b); err != nil {
			fail(err)
		}
	}
	fmt.Println(time.Since(start).Seconds())
}
