/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The scheduler's own stamps: the run queue's clock at a context switch, and
 * a task's time queued for a CPU as the kernel counts it. Included by
 * whyslow.bpf.c, after its maps and settings: one object, split along its
 * sections. */
#ifndef WHYSLOW_CLOCK_BPF_H
#define WHYSLOW_CLOCK_BPF_H

/* ---- a context switch's time ----
 *
 * A switch is stamped with its run queue's clock (rq->clock: sched_clock()
 * as __schedule() brought it up to date, just before this tracepoint), not
 * with bpf_ktime_get_ns(): on a VM that reads the clock source through the
 * hypervisor's page, ~60 ns of a watched switch's ~370 (BENCHMARKS.md, 9).
 *
 * The run queue's clock has another origin than CLOCK_MONOTONIC, and NTP
 * slews only the latter: the difference (k) is measured again at a switch
 * once a millisecond of a CPU's clock has passed, a bpf_ktime_get_ns() read
 * then. A measure runs late by the time from the clock's update to the
 * tracepoint (picking the next task: 0.1-10 µs here), never early, so k is
 * the least measure of the last epoch (CLOCK_EPOCH_NS), and changes only
 * once an epoch, by NTP's slew over it (~1 µs at 10 ppm). One k for all
 * CPUs: a wait's two ends, stamped on two CPUs, are then both off by the
 * same, and its length exact (per-CPU k's measured apart gave waits of a
 * few µs negative lengths). That needs sched_clock() to be one clock across
 * the CPUs, which user space tells from the clock source (rq_clock_stamps:
 * tsc or kvm-clock; an unstable TSC is never the clock source). It is set
 * only where no syscall is hooked: a --full or --syscalls capture places
 * waits inside calls stamped by bpf_ktime_get_ns(), to the microsecond.
 * Kernels whose cfs_rq has no rq (built without group scheduling) or
 * without sched_info read bpf_ktime_get_ns() at each switch, as before. */
const volatile bool rq_clock_stamps = false;
#define CLOCK_REMEASURE_NS 1000000ULL
#define CLOCK_EPOCH_NS 100000000ULL

/* When this CPU last measured k, by its run queue's clock. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} clock_measured SEC(".maps");

/* k in use, the least measure of this epoch, and when the epoch began (by
 * the run queue's clock; 0: nothing measured yet). Differences modulo 2^64,
 * compared signed. Written by every CPU, a few times a millisecond: a race
 * loses a measure, never makes a stamp. */
__u64 clock_k = 0;
__u64 clock_k_next = 0;
__u64 clock_epoch = 0;

/* Whether this kernel keeps the stamps read here: decided when the program
 * is loaded (CO-RE), a constant to the verifier. */
static __always_inline bool kernel_stamps(void)
{
	return bpf_core_field_exists(struct cfs_rq, rq) && bpf_core_field_exists(struct task_struct, sched_info);
}

/* The clock of the run queue task t is on: its CPU's, through the cfs_rq
 * its scheduling entity is queued on (set for tasks of every class). */
static __always_inline __u64 rq_clock_of(struct task_struct *t)
{
	struct cfs_rq *cfs = CAST(struct task_struct, t)->se.cfs_rq;
	return CAST(struct rq, CAST(struct cfs_rq, cfs)->rq)->clock;
}

/* Measures k at the run queue's clock rq. */
static __always_inline void measure_clock(__u64 rq)
{
	__u64 m = bpf_ktime_get_ns() - rq;
	if (!clock_epoch) {
		clock_k = m;
		clock_k_next = m;
		clock_epoch = rq;
		return;
	}
	if ((__s64)(m - clock_k_next) < 0)
		clock_k_next = m;
	if (rq - clock_epoch > CLOCK_EPOCH_NS) {
		clock_k = clock_k_next;
		clock_k_next = m;
		clock_epoch = rq;
	}
}

/* The time of the context switch from prev to next, CLOCK_MONOTONIC. */
static __always_inline __u64 switch_time(struct task_struct *prev, struct task_struct *next)
{
	if (!rq_clock_stamps || !kernel_stamps())
		return bpf_ktime_get_ns();
	__u64 rq = rq_clock_of(prev);
	__u32 zero = 0;
	__u64 *at = bpf_map_lookup_elem(&clock_measured, &zero);
	if (at && (!clock_epoch || (rq - *at > CLOCK_REMEASURE_NS && CAST(struct task_struct, next)->pid))) {
		*at = rq;
		measure_clock(rq);
	}
	return rq + clock_k;
}

/* The time from ts to now, 0 if now is before it: k moves once an epoch,
 * by NTP's slew or a better measure, so a wait of a microsecond across the
 * move may end "before" it began. */
static __always_inline __u64 since(__u64 now, __u64 ts)
{
	return now > ts ? now - ts : 0;
}

/* ---- a wakeup's wait for a CPU ----
 *
 * The wakeup notes the task's run delay so far (sched_info.run_delay: its
 * time queued on run queues, as /proc/PID/schedstat shows it); its switch-in
 * adds what it waited since: the delay grown meanwhile (queued on another
 * CPU first, then moved) and the time since it was queued on this CPU
 * (sched_info.last_queued, which the kernel clears only after this
 * tracepoint). No clock is read at the wakeup. */
static __always_inline void note_run_delay(struct waker *w, struct task_struct *p)
{
	if (kernel_stamps())
		w->run_delay = CAST(struct task_struct, p)->sched_info.run_delay;
	else
		w->ts = bpf_ktime_get_ns();
}

/* How long task t, switching in at now, waited for a CPU since the wakeup
 * w. */
static __always_inline __u64 queued_since(struct task_struct *t, struct waker *w, __u64 now)
{
	if (!kernel_stamps())
		return now > w->ts ? now - w->ts : 0;
	struct task_struct *tt = CAST(struct task_struct, t);
	__u64 q = tt->sched_info.run_delay - w->run_delay;
	__u64 queued = tt->sched_info.last_queued;
	__u64 rq = rq_clock_of(t);
	if (queued && rq > queued)
		q += rq - queued;
	return q;
}

#endif
