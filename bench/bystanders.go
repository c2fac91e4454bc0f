package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// bystanders measures what whyslow's scheduler hooks cost the rest of the
// machine (issue 40): two processes that whyslow does not explain ping-pong
// over a pipe on one CPU (`perf bench sched pipe`, ~a million context
// switches a second), untraced, beside the floor (programs that return at
// once on the default level's attach points), beside `whyslow watch`
// (system-wide: every process is a target), beside `whyslow run` of an idle
// target (peers followed: every user task keeps its last waits), and beside
// bpftrace doing the least an off-CPU tool does. Rounds alternate the rows,
// the order turned by one each round; each row's figure is the median of
// its rounds' ops/s. Then each whyslow row again with the kernel's
// per-program statistics on, for each hook's ns a run.
func bystanders(w io.Writer) {
	rounds := max(*pairs, defaultPairs)
	load := []string{"taskset", "-c", "1", "perf", "bench", "sched", "pipe", "-l", "200000"}
	fmt.Fprintf(w, "\n## 9. Bystanders: what the scheduler hooks cost everyone else (issue 40)\n\n`%s`: two processes whyslow does not explain hand a byte to and fro over a pipe, both on CPU 1, ~a million context switches a second. %d rounds, the rows in turn, the order turned by one each round; each figure is the median of its rounds. **/ floor** is a row's ops/s over the floor's: what it costs above the attach points' own price (goals: `watch` ≥ 0.95, beside `run` ≥ 0.97).\n\n", strings.Join(load, " "), rounds)
	dir, err := os.MkdirTemp(work, "bystanders-")
	if err != nil {
		fmt.Fprintf(w, "failed: %v\n", err)
		return
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(w, "failed: %v\n", err)
		return
	}
	// bpftrace finds tracepoints' formats in tracefs, which a fresh
	// machine has not mounted: mounted for its rows, unmounted after.
	if unmount, err := mountTracefs(); err != nil {
		fmt.Fprintf(w, "(tracefs: %v)\n\n", err)
	} else {
		defer unmount()
	}
	rows := []*besideRow{
		{name: "untraced"},
		{name: "floor (empty programs on the default level's attach points)", wrap: []string{self, "-floor", "default", "--"}},
		{name: "`whyslow watch` (system-wide)", beside: []string{*whyslow, "watch", "--dir", filepath.Join(dir, "inc"), "--stall", "0"}},
		{name: "beside `whyslow run -- sleep 60` (an idle target, peers followed)", beside: []string{*whyslow, "run", "--linger=0", "--", "sleep", "60"}},
		{name: "bpftrace: off-CPU time summed by comm, no stack", beside: []string{"bpftrace", "-e", bpftraceOffCPU(false)}},
		{name: "bpftrace: off-CPU time by comm and kernel stack (offcputime's shape)", beside: []string{"bpftrace", "-e", bpftraceOffCPU(true)}},
	}
	hooked := slices.Clone(rows[2:4])
	if *baseline != "" {
		// The same two rows of an earlier build, in the same rounds: the
		// host's speed moves more between runs than a change does.
		rows = append(rows,
			&besideRow{name: "`watch` of the baseline (" + *baseline + ")", beside: []string{*baseline, "watch", "--dir", filepath.Join(dir, "inc-baseline"), "--stall", "0"}},
			&besideRow{name: "beside `run` of the baseline", beside: []string{*baseline, "run", "--linger=0", "--", "sleep", "60"}})
		hooked = append(hooked, rows[len(rows)-2:]...)
	}
	besideRounds(w, rows, rounds, "beside the ping-pong", "ops/s", func(r *besideRow) (float64, error) {
		return pipeOps(r.beside, append(slices.Clone(r.wrap), load...))
	})
	fmt.Fprint(w, "\nEach whyslow hook's cost a run, with `kernel.bpf_stats_enabled` set for one more round beside each (restored after; the statistics add ~20 ns a run of their own, the floor's empty program reads about 40–60 ns here):\n\n| beside the ping-pong | hook | runs | ns a run |\n|---|---|---:|---:|\n")
	for _, r := range hooked {
		stats, err := hookStats(r.beside, load)
		if err != nil {
			fmt.Fprintf(w, "| %s | failed: %s | | |\n", r.name, oneLine(err.Error()))
			continue
		}
		for _, s := range stats {
			fmt.Fprintf(w, "| %s | %s | %d | %.0f |\n", r.name, s.name, s.runs, s.ns)
		}
	}
}

// bpftraceOffCPU is the least an off-CPU tool does at each switch: stamp the
// thread going off, and at its return add the time to its comm's total,
// with the kernel stack in the key (offcputime's shape) or without.
func bpftraceOffCPU(stacks bool) string {
	if stacks {
		return "tracepoint:sched:sched_switch { @start[args->prev_pid] = nsecs; @stack[args->prev_pid] = kstack; $s = @start[args->next_pid]; if ($s) { @off[args->next_comm, @stack[args->next_pid]] = sum(nsecs - $s); delete(@start[args->next_pid]); } }"
	}
	return "tracepoint:sched:sched_switch { @start[args->prev_pid] = nsecs; $s = @start[args->next_pid]; if ($s) { @off[args->next_comm] = sum(nsecs - $s); delete(@start[args->next_pid]); } }"
}

var opsPerSec = regexp.MustCompile(`(\d+)\s+ops/sec`)

// pipeOps runs the ping-pong (under wrap, in argv), beside a capture when
// beside is given, and returns its ops/s.
func pipeOps(beside, argv []string) (float64, error) {
	if beside != nil {
		stop, err := startBeside(beside)
		if err != nil {
			return 0, err
		}
		defer stop()
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", argv[0], err, out)
	}
	m := opsPerSec.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no ops/sec in: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// startBeside starts a capture and waits until it is attached: bpftrace
// says "Attaching", watch "watching", and `run` starts its target only once
// attached (its load takes a fraction of the 2 s given it). stop interrupts
// the capture and waits for it.
func startBeside(argv []string) (stop func(), err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	marker := map[string]string{"bpftrace": "Attaching", "watch": "watching"}[argv[0]]
	if len(argv) > 1 && argv[1] == "watch" {
		marker = "watching"
	}
	attached := make(chan struct{}, 1)
	var said strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if said.Len() < 4096 {
				said.WriteString(sc.Text() + "\n")
			}
			if marker != "" && strings.Contains(sc.Text(), marker) {
				attached <- struct{}{}
			}
		}
	}()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	wait := time.After(2 * time.Second)
	if marker != "" {
		wait = time.After(30 * time.Second)
	}
	select {
	case <-done:
		return nil, fmt.Errorf("%s ended before the work began: %s", argv[0], said.String())
	case <-attached:
		time.Sleep(300 * time.Millisecond)
	case <-wait:
		if marker != "" {
			cmd.Process.Kill()
			<-done
			return nil, fmt.Errorf("%s did not say %q in 30 s", argv[0], marker)
		}
	}
	return func() {
		// `run` waits for its target (sleep 60) after an interrupt; a
		// killed capture's links go with its file descriptors.
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}, nil
}

type hookStat struct {
	name string
	runs uint64
	ns   float64
}

// hookStats runs the work beside a capture with the kernel's per-program
// statistics on, and returns what the capture's own programs ran: those
// its links name (/proc/PID/fdinfo), a thousand runs or more.
func hookStats(beside, argv []string) ([]hookStat, error) {
	const knob = "/proc/sys/kernel/bpf_stats_enabled"
	was, err := os.ReadFile(knob)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(knob, []byte("1"), 0o644); err != nil {
		return nil, err
	}
	defer os.WriteFile(knob, was, 0o644)
	cmd := exec.Command(beside[0], beside[1:]...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(2 * time.Second)
	ids := progIDs(cmd.Process.Pid)
	before, err := progStats()
	if err != nil {
		return nil, err
	}
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %v: %s", argv[0], err, out)
	}
	after, err := progStats()
	if err != nil {
		return nil, err
	}
	var out []hookStat
	for id, a := range after {
		b := before[id]
		if !ids[id] || a.RunCnt-b.RunCnt < 1000 {
			continue
		}
		out = append(out, hookStat{a.Name, a.RunCnt - b.RunCnt, float64(a.RunTimeNs-b.RunTimeNs) / float64(a.RunCnt-b.RunCnt)})
	}
	slices.SortFunc(out, func(x, y hookStat) int { return strings.Compare(x.name, y.name) })
	return out, nil
}

// progIDs are the BPF programs a process's links and program fds hold.
func progIDs(pid int) map[uint32]bool {
	ids := map[uint32]bool{}
	infos, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	for _, f := range infos {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "prog_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					ids[uint32(id)] = true
				}
			}
		}
	}
	return ids
}

type progStat struct {
	ID        uint32 `json:"id"`
	Name      string `json:"name"`
	RunCnt    uint64 `json:"run_cnt"`
	RunTimeNs uint64 `json:"run_time_ns"`
}

// progStats is every loaded program's run count and time (bpftool).
func progStats() (map[uint32]progStat, error) {
	out, err := exec.Command("bpftool", "prog", "show", "-j").Output()
	if err != nil {
		return nil, fmt.Errorf("bpftool prog show: %v", err)
	}
	var all []progStat
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, err
	}
	m := map[uint32]progStat{}
	for _, p := range all {
		m[p.ID] = p
	}
	return m, nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// busyServer measures a busy web server beside whyslow's request capture:
// nginx (one worker) serving a small static page to `ab -k -c 4` for 3 s,
// untraced, on the floor of --requests (empty programs on its attach
// points: the syscalls and TCP segments as well as the scheduler), beside
// `watch --requests` (system-wide) and under `attach --requests -p MASTER`.
func busyServer(w io.Writer) {
	rounds := max(*pairs, defaultPairs)
	fmt.Fprintf(w, "\n### 9b. A busy server\n\nnginx (one worker process) serving a 612-byte static page on loopback to `ab -k -c 4 -t 3`; %d rounds, the rows in turn, the order turned by one each round; requests/s, the median of the rounds (goal: ≥ 0.95 of the floor).\n\n", rounds)
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(w, "failed: %v\n", err)
		return
	}
	dir, err := os.MkdirTemp(work, "nginx-")
	if err != nil {
		fmt.Fprintf(w, "failed: %v\n", err)
		return
	}
	defer os.RemoveAll(dir)
	master, port, stop, err := startBenchNginx(dir)
	if err != nil {
		fmt.Fprintf(w, "failed: nginx: %v\n", err)
		return
	}
	defer stop()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	load := []string{"ab", "-q", "-k", "-c", "4", "-t", "3", "-n", "1000000", url}
	rows := []*besideRow{
		{name: "untraced"},
		{name: "floor of --requests", wrap: []string{self, "-floor", "requests", "--"}},
		{name: "`whyslow watch --requests` (system-wide)", beside: []string{*whyslow, "watch", "--requests", "--dir", filepath.Join(dir, "inc"), "--stall", "0"}},
		{name: "`whyslow attach --requests -p MASTER`", beside: []string{*whyslow, "attach", "--requests", "-o", filepath.Join(dir, "rec.db"), "-p", strconv.Itoa(master)}},
	}
	if *baseline != "" {
		// The same capture by an earlier build, in the same rounds.
		rows = append(rows, &besideRow{name: "`watch --requests` of the baseline (" + *baseline + ")",
			beside: []string{*baseline, "watch", "--requests", "--dir", filepath.Join(dir, "inc-baseline"), "--stall", "0"}})
	}
	besideRounds(w, rows, rounds, "nginx beside", "requests/s", func(r *besideRow) (float64, error) {
		os.Remove(filepath.Join(dir, "rec.db"))
		return abRate(r.beside, append(slices.Clone(r.wrap), load...))
	})
}

var abRequests = regexp.MustCompile(`Requests per second:\s+([0-9.]+)`)

// abRate runs ab (under wrap, in argv) beside a capture when beside is
// given, and returns its requests a second.
func abRate(beside, argv []string) (float64, error) {
	if beside != nil {
		stop, err := startBeside(beside)
		if err != nil {
			return 0, err
		}
		defer stop()
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", argv[0], err, out)
	}
	m := abRequests.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no requests per second in: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// startBenchNginx starts nginx on a free loopback port with its files in
// dir, and returns its master's pid and what stops it.
func startBenchNginx(dir string) (master, port int, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, nil, err
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte(strings.Repeat("x", 612)), 0o644)
	conf := fmt.Sprintf(`daemon off;
master_process on;
worker_processes 1;
user nobody nogroup;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp-body;
  proxy_temp_path %[1]s/tmp-proxy;
  fastcgi_temp_path %[1]s/tmp-fastcgi;
  uwsgi_temp_path %[1]s/tmp-uwsgi;
  scgi_temp_path %[1]s/tmp-scgi;
  server {
    listen 127.0.0.1:%[2]d;
    root %[1]s;
  }
}
`, dir, port)
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return 0, 0, nil, err
	}
	cmd := exec.Command("nginx", "-c", filepath.Join(dir, "nginx.conf"), "-p", dir)
	if err := cmd.Start(); err != nil {
		return 0, 0, nil, err
	}
	stop = func() { cmd.Process.Signal(syscall.SIGQUIT); cmd.Wait() }
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return cmd.Process.Pid, port, stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return 0, 0, nil, fmt.Errorf("not listening on port %d", port)
}

// mountTracefs mounts tracefs at /sys/kernel/tracing unless it is there,
// and returns what puts the machine back as it was.
func mountTracefs() (func(), error) {
	const at = "/sys/kernel/tracing"
	if _, err := os.Stat(at + "/events"); err == nil {
		return func() {}, nil
	}
	if err := syscall.Mount("tracefs", at, "tracefs", 0, ""); err != nil {
		return nil, fmt.Errorf("mounting tracefs at %s: %w", at, err)
	}
	return func() { syscall.Unmount(at, 0) }, nil
}

// besideRow is a row of sections 9 and 9b: the work alone, on a floor
// (wrap), or beside a capture (beside).
type besideRow struct {
	name   string
	beside []string // a capture started before the work, stopped after; nil: none
	wrap   []string // the work run under this; nil: none
	values []float64
	failed string
}

// besideRounds measures each row rounds times, the rows in turn and the
// order turned by one each round, and writes their table: the median of
// each, its range, and its ratio to the first row (untraced) and the
// second (the floor). A row that fails once is left out of later rounds.
func besideRounds(w io.Writer, rows []*besideRow, rounds int, title, unit string, measure func(*besideRow) (float64, error)) {
	for i := range rounds {
		for j := range rows {
			r := rows[(i+j)%len(rows)]
			if r.failed != "" {
				continue
			}
			v, err := measure(r)
			if err != nil {
				r.failed = err.Error()
				continue
			}
			r.values = append(r.values, v)
		}
	}
	fmt.Fprintf(w, "| %s | %s (median) | rounds' range | / untraced | **/ floor** |\n|---|---:|---:|---:|---:|\n", title, unit)
	untraced, floor := median(rows[0].values), median(rows[1].values)
	for _, r := range rows {
		if r.failed != "" {
			fmt.Fprintf(w, "| %s | failed: %s | | | |\n", r.name, oneLine(r.failed))
			continue
		}
		m := median(r.values)
		fmt.Fprintf(w, "| %s | %.0f | %.0f–%.0f | %.3f | **%.3f** |\n", r.name, m, slices.Min(r.values), slices.Max(r.values), m/untraced, m/floor)
	}
}
