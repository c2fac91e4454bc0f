package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// requests measures what `--requests` costs: the target's every socket call
// streamed, and (bpf/arrival.bpf.h) a hook on every TCP segment the machine
// receives, which times a request's arrival.
//   - a conversation: a server answering one-byte requests over TCP, recorded
//     with `record --requests -p SERVER`: every call and segment is its;
//   - bystanders: the same conversation between two processes that are not
//     the target, beside `record --requests -- sleep`: the per-segment hook's
//     cost to the rest of the machine.
//
// Each untraced, under the baseline binary (-baseline) and under this one,
// alternating in each round; the ratio is untraced time over traced time.
func requests(w io.Writer) {
	fmt.Fprintf(w, "\n## 7. Requests\n\nWhat `--requests` costs: the target's socket calls streamed, and a hook on every TCP segment received (the arrival of a request's bytes). 100000 one-byte round trips over TCP on loopback; %d rounds, each untraced, under `%s` and under this build, alternating; the ratio is untraced time over traced time (1 = free), the median.\n\n", *pairs, baselineName())
	fmt.Fprint(w, "| work | untraced s | baseline ratio | this build ratio | this build's range |\n|---|---:|---:|---:|---:|\n")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(w, "| requests | failed: %v | | | |\n", err)
		return
	}
	rows := []struct {
		name   string
		target bool // whyslow records the server; else an idle target beside it
	}{
		{"a conversation: the server recorded (`record --requests -p SERVER`)", true},
		{"bystanders: the same, beside `record --requests -- sleep 60`", false},
	}
	for _, r := range rows {
		var base, now, untraced []float64
		for range *pairs {
			a, err := tcpConversation(self, "", r.target)
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", r.name, err)
				return
			}
			untraced = append(untraced, a)
			if *baseline != "" {
				b, err := tcpConversation(self, *baseline, r.target)
				if err != nil {
					fmt.Fprintf(w, "| %s | baseline failed: %v | | | |\n", r.name, err)
					return
				}
				base = append(base, a/b)
			}
			c, err := tcpConversation(self, *whyslow, r.target)
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

// tcpConversation times the ping-pong over TCP, with whyslow (if given)
// recording the server with --requests, or an idle target beside it.
func tcpConversation(self, whyslowBin string, target bool) (float64, error) {
	// Each end on a CPU of its own: unpinned, where the scheduler put the
	// two made the untraced times swing by 2x between rounds.
	srv := exec.Command("taskset", "-c", "0", self, "-pingpong-server", "127.0.0.1:0")
	out, err := srv.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := srv.Start(); err != nil {
		return 0, err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("the ping-pong server did not start: %v", err)
	}
	if whyslowBin != "" {
		args := []string{"record", "--requests", "-o", filepath.Join(work, "requests.db")}
		if target {
			args = append(args, "-p", strconv.Itoa(srv.Process.Pid)) // taskset execs the server in place
		} else {
			args = append(args, "--", "sleep", "60")
		}
		os.Remove(filepath.Join(work, "requests.db"))
		rec := exec.Command(whyslowBin, args...)
		if err := rec.Start(); err != nil {
			return 0, err
		}
		defer func() { rec.Process.Signal(os.Interrupt); rec.Wait() }()
		time.Sleep(1500 * time.Millisecond) // attached
	}
	res, err := exec.Command("taskset", "-c", "1", self, "-pingpong-client", strings.TrimSpace(addr), "-rounds", "100000").Output()
	if err != nil {
		return 0, fmt.Errorf("the ping-pong client: %v", err)
	}
	return strconv.ParseFloat(strings.TrimSpace(string(res)), 64)
}
