/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* CPU samples at the local timer interrupt. Included by whyslow.bpf.c, after
 * its maps and settings: one object, split along its sections. */
#ifndef WHYSLOW_SAMPLE_BPF_H
#define WHYSLOW_SAMPLE_BPF_H

/* ---- CPU samples at the local timer interrupt ---- */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_event);
} sample_scratch SEC(".maps");

/* The jiffy of this CPU's last sample. The local timer interrupt fires at
 * each tick and at every high-resolution timer besides (a sleep's end, a
 * timerfd, a network stack's timer): three quarters of the interrupts on a
 * busy machine, each sample ~2 µs. One a tick is what the analyses need
 * (each sample stands for its thread's on-CPU time divided by its samples),
 * and jiffies counts ticks, whatever the kernel's HZ. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sampled_jiffy SEC(".maps");

static __always_inline int on_timer_exit(void)
{
	timer_irq(0);
	return 0;
}

/* The path argument of a call that names a file by path. */
static __always_inline unsigned long path_arg(long nr, struct pt_regs *rg)
{
	switch (nr) {
	case NR_open: case NR_creat: case NR_unlink: case NR_rmdir:
		return rg->di;
	case NR_openat: case NR_openat2: case NR_unlinkat:
		return rg->si;
	}
	return 0;
}

static __always_inline int on_tick(void *ctx)
{
	timer_irq(1);
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&sampled_jiffy, &zero);
	__u64 jiffy = bpf_jiffies64();
	if (!last || *last == jiffy)
		return 0;
	*last = jiffy;
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (!task->pid || !is_target(tgid))
		return 0;
	struct sample_event *e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_SAMPLE);
	/* Whether the interrupt came from user mode is not in the tracepoint's
	 * arguments (and per-CPU irq_regs is not reachable here): user space
	 * tells from the kernel stack, which ends at the interrupt's entry when
	 * the thread was in user mode. */
	e->user = 0;
	e->syscall = -1;
	e->fd = -1;
	__builtin_memset(&e->f, 0, sizeof(e->f));
	e->path[0] = 0;
	e->stack_id = stack_id_of(ctx);
	{
		struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(task));
		long nr = regs->orig_ax;
		e->syscall = nr;
		__u32 cls = syscall_class(nr);
		struct inflight in = {};
		if (cls && syscall_args(nr, regs, &in)) {
			e->fd = in.fd;
			unsigned long p = path_arg(nr, regs);
			if (p)
				bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)p);
			else if (in.fd >= 0)
				fd_ref_current(in.fd, &e->f);
		}
	}
	output_event(e, sizeof(*e), LOST_SAMPLE);
	return 0;
}

/* prctl(PR_SET_NAME) and friends: the thread's on-CPU account takes the new
 * name, so reports do not name it by the one it started with. */
static __always_inline int on_rename(struct task_struct *task, const char *comm)
{
	struct task_struct *t = CAST(struct task_struct, task);
	if (!is_target(t->tgid))
		return 0;
	__u32 tid = t->pid;
	struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (slot && slot->cpu.pid)
		bpf_probe_read_kernel_str(slot->cpu.comm, sizeof(slot->cpu.comm), comm);
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p, bool btf)
{
	struct task_struct *t = CAST(struct task_struct, p);
	__u32 tgid = t->tgid;
	__u8 kind = task_kind(tgid);
	/* Neither a target nor a user task whose history is kept (a kernel
	 * thread, most wakeups around an I/O-bound target): nothing to note. */
	if (kind == KIND_NONE && (!follow_peers || !t->mm || tgid == self_pid))
		return 0;
	if (kind == KIND_NONE) {
		/* Most wakeups of a busy machine: asked first whether the wait
		 * is worth noting at all, then who ended it. */
		__u32 waker_tgid = bpf_get_current_pid_tgid() >> 32;
		/* A target's request reaching a process outside: a peer from now
		 * (not the timer's wakeup in a target's interrupt), its wait
		 * opened from the kernel's stamps and ended, with this waker, at
		 * its switch-in. */
		if (waker_tgid != tgid && is_target(waker_tgid) && !waking_from_timer()) {
			if (!add_peer(tgid, 1) || !btf || !open_peer_wait(p, tgid, t->pid))
				return 0;
			kind = KIND_PEER;
		} else {
			if (btf)
				wake_recent(p, tgid, waker_tgid != self_pid || waking_from_timer()); /* its history (peers.bpf.h) */
			return 0;
		}
	}
	bool timer = waking_from_timer();
	__u64 id = timer ? 0 : bpf_get_current_pid_tgid();
	__u32 waker_tgid = id >> 32;
	__u32 tid = t->pid;
	/* Written in place in the thread's slot (sched.bpf.h): a hash update
	 * takes the bucket's lock and swaps elements through the free list, at
	 * every wakeup of a target (~200 ns of a 460 ns program). The reader,
	 * the wakee's switch-in, comes after this waking has finished. */
	struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!slot) {
		bpf_map_update_elem(&offcpu_start, &tid, &empty_slot, BPF_NOEXIST);
		slot = bpf_map_lookup_elem(&offcpu_start, &tid);
		if (!slot)
			return 0;
	}
	struct waker *w = &slot->wk;
	w->of = slot->w.ts ? slot->w.ts : WOKEN_UNOPENED;
	note_run_delay(w, p);
	w->pid = waker_tgid;
	w->tid = (__u32)id;
	if (id)
		current_comm(w->comm);
	else
		__builtin_memset(w->comm, 0, sizeof(w->comm));
	__builtin_memset(&w->sock, 0, sizeof(w->sock));
	w->sock.nr = timer ? WAKER_TIMER : -1;
	if (!id || waker_tgid == tgid || waker_tgid == self_pid || !user_task(bpf_get_current_task_btf()))
		return 0;
	/* Another process woke it: from which side of a socket (not asked of a
	 * wait on a pipe or a file, whose reason and peer the waker's socket
	 * does not change: the waker's fd table is a walk of cold memory), and,
	 * if it is new to the capture, it is a peer now, with the waits that
	 * led here. */
	__u32 wk = slot->w.ts ? slot->w.f.kind : FK_UNKNOWN;
	if (wk != FK_FIFO && wk != FK_REG)
		waker_socket(&w->sock);
	if (follow_peers && task_kind(waker_tgid) == KIND_NONE && add_peer(waker_tgid, hops_of(kind) + 1)) {
		__u64 now = bpf_ktime_get_ns();
		send_recent(slot->w.ts ? slot->w.ts : now - 1000000000ULL, now, hops_of(kind) + 1, btf);
	}
	return 0;
}

#endif
