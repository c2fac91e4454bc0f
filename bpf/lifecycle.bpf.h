/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Process lifecycle: fork, exec, exit, thread names. Included by
 * whyslow.bpf.c, after its maps and settings: one object, split along its
 * sections. */
#ifndef WHYSLOW_LIFECYCLE_BPF_H
#define WHYSLOW_LIFECYCLE_BPF_H

/* ---- process lifecycle ---- */

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid), ctid = BPF_CORE_READ(child, pid);
	if (ptgid == self_pid)
		return 0;
	if (!system_wide && cpid == ctid && is_target(ptgid)) {
		__u8 one = 1;
		add_target_slot(cpid);
		if (bpf_map_update_elem(&targets, &cpid, &one, BPF_ANY))
			count_lost(LOST_META);
	}
	/* Threads are reported for targets only; processes for everyone, so that
	 * short-lived ones (sync, find) have a name and a parent. */
	if (cpid != ctid && !is_target(ptgid))
		return 0;
	struct fork_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_FORK);
	e->child_pid = cpid;
	e->child_tid = ctid;
	submit_meta(e);
	return 0;
}

/* A target's new task, at its first wakeup (wake_up_new_task):
 *   - it waits for its first CPU from now: a wait its first switch-in ends
 *     (runqueue), as any other, so no time of its life goes unaccounted;
 *   - an io_uring worker is made by copy_process alone (create_io_thread),
 *     with no sched_process_fork: its birth is said here, as a thread of its
 *     process's own, so that no analysis takes it as alive, and busy,
 *     before it existed. */
static __always_inline void on_new_task(struct task_struct *p)
{
	struct task_struct *t = CAST(struct task_struct, p);
	__u32 tgid = t->tgid, tid = t->pid;
	if (!is_target(tgid))
		return;
	if (t->flags & PF_IO_WORKER) {
		struct fork_event *e = reserve_meta(sizeof(*e), LOST_META);
		if (e) {
			fill_hdr(&e->h, EV_FORK);
			e->child_pid = tgid;
			e->child_tid = tid;
			submit_meta(e);
		}
	}
	struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!slot) {
		/* made meanwhile by another CPU (a wakeup) if it fails: found all the same */
		bpf_map_update_elem(&offcpu_start, &tid, &empty_slot, BPF_NOEXIST);
		slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	}
	if (!slot || slot->w.ts)
		return;
	struct offstart first = {};
	first.ts = bpf_ktime_get_ns();
	first.pid = tgid;
	first.state = 'R';
	first.stack_id = -1;
	first.syscall = -1;
	first.fd = -1;
	slot->w = first;
}

static __always_inline int on_exec(struct task_struct *p, struct linux_binprm *bprm)
{
	if (BPF_CORE_READ(p, tgid) == self_pid)
		return 0;
	struct exec_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_EXEC);
	/* the thread keeps its on-CPU account under its new name */
	struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &e->h.tid);
	if (slot && slot->cpu.pid)
		__builtin_memcpy(slot->cpu.comm, e->h.comm, sizeof(slot->cpu.comm));
	e->ppid = BPF_CORE_READ(p, real_parent, tgid);
	const char *fn = BPF_CORE_READ(bprm, filename);
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), fn);
	unsigned long start = BPF_CORE_READ(p, mm, arg_start), end = BPF_CORE_READ(p, mm, arg_end);
	unsigned long len = end - start;
	if (len > EXEC_ARGS_LEN)
		len = EXEC_ARGS_LEN;
	e->args_len = 0;
	if (bpf_probe_read_user(e->args, len, (void *)start) == 0)
		e->args_len = len;
	submit_meta(e);
	return 0;
}

/* The thread's I/O accounting; fields a kernel was built without
 * (CONFIG_TASK_XACCT, CONFIG_TASK_IO_ACCOUNTING) read as 0. */
static __always_inline void task_io_of(struct task_struct *p, struct task_io *io)
{
	__builtin_memset(io, 0, sizeof(*io));
	if (bpf_core_field_exists(p->ioac.rchar)) {
		io->rchar = BPF_CORE_READ(p, ioac.rchar);
		io->wchar = BPF_CORE_READ(p, ioac.wchar);
		io->syscr = BPF_CORE_READ(p, ioac.syscr);
		io->syscw = BPF_CORE_READ(p, ioac.syscw);
	}
	if (bpf_core_field_exists(p->ioac.read_bytes)) {
		io->read_bytes = BPF_CORE_READ(p, ioac.read_bytes);
		io->write_bytes = BPF_CORE_READ(p, ioac.write_bytes);
		io->cancelled_write_bytes = BPF_CORE_READ(p, ioac.cancelled_write_bytes);
	}
}

static __always_inline int on_exit(struct task_struct *p, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	if (tgid == self_pid)
		return 0;
	if (tgid != tid && !is_target(tgid))
		return 0;
	struct exit_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_EXIT);
	e->code = BPF_CORE_READ(p, exit_code);
	e->group_dead = group_dead;
	task_io_of(p, &e->io);
	submit_meta(e);
	return 0;
}

#endif
