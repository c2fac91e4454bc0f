/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The scheduler's own stamps: a task's time queued for a CPU as the kernel
 * counts it, read at its switch-in instead of a clock read at its wakeup. Included by
 * whyslow.bpf.c, after its maps and settings: one object, split along its
 * sections. */
#ifndef WHYSLOW_CLOCK_BPF_H
#define WHYSLOW_CLOCK_BPF_H

/* ---- why a switch still reads the clock ----
 *
 * The run queue's clock (rq->clock), brought up to date by __schedule()
 * before this tracepoint, would spare the switch its bpf_ktime_get_ns()
 * (~60 ns of a watched switch's ~370 here: BENCHMARKS.md, 9). It is not
 * always up to date: a wakeup that preempts the running task asks the next
 * __schedule() to skip the update (wakeup_preempt), and measured against
 * bpf_ktime_get_ns() at every switch it ran up to 3.8 ms behind (a CPU
 * quota's throttled thread, 100 of 17,000 switches 20 µs or more behind),
 * which put whole milliseconds of waits on the CPU. So the switch reads the
 * clock; the wakeup, which need not, does not. */

/* Whether this kernel keeps the stamps read here: decided when the program
 * is loaded (CO-RE), a constant to the verifier. */
static __always_inline bool kernel_stamps(void)
{
	return bpf_core_field_exists(struct cfs_rq, rq) && bpf_core_field_exists(struct task_struct, sched_info);
}

/* The clock of the run queue task t is on: its CPU's, through the cfs_rq
 * its scheduling entity is queued on (set for tasks of every class). As
 * behind as the kernel's own account of the run delay, which reads it
 * too. */
static __always_inline __u64 rq_clock_of(struct task_struct *t)
{
	struct cfs_rq *cfs = CAST(struct task_struct, t)->se.cfs_rq;
	return CAST(struct rq, CAST(struct cfs_rq, cfs)->rq)->clock;
}

/* ---- a wakeup's wait for a CPU ----
 *
 * The wakeup notes the task's run delay so far (sched_info.run_delay: its
 * time queued on run queues, as /proc/PID/schedstat shows it); its switch-in
 * adds what it waited since: the delay grown meanwhile (queued on another
 * CPU first, then moved) and the time since it was queued on this CPU
 * (sched_info.last_queued, which the kernel clears only after this
 * tracepoint). No clock is read at the wakeup, but where the kernel queued
 * the task while it slept (note_run_delay). This is the kernel's own
 * account, with its two limits: the time from the wakeup to the queueing
 * (an idle CPU's interrupt, a halted virtual CPU woken) is not in it, and
 * where a preempting wakeup left the run queue's clock behind (above), the
 * time queued is short by as much. Reading the clock's offset at every
 * switch to correct the latter cost the switch what the wakeup saved. */
static __always_inline void note_run_delay(struct waker *w, struct task_struct *p)
{
	if (kernel_stamps()) {
		struct task_struct *t = CAST(struct task_struct, p);
		w->run_delay = t->sched_info.run_delay;
		/* Queued while it slept: a sleeper whose dequeue the scheduler
		 * delayed (EEVDF's DELAY_DEQUEUE) stays on its run queue, and
		 * moved to another CPU it is queued there, last_queued set,
		 * seconds before its wakeup (seen: a select() of 1.5 s counted
		 * 1.47 s waiting for a CPU). Then the wakeup reads the clock. */
		w->queued = t->sched_info.last_queued;
		if (w->queued)
			w->ts = bpf_ktime_get_ns();
	} else {
		w->ts = bpf_ktime_get_ns();
	}
}

/* How long task t, switching in at now, waited for a CPU since the wakeup
 * w: no longer than its wait, off (the run queue's clock and the switch's
 * are read apart). */
static __always_inline __u64 queued_since(struct task_struct *t, struct waker *w, __u64 now, __u64 off)
{
	__u64 q;
	if (!kernel_stamps()) {
		q = now > w->ts ? now - w->ts : 0;
	} else {
		struct task_struct *tt = CAST(struct task_struct, t);
		q = tt->sched_info.run_delay - w->run_delay;
		__u64 queued = tt->sched_info.last_queued;
		if (queued && queued == w->queued) {
			q += now > w->ts ? now - w->ts : 0; /* queued before its wakeup: from the wakeup */
		} else if (queued) {
			__u64 rq = rq_clock_of(t);
			if (rq > queued)
				q += rq - queued;
		}
	}
	return q < off ? q : off;
}

/* ---- when a sleeper went to sleep, from the kernel's stamps ----
 *
 * A task outside the capture is not stamped at its switches (no clock read,
 * no storage: most switches of a busy machine are theirs). When one is
 * woken, the scheduler still knows when its wait began: it last came onto
 * a CPU at sched_info.last_arrival (the run queue's clock), and ran from
 * then for as long as its CPU time grew since it was picked
 * (se.sum_exec_runtime - se.prev_sum_exec_runtime, both of the fair class;
 * a real-time task's wait counts from its arrival). Only the wakeup reads
 * them; se.prev_sum_exec_runtime is written again once it is picked. */

/* The current CPU's run-queue clock, through the running task's cfs_rq (a
 * per-CPU variable's address is no ksym cilium/ebpf resolves): as of its
 * last update, at most a tick behind while a task runs on it. */
static __always_inline __u64 this_rq_clock(void)
{
	return rq_clock_of(bpf_get_current_task_btf());
}

/* When sleeping task t's wait began, in the run queue's clock; 0 unknown. */
static __always_inline __u64 sleep_began(struct task_struct *t)
{
	if (!kernel_stamps())
		return 0;
	struct task_struct *p = CAST(struct task_struct, t);
	__u64 arrived = p->sched_info.last_arrival;
	if (!arrived || p->prio < 100 /* real-time or deadline: no prev_sum_exec_runtime */)
		return arrived;
	__u64 ran = p->se.sum_exec_runtime - p->se.prev_sum_exec_runtime;
	return ran < 10000000000ULL ? arrived + ran : arrived;
}

/* CLOCK_MONOTONIC less the run queue's clock: both count the same
 * nanoseconds (sched_clock and the clocksource), apart by a constant that
 * NTP's corrections move by microseconds a second. Measured at a switch,
 * where __schedule() has just brought the run queue's clock up to date
 * (unless a preempting wakeup asked it to skip that: then the measure is too
 * big), so the least measure of the last second or two is kept: at every
 * target's switch, which reads the clock anyway, and at most once a tick
 * on each CPU at other switches. Not at a wakeup: an idle CPU's clock is as
 * old as its idleness. Racing CPUs may lose a measure; another comes. */
__s64 rq_offset_least[2] = {};
__u64 rq_offset_epoch[2] = {};
#define RQ_EPOCH_SHIFT 30

/* now less rq_clock, which may be the greater (sched_clock began first). */
static __always_inline void note_rq_offset(__u64 now, __u64 rq_clock)
{
	if (!rq_clock)
		return;
	__s64 off = (__s64)(now - rq_clock);
	__u64 epoch = now >> RQ_EPOCH_SHIFT;
	__u32 i = epoch & 1;
	if (rq_offset_epoch[i] != epoch) {
		rq_offset_epoch[i] = epoch;
		rq_offset_least[i] = off;
	} else if (off < rq_offset_least[i]) {
		rq_offset_least[i] = off;
	}
}

/* The least offset measured in the last second or two (at now, a
 * CLOCK_MONOTONIC time) in *off; false if none. */
static __always_inline bool rq_offset(__u64 now, __s64 *off)
{
	__u64 epoch = now >> RQ_EPOCH_SHIFT;
	bool known = false;
	for (int i = 0; i < 2; i++) {
		if ((rq_offset_epoch[i] == epoch || rq_offset_epoch[i] + 1 == epoch) && (!known || rq_offset_least[i] < *off)) {
			*off = rq_offset_least[i];
			known = true;
		}
	}
	return known;
}

#endif
