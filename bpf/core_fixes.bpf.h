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

#endif
