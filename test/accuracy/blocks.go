package accuracy

import "fmt"

// The blocks' Python. A body is the lines of the block's function; it may
// call the helpers of prelude.py. Seconds are written with three decimals.

var kindCPU = &Kind{
	Name: "cpu", Reason: "cpu",
	Why:  "a busy loop until a deadline: on the CPU all along",
	body: func(b *Block, env *Env) []string { return []string{fmt.Sprintf("busy(%.3f)", b.Seconds)} },
}

var kindSleep = &Kind{
	Name: "sleep", Reason: "sleep",
	Why:  "time.sleep: clock_nanosleep",
	body: func(b *Block, env *Env) []string { return []string{fmt.Sprintf("time.sleep(%.3f)", b.Seconds)} },
}

var kindSelectPipe = &Kind{
	Name: "select-pipe", Reason: "sleep",
	Why:      "select or poll on a pipe nobody writes, ended by its own timeout",
	Variants: []string{"select", "poll"},
	body: func(b *Block, env *Env) []string {
		wait := fmt.Sprintf("select.select([r], [], [], %.3f)", b.Seconds)
		if b.VariantName() == "poll" {
			wait = fmt.Sprintf("p = select.poll()\np.register(r, select.POLLIN)\np.poll(%d)", millis(b.Seconds))
		}
		return lines("r, w = os.pipe()  # nobody writes", wait, "os.close(r)\nos.close(w)")
	},
}

var kindPollSocket = &Kind{
	Name: "poll-socket", Reason: "sleep",
	Why: "select, poll or a receive with a timeout on a socket no data comes to " +
		"(a bound UDP socket; a TCP connection the program's own listener never accepts), ended by the timeout",
	Variants: []string{"udp select", "udp poll", "udp timeout", "tcp select", "tcp poll", "tcp timeout"},
	body: func(b *Block, env *Env) []string {
		var open, closing string
		switch b.Variant / 3 {
		case 0:
			open = "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind(('127.0.0.1', 0))  # nobody sends to it"
			closing = "s.close()"
		default:
			open = "l = socket.socket()\nl.bind(('127.0.0.1', 0))\nl.listen(1)\n" +
				"s = socket.create_connection(l.getsockname())  # in the backlog, never written to"
			closing = "s.close()\nl.close()"
		}
		var wait string
		switch b.Variant % 3 {
		case 0:
			wait = fmt.Sprintf("select.select([s], [], [], %.3f)", b.Seconds)
		case 1:
			wait = fmt.Sprintf("p = select.poll()\np.register(s, select.POLLIN)\np.poll(%d)", millis(b.Seconds))
		case 2:
			wait = fmt.Sprintf("s.settimeout(%.3f)\ntry:\n    s.recv(1)\nexcept socket.timeout:\n    pass", b.Seconds)
		}
		return lines(open, wait, closing)
	},
}

var kindEventWait = &Kind{
	Name: "event-wait", Reason: "sleep",
	Why:      "a futex wait with a timeout nobody ends: Event.wait, Condition.wait, or a lock the thread holds itself, acquired with a timeout",
	Variants: []string{"event", "condition", "own lock"},
	body: func(b *Block, env *Env) []string {
		switch b.VariantName() {
		case "event":
			return []string{fmt.Sprintf("threading.Event().wait(%.3f)", b.Seconds)}
		case "condition":
			return lines("c = threading.Condition()", fmt.Sprintf("with c:\n    c.wait(%.3f)", b.Seconds))
		}
		return lines("l = threading.Lock()\nl.acquire()", fmt.Sprintf("l.acquire(timeout=%.3f)  # held by this thread: only the timeout ends it", b.Seconds))
	},
}

var kindDiskRead = &Kind{
	Name: "disk-read", Reason: "disk-read", Fixture: "slow disk",
	Why:      "reads of a file's pages evicted before the program began, from a disk throttled in reads",
	Variants: []string{"pread", "read", "mmap"},
	body:     func(b *Block, env *Env) []string { return []string{readLine(b, env, b.VariantName())} },
}

var kindFsync = &Kind{
	Name: "fsync", Reason: "sync", Fixture: "slow disk",
	Why:      "buffered writes under the default dirty limits (into the cache at once), then fsync or fdatasync of them to a disk throttled in writes",
	Variants: []string{"fsync", "fdatasync"},
	body:     func(b *Block, env *Env) []string { return []string{syncLine(b, env, b.VariantName())} },
}

// readLine reads the block's range of the read file, cold, in the way how
// (pread, read, mmap).
func readLine(b *Block, env *Env, how string) string {
	return fmt.Sprintf("cold_read(%d, %d, '%s')", b.ReadOffset, readBytes(b, env), how)
}

// syncLine writes the block's bytes and syncs them with how (fsync, fdatasync).
func syncLine(b *Block, env *Env, how string) string {
	return fmt.Sprintf("write_file('%s', %d, '%s')", b.Name, syncBytes(b, env), how)
}

var kindDirtyThrottle = &Kind{
	Name: "dirty-throttle", Reason: "dirty-throttle", Fixture: "slow disk, small dirty limits",
	Why: "buffered writes, more than the dirty limits hold, to a disk throttled in writes: " +
		"balance_dirty_pages makes the writer wait for writeback (the limits are small only when this block dominates)",
	Variants: []string{"os.write", "file.write"},
	body: func(b *Block, env *Env) []string {
		return []string{fmt.Sprintf("write_file('%s', %d, None, buffered=%s)", b.Name, dirtyBytes(b, env), pyBool(b.VariantName() == "file.write"))}
	},
}

// childKind is a block whose work a child process does while the parent
// waits for it: forked, or a new interpreter exec'd on this file.
func childKind(name, reason, fixture, what string, work func(b *Block, env *Env) []string) *Kind {
	return &Kind{
		Name: name, Reason: reason, Fixture: fixture,
		Why:      "the parent waits (wait4) for a child process that " + what,
		Variants: []string{"fork", "exec"},
		body: func(b *Block, env *Env) []string {
			if b.VariantName() == "exec" {
				return []string{fmt.Sprintf("exec_wait('%s_work')", b.Name)}
			}
			return []string{fmt.Sprintf("wait_child(fork(%s_work))", b.Name)}
		},
		work: work,
	}
}

var (
	kindChildCPU   = childKind("child-cpu", "cpu", "", "computes", kindCPU.body)
	kindChildSleep = childKind("child-sleep", "sleep", "", "sleeps", kindSleep.body)
	kindChildRead  = childKind("child-read", "disk-read", "slow disk", "reads cold pages from the slow disk", preads)
	kindChildFsync = childKind("child-fsync", "sync", "slow disk", "writes and fsyncs on the slow disk",
		func(b *Block, env *Env) []string { return []string{syncLine(b, env, "fsync")} })
)

// preads is the work of a block that reads its range cold with pread: the
// kinds whose variants are the ways of waiting for it (a child, a lock).
func preads(b *Block, env *Env) []string { return []string{readLine(b, env, "pread")} }

// pipeKind is a block whose parent reads a pipe a forked child writes only
// after its work.
func pipeKind(name, reason, what, work string) *Kind {
	return &Kind{
		Name: name, Reason: reason,
		Why:      "the parent reads a pipe a forked child writes only after it " + what + ": the read is ended by the child",
		Variants: []string{"read", "select"},
		body: func(b *Block, env *Env) []string {
			wait := "os.read(r, 16)"
			if b.VariantName() == "select" {
				wait = "select.select([r], [], [])\nos.read(r, 16)"
			}
			return lines("r, w = os.pipe()",
				"def child():\n    os.close(r)\n    "+fmt.Sprintf(work, b.Seconds)+"\n    os.write(w, b'done')",
				"pid = fork(child)\nos.close(w)", wait, "os.close(r)\nwait_child(pid)")
		},
	}
}

var (
	kindPipeCPU   = pipeKind("pipe-cpu", "cpu", "computed", "busy(%.3f)")
	kindPipeSleep = pipeKind("pipe-sleep", "sleep", "slept", "time.sleep(%.3f)")
)

var kindTCP = &Kind{
	Name: "tcp", Reason: "network", Fixture: "slow servers",
	Why:      "a request over TCP to a local server that answers after the seconds asked (it sleeps meanwhile)",
	Variants: []string{"recv", "timeout", "select"},
	body: func(b *Block, env *Env) []string {
		return streamRequest(b, fmt.Sprintf("s = socket.create_connection(('127.0.0.1', %d))", env.TCPPort))
	},
}

var kindUDP = &Kind{
	Name: "udp", Reason: "network", Fixture: "slow servers",
	Why:      "a request over UDP to a local server that answers after the seconds asked",
	Variants: []string{"recvfrom", "select", "connected"},
	body: func(b *Block, env *Env) []string {
		addr := fmt.Sprintf("('127.0.0.1', %d)", env.UDPPort)
		ask := fmt.Sprintf("b'%.3f'", b.Seconds)
		switch b.VariantName() {
		case "select":
			return lines("s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)", "s.sendto("+ask+", "+addr+")",
				"select.select([s], [], [])\ns.recvfrom(64)\ns.close()")
		case "connected":
			return lines("s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)", "s.connect("+addr+")",
				"s.send("+ask+")\ns.recv(64)\ns.close()")
		}
		return lines("s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)", "s.sendto("+ask+", "+addr+")", "s.recvfrom(64)\ns.close()")
	},
}

var kindUnix = &Kind{
	Name: "unix", Reason: "ipc", Fixture: "slow servers",
	Why: "a request over a Unix stream socket to a local server that answers after the seconds asked. " +
		"whyslow's word for a wait on another process over a Unix socket is ipc (docs/run-json.md, \"How a poll is told\"), " +
		"where the same wait over TCP is network: the reason is debatable, the choice is whyslow's",
	Variants: []string{"recv", "select"},
	body: func(b *Block, env *Env) []string {
		return streamRequest(b, fmt.Sprintf("s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\ns.connect(%q)", env.UnixPath))
	},
}

// streamRequest asks the server connected by connect for an answer after
// the block's seconds, and waits for it: in recv, in a poll (a socket
// timeout), or in select before its recv.
func streamRequest(b *Block, connect string) []string {
	ask := fmt.Sprintf("s.sendall(b'%.3f\\n')", b.Seconds)
	switch b.VariantName() {
	case "timeout":
		return lines(connect, fmt.Sprintf("s.settimeout(%.3f)", b.Seconds+5), ask, "answer(s)\ns.close()")
	case "select":
		return lines(connect, ask, "select.select([s], [], [])\nanswer(s)\ns.close()")
	}
	return lines(connect, ask, "answer(s)\ns.close()")
}

// lockKind is a block whose thread waits for a lock another thread holds
// while it works.
func lockKind(name, reason, fixture, what string, work func(b *Block, env *Env) []string) *Kind {
	return &Kind{
		Name: name, Reason: reason, Fixture: fixture,
		Why:      "the thread waits for a threading lock another thread holds while it " + what,
		Variants: []string{"lock", "rlock", "acquire with timeout"},
		body: func(b *Block, env *Env) []string {
			newLock := "lock = threading.Lock()"
			if b.VariantName() == "rlock" {
				newLock = "lock = threading.RLock()"
			}
			take := "with lock:\n    pass"
			if b.VariantName() == "acquire with timeout" {
				take = fmt.Sprintf("lock.acquire(timeout=%.3f)  # the holder lets go long before\nlock.release()", b.Seconds+5)
			}
			return lines(newLock, "held = threading.Event()",
				"def holder():\n    with lock:\n        held.set()\n        "+work(b, env)[0],
				"t = threading.Thread(target=holder)\nt.start()\nheld.wait()", take, "t.join()")
		},
	}
}

var (
	kindLockCPU   = lockKind("lock-cpu", "cpu", "", "computes", kindCPU.body)
	kindLockSleep = lockKind("lock-sleep", "sleep", "", "sleeps", kindSleep.body)
	kindLockRead  = lockKind("lock-read", "disk-read", "slow disk", "reads cold pages from the slow disk", preads)
)

var kindCPUQuota = &Kind{
	Name: "cpu-quota", Reason: "cpu-quota", Fixture: "cpu cgroup (v1) with a quota of 0.2 CPU",
	Why: "a busy loop in a thread that moved itself (its tid to tasks) into a cpu cgroup whose quota is 0.2 CPU, and back after",
	body: func(b *Block, env *Env) []string {
		return lines("tid = str(threading.get_native_id())",
			fmt.Sprintf("with open(%q, 'w') as f:\n    f.write(tid)", env.CPUCgroup+"/tasks"),
			fmt.Sprintf("try:\n    busy(%.3f)\nfinally:\n    with open(%q, 'w') as f:\n        f.write(tid)", b.Seconds, env.CPUHome+"/tasks"))
	},
}

var kindMemory = &Kind{
	Name: "memory", Reason: "memory", Fixture: "memory cgroup (v1) with a limit, slow disk",
	Why: "a child process in a memory cgroup writes more than its limit to a disk throttled in writes: " +
		"to cache more it must reclaim, and reclaim waits for writeback (the default dirty limits let the cgroup fill first)",
	Variants: []string{"fork", "exec"},
	body: func(b *Block, env *Env) []string {
		return kindChildCPU.body(b, env) // the same fork or exec of its work
	},
	work: func(b *Block, env *Env) []string {
		return lines(fmt.Sprintf("with open(%q, 'w') as f:\n    f.write(str(os.getpid()))", env.MemCgroup+"/cgroup.procs"),
			fmt.Sprintf("write_file('%s', %d, None)", b.Name, memoryBytes(b, env)))
	},
}
