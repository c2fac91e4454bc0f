/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The scheduler: off-CPU intervals with the syscall and file of each wait,
 * their stacks and wakers, on-CPU time. Included by whyslow.bpf.c, after its
 * maps and settings: one object, split along its sections. */
#ifndef WHYSLOW_SCHED_BPF_H
#define WHYSLOW_SCHED_BPF_H

/* ---- scheduler: off-CPU intervals, wakers, on-CPU time ---- */

/* How many other processes' sync waits are open in offcpu_start (default
 * level). While none is, a switch to a thread outside the target needs no
 * lookup: that is most switches of a busy machine. Only ever too high
 * (entries removed on exit or by user space are not subtracted), which costs
 * a lookup, never a missed wait. */
__u64 other_syncs_open = 0;

/* The syscall the current thread is switched out in, read from its saved
 * registers (default level: no entry hook). Unlinks are left out: their name
 * is only worth reading at entry. A global function: the verifier checks it
 * once, not at each of the two places sched_switch reads a wait's call. */
__noinline int wait_syscall(struct offstart *s)
{
	if (!s)
		return 0;
	__u32 cls = syscall_class(s->syscall);
	if (!cls || cls == CLS_UNLINK)
		return 0;
	struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
	struct inflight in = {};
	if (!syscall_args(s->syscall, regs, &in))
		return 0;
	s->cls = cls;
	s->fd = in.fd;
	s->req = in.req;
	s->flags = in.flags;
	/* Described at every wait, run or not: a socket described before it
	 * had its peer is described again once it has one (file.bpf.h). */
	if (in.fd >= 0 && cls != CLS_OPEN)
		fd_ref_current(in.fd, &s->f);
	return 0;
}

/* Another process's wait inside a sync call, as a syscalls row covering the
 * wait only (default level): ret 0 (unknown), no bytes. The target's own
 * waits ride on their offcpu_event (call). */
static __always_inline void emit_wait(struct task_struct *task, __u32 pid, __u32 tid,
				      struct offstart *s, __u64 now)
{
	struct syscall_event *e = reserve_event(sizeof(*e), LOST_SYSCALL);
	if (!e)
		return;
	fill_hdr_of(&e->h, EV_SYSCALL, s->ts, task, pid, tid);
	e->dur = now - s->ts;
	e->ret = 0;
	e->req = s->req;
	e->fd = s->fd;
	e->fd2 = -1;
	e->nr = s->syscall;
	e->flags = s->flags;
	e->blocked = BLOCKED_WAIT;
	e->_pad = 0;
	e->f = s->f;
	__builtin_memset(&e->f2, 0, sizeof(e->f2));
	submit_event(e);
}

/* ---- runs: short waits summed in the kernel ----
 *
 * A context-switch-heavy thread (a pipe's or a socket's ping-pong, a lock
 * handed to and fro) waits hundreds of thousands of times a second, each
 * wait a few microseconds. Sending each one cost the machine more than the
 * attach points themselves (BENCHMARKS.md, bystanders). A wait shorter than
 * run_below_ns that has the facts of the thread's previous short wait (state,
 * syscall, fd and file, peer or not, and the same waker by the same call and
 * socket) is added to that wait's record, kept in the thread's slot: a run.
 * The run is sent when its waits add up to run_below_ns, when it spans
 * RUN_SPAN_NS, when a wait with other facts or a longer one comes (sent
 * first, so each thread's records stay in order), when the thread dies, and
 * at the end of the capture (user space reads the slots left).
 *
 * A run's record is one wait as the analyses see it: off_ns and runq_ns are
 * sums, h.ts the last wait's end, waits how many, start_ts the first one's
 * start. Totals per thread and reason are exact; the order of a run's waits
 * among its thread's running is given up, within RUN_SPAN_NS. Uninterruptible
 * waits (disk, journal, page locks: the ones with stacks) are always sent one
 * by one. 0 (--full, --requests): every wait is sent. */
const volatile __u64 run_below_ns = 0;
#define RUN_SPAN_NS 10000000ULL
/* Tests only: each wait summed in a run is also sent alone, marked waits 0,
 * so that a test compares a run's sums with its waits' on the same run. */
const volatile bool check_runs = false;

/* Whether the wait s (woken by wk if woken) has the facts of run r. */
static __always_inline bool same_run(struct offcpu_event *r, struct offstart *s, struct waker *wk, bool woken)
{
	if (r->state != s->state || r->quota != s->quota || r->syscall != s->syscall || r->fd != s->fd || r->outside != s->peer ||
	    r->f.ino != s->f.ino || r->f.dev != s->f.dev)
		return false;
	if (!woken)
		return r->waker_tid == 0;
	return r->waker_tid == wk->tid && r->waker_pid == wk->pid && r->waker_sock.nr == wk->sock.nr &&
	       r->waker_sock.f.ino == wk->sock.f.ino && r->waker_sock.lport == wk->sock.lport;
}

/* Whether the slot's last wakeup ended the wait s. A quota's wait is not
 * ended by a wakeup: the CPUs may be idle. */
static __always_inline bool woken_by(struct wait_slot *slot, struct offstart *s)
{
	return slot->wk.of == s->ts && s->ts && !s->quota;
}

/* A wait whose start was not seen at a switch-out (begun before capture,
 * its switch-out missed, a new peer's from its history) was open all the
 * same when a wakeup found none in the slot: that wakeup ended it. */
static __always_inline void woke_unopened(struct wait_slot *slot, struct offstart *s)
{
	if (slot && slot->wk.of == WOKEN_UNOPENED)
		slot->wk.of = s->ts;
}

/* Fills e with the wait s of task next (tgid, tid), ended now, woken as its
 * slot says (slot may be NULL: no waker known). */
static __always_inline void fill_offcpu(struct offcpu_event *e, struct task_struct *next, __u32 tgid, __u32 tid,
					struct offstart *s, struct wait_slot *slot, __u64 now)
{
	fill_hdr_of(&e->h, EV_OFFCPU, now, next, tgid, tid);
	e->off_ns = now - s->ts;
	e->state = s->state;
	e->stack_id = s->stack_id;
	e->syscall = s->syscall;
	/* A quota's wait is not for a CPU: the CPUs may be idle. */
	e->runq_ns = s->state == 'R' && !s->quota ? e->off_ns : 0;
	e->quota = s->quota;
	e->waker_pid = 0;
	e->waker_tid = 0;
	e->fkind = s->f.kind;
	__builtin_memset(e->waker_comm, 0, sizeof(e->waker_comm));
	/* A call row for a wait without one of its own: every wait at the
	 * default level, an io thread's at every level (it has no syscalls). */
	e->call = s->cls && (!syscall_hooks || s->io_worker || s->peer);
	e->fd = s->fd;
	e->req = s->req;
	e->flags = s->flags;
	e->outside = s->peer;
	e->f = s->f;
	__builtin_memset(&e->waker_sock, 0, sizeof(e->waker_sock));
	e->waker_sock.nr = -1;
	e->waits = 1;
	e->max_ns = e->off_ns;
	e->start_ts = s->ts;
	if (slot && woken_by(slot, s)) {
		struct waker *w = &slot->wk;
		e->runq_ns = queued_since(next, w, now, e->off_ns);
		e->waker_pid = w->pid;
		e->waker_tid = w->tid;
		__builtin_memcpy(e->waker_comm, w->comm, sizeof(e->waker_comm));
		e->waker_sock = w->sock;
	}
}

/* Tests only (check_runs): a run's record carries this bit in waits, so
 * that a test tells it from a wait sent alone. */
#define RUN_MARK 0x80000000u

/* Sends the run in slot, if any, and empties it. */
static __always_inline void flush_run(struct wait_slot *slot)
{
	if (!slot->run.waits)
		return;
	if (check_runs)
		slot->run.waits |= RUN_MARK;
	output_event(&slot->run, sizeof(slot->run), LOST_OFFCPU);
	slot->run.waits = 0;
}

/* Adds the short wait s (its slot's open one) to the thread's run, or
 * begins a run with it. */
static __always_inline void add_to_run(struct task_struct *next, __u32 tgid, __u32 tid, struct wait_slot *slot,
				       struct offstart *s, __u64 now)
{
	struct offcpu_event *r = &slot->run;
	bool woken = woken_by(slot, s);
	__u64 off = now - s->ts;
	if (r->waits && now - r->start_ts < RUN_SPAN_NS && same_run(r, s, &slot->wk, woken)) {
		r->off_ns += off;
		if (woken)
			r->runq_ns += queued_since(next, &slot->wk, now, off);
		else if (s->state == 'R' && !s->quota)
			r->runq_ns += off;
		r->h.ts = now;
		r->waits++;
		if (off > r->max_ns)
			r->max_ns = off;
		if (r->off_ns >= run_below_ns)
			flush_run(slot);
		return;
	}
	flush_run(slot);
	fill_offcpu(r, next, tgid, tid, s, slot, now);
}

/* ---- where an uninterruptible wait waits, without unwinding ----
 *
 * Unwinding a stack costs ~3 µs on a VM whose every return goes through a
 * thunk; a write with O_DSYNC waits twice a call (its data's writeback, the
 * journal's commit), each wait a stack: two thirds of what dd oflag=dsync
 * paid for whyslow's hooks (BENCHMARKS.md, 1e). Every uninterruptible wait
 * (not a preemption) reaches this program through schedule(), by frames of
 * a size fixed for a kernel build: schedule()'s return address, into the
 * function that waits (io_schedule, jbd2_log_wait_commit,
 * rwsem_down_write_slowpath: the kernel's wait channel), lies at a fixed
 * distance above the tracepoint's arguments. That distance is learned from
 * the first stacks unwound: the unwound return addresses into schedule and
 * into its caller, found in that order in the raw stack, at the same place
 * in two waits. Then a thread's wait at a site it waited at in the same
 * syscall, in reclaim or not alike, reuses the stack it took there, for
 * SITE_REUSE_NS. Until the distance is known (or on a kernel where it
 * cannot be found), every such wait unwinds, as before. */
#define SITE_WORDS 128
#define SITE_TRIES 64
#define SITE_REUSE_NS 10000000ULL
#define PF_MEMALLOC 0x00000800
/* Words above ctx of schedule()'s return address; 0 while unknown. */
__u32 site_words = 0;
/* Its first finding, confirmed by the next (learn_site). */
__u32 site_guess = 0;
/* Attempts made to learn it, each a second unwind: SITE_TRIES at most. */
__u32 site_tries = 0;

struct site_scratch {
	__u64 raw[SITE_WORDS];
	__u64 ips[8];
	__u64 at;        /* the address raw was read from */
	__u32 k;         /* ips[k] is the return into schedule(), ips[k + 1] its return into its caller */
	__u32 _pad;
};

/* schedule()'s addresses, [lo, hi), set by user space from kallsyms before
 * the programs attach (sites.go): which unwound frame is the return into
 * schedule differs between kernels (6.18 unwinds __traceiter_sched_switch
 * and __schedule first). 0: not known, taken as the second. */
__u64 schedule_range[2] = {};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct site_scratch);
} site_scratch SEC(".maps");

/* The address of the tracepoint's arguments, a kernel stack address, as
 * a number: read back from the stack slot that holds the pointer. */
static __always_inline __u64 ctx_addr(void *ctx)
{
	void *p = ctx;
	__u64 a = 0;
	bpf_probe_read_kernel(&a, sizeof(a), &p);
	return a;
}

/* Functions that wait for many kinds of things (io_schedule: a page's
 * writeback, a buffer's lock, a block bitmap's read, a journal's buffer):
 * [lo, hi) address pairs, set by user space from kallsyms once it has read
 * them (sites.go). A return into one of them says nothing of what the wait
 * waits on, so no stack is reused for it: a journal wait given a bitmap
 * read's stack would read as disk-read. */
#define GENERIC_SITES 4
__u64 generic_sites[2 * GENERIC_SITES] = {};
/* Set once generic_sites and schedule_range are (or kallsyms could not
 * tell them): until then no stack is reused by site and none learned. */
__u32 sites_told = 0;

/* The site of the current thread's wait, 0 if unknown or generic. */
static __always_inline __u64 wait_site(void *ctx)
{
	__u32 at = site_words;
	if (!at || at >= SITE_WORDS || !sites_told)
		return 0;
	__u64 site = 0;
	bpf_probe_read_kernel(&site, sizeof(site), (void *)(ctx_addr(ctx) + at * sizeof(__u64)));
	for (int i = 0; i < GENERIC_SITES; i++) {
		if (site >= generic_sites[2 * i] && site < generic_sites[2 * i + 1])
			return 0;
	}
	return site;
}

/* One word of the raw stack (bpf_loop's step, verified once): after the
 * word holding ips[k] (the return into schedule), the first holding
 * ips[k + 1] (schedule's, into its caller). */
struct site_scan {
	int first;
	int at;
};
static long site_step(__u32 i, struct site_scan *c)
{
	__u32 zero = 0;
	struct site_scratch *sc = bpf_map_lookup_elem(&site_scratch, &zero);
	if (!sc)
		return 1;
	__u64 w = sc->raw[i & (SITE_WORDS - 1)];   /* i < SITE_WORDS, a power of two */
	if (c->first < 0) {
		if (w == sc->ips[sc->k & 7])
			c->first = i;
	} else if (w == sc->ips[(sc->k + 1) & 7]) {
		c->at = i;
		return 1;
	}
	return 0;
}

/* Reads the raw stack above sc->at and finds schedule()'s return address
 * in it (site_step). Two waits must agree: a stale copy of a return
 * address left in a frame below the real one would be found first. A
 * global function: verified once. */
__noinline int find_site(struct site_scratch *sc)
{
	if (!sc || !sc->ips[sc->k & 7] || !sc->ips[(sc->k + 1) & 7])
		return 0;
	if (bpf_probe_read_kernel(sc->raw, sizeof(sc->raw), (void *)sc->at))
		return 0;
	struct site_scan c = { .first = -1, .at = 0 };
	bpf_loop(SITE_WORDS, site_step, &c, 0);
	if (c.at > 0 && c.at == site_guess)
		site_words = c.at;
	else if (c.at > 0)
		site_guess = c.at;
	return 0;
}

/* Learns site_words from the current wait: unwinds eight frames, then
 * find_site. */
static __always_inline void learn_site(void *ctx)
{
	__u32 zero = 0;
	struct site_scratch *sc = bpf_map_lookup_elem(&site_scratch, &zero);
	if (!sc || !sites_told)
		return;
	__builtin_memset(sc->ips, 0, sizeof(sc->ips));
	if (bpf_get_stack(ctx, sc->ips, sizeof(sc->ips), STACK_SKIP) < 3 * (long)sizeof(__u64))
		return;
	sc->k = 1;
	if (schedule_range[1]) {
		sc->k = 8;
		for (int i = 0; i < 6; i++) {
			if (sc->ips[i] >= schedule_range[0] && sc->ips[i] < schedule_range[1]) {
				sc->k = i;
				break;
			}
		}
		if (sc->k == 8)
			return; /* not a wait in schedule(): nothing to learn from it */
	}
	sc->at = ctx_addr(ctx);
	find_site(sc);
}

/* A wait's site, in a syscall, at a time; and the stack taken there. */
struct site_query {
	__u64 site;
	__u64 now;
	__s64 nr;
	__s32 stack_id;
	__u32 _pad;
};

/* The stack the current thread took at q's site in its syscall, in
 * reclaim or not alike, within SITE_REUSE_NS; -1 if none. A global
 * function: its entries' loop is verified once, not on each path of
 * sched_switch that reaches a wait. */
__noinline int site_stack(struct site_query *q)
{
	if (!q)
		return -1;
	struct thread_state *ts = thread_state(false);
	if (!ts)
		return -1;
	__u32 memalloc = bpf_get_current_task_btf()->flags & PF_MEMALLOC;
	for (int i = 0; i < WAIT_SITES; i++) {
		struct wait_site *e = &ts->sites[i];
		if (e->site == q->site && e->nr == q->nr && e->memalloc == memalloc && q->now - e->ts < SITE_REUSE_NS)
			return e->stack_id;
	}
	return -1;
}

/* Keeps q's stack for the thread's next waits at its site. */
__noinline int keep_site(struct site_query *q)
{
	if (!q)
		return 0;
	struct thread_state *ts = thread_state(true);
	if (!ts)
		return 0;
	struct wait_site *w = &ts->sites[ts->site_next & (WAIT_SITES - 1)];
	w->site = q->site;
	w->ts = q->now;
	w->nr = q->nr;
	w->stack_id = q->stack_id;
	w->memalloc = bpf_get_current_task_btf()->flags & PF_MEMALLOC;
	ts->site_next++;
	return 0;
}

/* The kernel stack of a wait, or -1. Unwinding is most of a context
 * switch's cost (~3 µs), so it is spent where the stack tells the reason:
 * - an interruptible wait (futex, poll, pipe, socket, sleep, flock, wait4)
 *   is told by its syscall and file kind: no stack;
 * - a sync call is "sync" whatever it waits on, and waits a dozen times a
 *   call (each buffer, each page): its stack is taken once per 10 ms per
 *   thread, and reused for the waits between (an fsync loop ran 5% slower);
 * - other uninterruptible waits (disk, journal, page and inode locks,
 *   throttling look alike from the syscall) get theirs, reused for the
 *   thread's waits at the same site in the same call (wait_site).
 * all_stacks (--full) takes every one. */
#define SYNC_STACK_REUSE_NS 10000000ULL
static __always_inline __s32 wait_stack(void *ctx, __u32 state, long nr, __u64 now)
{
	if (state != 'D' && !all_stacks)
		return -1;
	struct thread_state *ts = NULL;
	bool sync = syscall_class(nr) == CLS_SYNC && !all_stacks;
	struct site_query q = {};
	if (sync) {
		ts = thread_state(true);
		if (ts && ts->stack_nr == nr && now - ts->stack_ts < SYNC_STACK_REUSE_NS)
			return ts->stack_id;
	} else if (!all_stacks) {
		q.site = wait_site(ctx);
		q.now = now;
		q.nr = nr;
		if (q.site) {
			__s32 reused = site_stack(&q);
			if (reused >= 0)
				return reused;
		}
	}
	__s32 id = stack_id_of(ctx);
	if (id < 0 && id != -EFAULT /* no stack */)
		count_lost(LOST_STACK);
	if (id < 0)
		return id;
	if (ts) {
		ts->stack_nr = nr;
		ts->stack_ts = now;
		ts->stack_id = id;
	} else if (q.site) {
		q.stack_id = id;
		keep_site(&q);
	} else if (!sync && !all_stacks && !site_words && site_tries < SITE_TRIES) {
		site_tries++;
		learn_site(ctx);
	}
	return id;
}

/* Ends a target thread's on-CPU stretch in its slot, as it switches out.
 * Its CPU time is the kernel's (se.sum_exec_runtime, brought up to date
 * before this tracepoint), not a difference of our own stamps: exact even
 * when a switch of it was missed, and without the time its CPU was stolen
 * by the hypervisor, as rusage and /proc count it. */
static __always_inline void close_oncpu(struct task_struct *p, struct wait_slot *slot)
{
	if (slot->cpu.on_since) {
		slot->cpu.oncpu_ns = CAST(struct task_struct, p)->se.sum_exec_runtime - slot->cpu.exec_base;
		slot->cpu.on_since = 0;
	}
}

/* Starts a target thread's on-CPU stretch in its slot, as it switches in:
 * its CPU time goes on from what the slot counted so far. */
static __always_inline void open_oncpu(struct task_struct *p, struct wait_slot *slot, __u64 now)
{
	__u64 exec = CAST(struct task_struct, p)->se.sum_exec_runtime;
	if (slot->cpu.on_since)
		slot->cpu.oncpu_ns = exec - slot->cpu.exec_base; /* its switch-out was missed: its time was not */
	/* Modulo 2^64: a thread id's new life (its CPU time from 0) goes on
	 * from what its last life counted, the base then "below zero". */
	slot->cpu.exec_base = exec - slot->cpu.oncpu_ns;
	slot->cpu.on_since = now;
}

/* A thread attached to while it ran: /proc showed it runnable, and user
 * space noted it in waiting_at_start as it notes a sleeper, but its first
 * switch seen is this switch-out, not a switch-in. It ran since then: its
 * on-CPU time counts from when it was noted, and no wait of it began before
 * capture. Asked only at a thread's first switch-out (no switch-in seen:
 * its slot's cpu.pid is 0), so once per thread. */
static __always_inline struct wait_slot *ran_since_attach(struct task_struct *p, __u32 tgid, __u32 tid,
							   struct wait_slot *slot)
{
	__u64 *since = bpf_map_lookup_elem(&waiting_at_start, &tid);
	if (!since)
		return slot;
	if (!slot) {
		/* made meanwhile by another CPU (a wakeup) if it fails: found all the same */
		bpf_map_update_elem(&offcpu_start, &tid, &empty_slot, BPF_NOEXIST);
		slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	}
	if (slot) {
		slot->cpu.pid = tgid;
		slot->cpu.gone = 0;
		slot->cpu.life = CAST(struct task_struct, p)->start_time;
		slot->cpu.life_base = slot->cpu.oncpu_ns;
		/* it ran all along since it was noted */
		__u64 exec = CAST(struct task_struct, p)->se.sum_exec_runtime, ran = bpf_ktime_get_ns() - *since;
		slot->cpu.exec_base = exec > ran ? exec - ran : 0;
		slot->cpu.on_since = *since;
		task_comm(p, slot->cpu.comm);
	}
	bpf_map_delete_elem(&waiting_at_start, &tid);
	return slot;
}

/* A target thread's wait opens at its switch-out and closes at its
 * switch-in. Its entry in offcpu_start stays between waits, closed (ts 0),
 * until the thread dies: rewritten in place, a wait costs one lookup at
 * each end instead of an update (bucket lock, an element from the free
 * list) and a delete (lock, back to the free list): ~280 ns a wait. Only
 * the thread's own switches write its entry, one after the other. */
static __always_inline void open_wait(__u32 tid, struct offstart *s, struct wait_slot *o)
{
	if (!o) {
		/* If it fails, another CPU made it meanwhile (a wakeup of this
		 * thread): found all the same. Not found: the map is full. */
		bpf_map_update_elem(&offcpu_start, &tid, &empty_slot, BPF_NOEXIST);
		o = bpf_map_lookup_elem(&offcpu_start, &tid);
		if (!o) {
			count_lost(LOST_OFFCPU);   /* full: more live threads than entries (system-wide) */
			return;
		}
	}
	o->w = *s;
}

/* Takes out a slot no one needs any more (a peer's, another process's sync),
 * and says whether it was there. One that holds a target thread's CPU time
 * stays, its wait cleared: a thread id of a target's thread that died is
 * soon another process's, a peer's or a sync's, before user space has read
 * the dead thread's last CPU time (drain.go retireSlot takes it out then). */
static __always_inline bool drop_slot(__u32 tid, struct wait_slot *o)
{
	if (o->cpu.pid) {
		struct offstart none = {};
		o->w = none;
		return true;
	}
	return bpf_map_delete_elem(&offcpu_start, &tid) == 0;
}

/* Closes the wait open in entry o (NULL: none, or one begun before
 * capture). Another process's sync found open when it became a target is
 * deleted, as other waits are, so that its entry is never reused as one. */
static __always_inline void close_wait(__u32 tid, struct wait_slot *o)
{
	if (!o)
		return;
	if (o->w.other)
		drop_slot(tid, o);
	else
		o->w.ts = 0;
}

/* Sends the wait s of task next (tgid, tid), ended now, woken as its slot
 * says (NULL: no waker known). A target's and a peer's alike; a peer's calls
 * are not hooked, so its wait carries its call at every level. */
static __always_inline void send_offcpu(struct task_struct *next, __u32 tgid, __u32 tid, struct offstart *s,
					struct wait_slot *slot, __u64 now)
{
	struct offcpu_event *e = reserve_event(sizeof(*e), LOST_OFFCPU);
	if (!e)
		return;
	fill_offcpu(e, next, tgid, tid, s, slot, now);
	submit_event(e);
}

/* Ends the open wait of task next in its slot at now: into the thread's run
 * if it is short and not uninterruptible, else sent on its own after the
 * run. The slot's wait is closed. */
static __always_inline void end_wait(struct task_struct *next, __u32 tgid, __u32 tid, struct wait_slot *slot,
				     __u64 now)
{
	struct offstart *s = &slot->w;
	if (now - s->ts < run_below_ns && s->state != 'D' && !s->other) {
		if (check_runs) {
			struct offcpu_event *e = reserve_event(sizeof(*e), LOST_OFFCPU);
			if (e) {
				fill_offcpu(e, next, tgid, tid, s, slot, now);
				e->waits = 0;
				submit_event(e);
			}
		}
		add_to_run(next, tgid, tid, slot, s, now);
	} else {
		flush_run(slot);
		send_offcpu(next, tgid, tid, s, slot, now);
	}
	close_wait(tid, slot);
}

/* Some kernels do not report every switch (seen: a guest kernel whose init's
 * threads never appear as sched_switch's prev, and a busy thread whose
 * switch-in was not reported). The kernel's own CPU account tells where
 * the missing switch was: a thread's CPU time grows only while it runs.
 * Each one is counted (LOST_UNSEEN_WAIT), and its wait rebuilt from it. */

/* A followed thread's CPU time since the slot last counted it (at its last
 * switch seen): it ran that long since, whatever switches were missed. */
static __always_inline __u64 ran_since_counted(struct task_struct *p, struct wait_slot *slot)
{
	__u64 exec = CAST(struct task_struct, p)->se.sum_exec_runtime;
	__u64 counted = slot->cpu.exec_base + slot->cpu.oncpu_ns;
	return exec > counted ? exec - counted : 0;
}

/* A target's switch-out found its last wait still open: the switch-in that
 * ended it was not seen. It ran since as long as its CPU time grew since its
 * last switch-out, so it was back on a CPU that long before now. */
static __always_inline void missed_switch_in(struct task_struct *p, __u32 tgid, __u32 tid, struct wait_slot *slot,
					     __u64 now)
{
	count_lost(LOST_UNSEEN_WAIT);
	if (!slot->cpu.pid) {
		close_wait(tid, slot); /* no CPU account to rebuild it from */
		return;
	}
	__u64 ran = ran_since_counted(p, slot);
	__u64 back = now - slot->w.ts > ran ? now - ran : slot->w.ts;
	slot->cpu.oncpu_ns += ran;
	flush_run(slot);
	send_offcpu(p, tgid, tid, &slot->w, slot, back);
	close_wait(tid, slot);
}

/* A followed target's switch-in found no wait open: the switch-out that
 * began it was not seen. It ran from its last switch-in as long as its CPU
 * time grew since, then waited until now. */
static __always_inline void missed_switch_out(struct task_struct *p, __u32 tgid, __u32 tid, struct wait_slot *slot,
					      __u64 now)
{
	count_lost(LOST_UNSEEN_WAIT);
	if (!slot->cpu.on_since)
		return;
	__u64 ran = ran_since_counted(p, slot);
	if (slot->cpu.on_since + ran >= now)
		return;
	struct offstart lost = {};
	lost.ts = slot->cpu.on_since + ran;
	lost.pid = tgid;
	lost.state = '?';
	lost.stack_id = -1;
	lost.syscall = -1;
	lost.fd = -1;
	woke_unopened(slot, &lost);
	send_offcpu(p, tgid, tid, &lost, slot, now);
}

/* A peer's switch-in ends its wait: the one opened at its switch-out, or,
 * for a process that has just become a peer, the one opened from the
 * kernel's stamps when it did (open_peer_wait). */
static __always_inline int peer_switch_in(struct task_struct *next, __u32 tgid, __u32 tid, __u64 now)
{
	struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (slot && slot->w.ts)
		end_wait(next, tgid, tid, slot, now);
	return 0;
}

static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	struct task_struct *pv = CAST(struct task_struct, prev), *nx = CAST(struct task_struct, next);
	/* Recording a command, a kernel thread (the idle task too) is never a
	 * peer or another process's sync, and a target only if attached to:
	 * a switch from one to another that is neither notes nothing. Most
	 * switches around an I/O-bound target are theirs (the loop device's
	 * worker, the block softirq, the journal: seven of an fsync loop's
	 * eleven a commit). */
	if (!system_wide && (pv->flags & PF_KTHREAD) && (nx->flags & PF_KTHREAD) &&
	    !maybe_followed(pv->tgid) && !maybe_followed(nx->tgid))
		return 0;
	__u32 prev_tgid = pv->tgid, prev_tid = pv->pid;
	__u32 next_tgid = nx->tgid, next_tid = nx->pid;

	/* Each side's target test is one hash lookup, made once: this runs at
	 * every context switch of the machine. The next side's is made once the
	 * prev side is done: the verifier then checks the prev side once, not
	 * once for each kind of next task (25.5k -> 11.6k insns). */
	__u8 prev_kind = prev_tid ? task_kind(prev_tgid) : KIND_NONE;
	bool prev_target = prev_kind == KIND_TARGET, prev_peer = prev_kind >= KIND_PEER;
	/* The clock only where something is timed: a task outside the capture
	 * is not stamped at its switches (peers.bpf.h, wake_recent). */
	__u64 now = prev_target || prev_peer || other_syncs_open ? bpf_ktime_get_ns() : 0;
	/* __schedule() has just brought the run queue's clock up to date: the
	 * offset that dates outside tasks' waits is measured here. */
	if (follow_peers && (now || !prev_tid)) {
		if (!now)
			now = bpf_ktime_get_ns();
		note_rq_offset(now, this_rq_clock());
	}

	/* A dying task's last switch is no wait: it never runs again. A
	 * target's slot stays for user space's last read of its on-CPU time. */
	bool dead = (prev_state & 0x80) || pv->exit_state;
	/* A target's slot, looked up once for both of its branches below. */
	struct wait_slot *pslot = prev_target ? bpf_map_lookup_elem(&offcpu_start, &prev_tid) : NULL;
	if (pslot && pslot->w.ts && !pslot->w.other)
		missed_switch_in(pv, prev_tgid, prev_tid, pslot, now);
	if (prev_tid && dead) {
		struct wait_slot *o = prev_target ? pslot : bpf_map_lookup_elem(&offcpu_start, &prev_tid);
		if (o) {
			bool other = o->w.other;
			flush_run(o);
			if (prev_target && !other) {
				close_oncpu(pv, o);
				o->w.ts = 0;
				o->cpu.gone = 1;
			} else if (drop_slot(prev_tid, o) && other) {
				__sync_fetch_and_add(&other_syncs_open, -1);
			}
		}
	}
	if ((prev_target || prev_peer) && !dead) {
		struct wait_slot *slot = prev_target ? pslot : bpf_map_lookup_elem(&offcpu_start, &prev_tid);
		if (prev_target && (!slot || !slot->cpu.pid))
			slot = ran_since_attach(pv, prev_tgid, prev_tid, slot);
		if (slot && prev_target)
			close_oncpu(pv, slot);
		struct offstart s = {};
		s.ts = now;
		s.pid = prev_tgid;
		s.state = state_char(preempt, prev_state);
		s.syscall = -1;
		s.stack_id = -1;
		s.peer = prev_peer;
		s.quota = s.state == 'R' && cpu_quota_throttled(pv);
		if (s.state != 'R') {
			/* prev is current here; a peer's calls are not hooked */
			struct inflight *in = syscall_hooks && prev_target ? current_call() : NULL;
			if (pv->flags & PF_IO_WORKER) {
				uring_wait(&s);
			} else if (in) {
				in->blocked = 1;
				s.syscall = in->nr;
				s.f.kind = in->f.kind;
			} else {
				struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
				s.syscall = regs->orig_ax;
				if (!syscall_hooks || prev_peer)
					wait_syscall(&s);
			}
			s.stack_id = wait_stack(ctx, s.state, s.syscall, now);
		}
		open_wait(prev_tid, &s, slot);
	}
	if (!prev_target && !prev_peer && !syscall_hooks && prev_tid && !dead && prev_tgid != self_pid && pv->mm &&
		   state_char(preempt, prev_state) != 'R') {
		/* Another process's sync: how others hurt the target. */
		struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
		long nr = regs->orig_ax;
		if (syscall_class(nr) == CLS_SYNC) {
			struct offstart s = {};
			if (!now)
				now = bpf_ktime_get_ns();
			s.ts = now;
			s.pid = prev_tgid;
			s.syscall = nr;
			s.other = 1;
			wait_syscall(&s);
			struct wait_slot *o = bpf_map_lookup_elem(&offcpu_start, &prev_tid);
			if (!o) {
				/* made meanwhile by another CPU (a wakeup) if it fails: found all the same */
				bpf_map_update_elem(&offcpu_start, &prev_tid, &empty_slot, BPF_NOEXIST);
				o = bpf_map_lookup_elem(&offcpu_start, &prev_tid);
			}
			if (o) {
				o->w = s;
				__sync_fetch_and_add(&other_syncs_open, 1);
			}
		}
	}

	__u8 next_kind = next_tid ? task_kind(next_tgid) : KIND_NONE;
	bool next_target = next_kind == KIND_TARGET, next_peer = next_kind >= KIND_PEER;
	if (!now && (next_target || next_peer))
		now = bpf_ktime_get_ns();
	if (!syscall_hooks && next_tid && !next_target && !next_peer) {
		if (!other_syncs_open)
			return 0;
		struct wait_slot *o = bpf_map_lookup_elem(&offcpu_start, &next_tid);
		if (o && o->w.other) {
			if (!now)   /* opened on another CPU since it was read above */
				now = bpf_ktime_get_ns();
			emit_wait(nx, next_tgid, next_tid, &o->w, now);
			if (drop_slot(next_tid, o))
				__sync_fetch_and_add(&other_syncs_open, -1);
		}
		return 0;
	}
	if (next_peer && !next_target)
		return peer_switch_in(next, next_tgid, next_tid, now);
	if (next_target) {
		struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &next_tid);
		/* followed: this thread ran as a target before, so its last
		 * switch-out opened a wait that this switch-in closes */
		__u64 life = nx->start_time;
		bool followed = slot && slot->cpu.pid == next_tgid && slot->cpu.life == life && !slot->cpu.gone &&
				!slot->w.other;
		if (!slot) {
			/* made meanwhile by another CPU (a wakeup) if it fails: found all the same */
			bpf_map_update_elem(&offcpu_start, &next_tid, &empty_slot, BPF_NOEXIST);
			slot = bpf_map_lookup_elem(&offcpu_start, &next_tid);
		}
		if (slot) {
			/* A new thread, or a tid reused before user space took the
			 * last one's slot out: its time goes on from the last life's
			 * count, which is kept with whose it was, for user space to
			 * report what that life ran since it last read the slot.
			 * The last life's stretch on a CPU, if its dying switch was
			 * not seen, is unknown and ends at its last switch-in. */
			if (slot->cpu.pid != next_tgid || slot->cpu.gone || slot->cpu.life != life) {
				slot->cpu.life_base = slot->cpu.oncpu_ns;
				slot->cpu.before_pid = slot->cpu.pid;
				__builtin_memcpy(slot->cpu.before_comm, slot->cpu.comm, sizeof(slot->cpu.comm));
				slot->cpu.pid = next_tgid;
				slot->cpu.gone = 0;
				slot->cpu.life = life;
				slot->cpu.on_since = 0;
				task_comm(next, slot->cpu.comm);
			} else if (followed && !slot->w.ts && !bpf_map_lookup_elem(&waiting_at_start, &next_tid)) {
				missed_switch_out(next, next_tgid, next_tid, slot, now);
			}
			open_oncpu(nx, slot, now);
		}
		if (slot && slot->w.ts) {
			end_wait(next, next_tgid, next_tid, slot, now);
			return 0;
		}
		/* No switch-out seen: a wait begun before capture, if user space
		 * found the thread waiting when it attached (for a thread followed
		 * before: missed_switch_out, above). */
		__u64 *since = bpf_map_lookup_elem(&waiting_at_start, &next_tid);
		if (!since)
			return 0;
		struct offstart before = {};
		before.ts = *since;
		before.pid = next_tgid;
		before.state = '?';
		before.stack_id = STACK_BEFORE_CAPTURE;
		before.syscall = -1;
		bpf_map_delete_elem(&waiting_at_start, &next_tid);
		woke_unopened(slot, &before);
		send_offcpu(next, next_tgid, next_tid, &before, slot, now);
		close_wait(next_tid, slot);
	}
	return 0;
}

#endif
