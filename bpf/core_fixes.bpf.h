/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Kernel differences handled with CO-RE, each named by the kernel change it
 * covers (as libbpf-tools' core_fixes.bpf.h): a struct flavour (___name) per
 * layout, chosen at load by bpf_core_field_exists, never by a version
 * number. Included by whyslow.bpf.c, after its helpers. */
#ifndef WHYSLOW_CORE_FIXES_BPF_H
#define WHYSLOW_CORE_FIXES_BPF_H

/**
 * commit bb630f9f7a7d ("locking/rtmutex: Add mutex variant for RT"), 5.15:
 * with CONFIG_PREEMPT_RT, struct mutex is an rt_mutex_base (rtmutex) whose
 * owner is a task pointer, instead of an atomic_long_t owner word.
 * see:
 *     https://github.com/torvalds/linux/commit/bb630f9f7a7d
 */
struct mutex___rt {
	struct rt_mutex_base rtmutex;
};

/* The owner word of a mutex: its owner task, with flags in the low three
 * bits (none on PREEMPT_RT), or 0 when this kernel's layout is neither. */
static __always_inline unsigned long mutex_owner(struct mutex *m)
{
	if (bpf_core_field_exists(struct mutex, owner))
		return CAST(struct mutex, m)->owner.counter;
	if (bpf_core_field_exists(struct mutex___rt, rtmutex))
		return (unsigned long)BPF_CORE_READ((struct mutex___rt *)m, rtmutex.owner);
	return 0;
}

/**
 * CFS bandwidth control (CONFIG_CFS_BANDWIDTH, a cgroup's cpu.cfs_quota_us or
 * cpu.max): a cfs_rq out of quota is throttled, and throttle_count counts it
 * and its throttled ancestors. Without CONFIG_FAIR_GROUP_SCHED a task has no
 * se.cfs_rq, and without bandwidth control a cfs_rq no throttle_count:
 * never throttled then. With the task based throttle model (6.18: struct
 * task_struct has a `throttled` field), a throttled cfs_rq's tasks leave
 * the CPU as they return to user mode, and throttle_count counts the same.
 */
static __always_inline bool cpu_quota_throttled(struct task_struct *t)
{
	if (!bpf_core_field_exists(struct sched_entity, cfs_rq) || !bpf_core_field_exists(struct cfs_rq, throttle_count))
		return false;
	struct cfs_rq *cq = BPF_CORE_READ(t, se.cfs_rq);
	return cq && BPF_CORE_READ(cq, throttle_count) > 0;
}

#endif
