/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Latency histograms: log2 buckets without a loop. Included by whyslow.bpf.c,
 * after its maps and settings: one object, split along its sections. */
#ifndef WHYSLOW_HIST_BPF_H
#define WHYSLOW_HIST_BPF_H

/* log2 without a loop, as libbpf-tools' bits.bpf.h does it */
static __always_inline __u32 lat_slot(__u64 v)
{
	__u32 r, shift;
	__u32 hi = v >> 32;
	if (hi) {
		v = hi;
		r = 32;
	} else {
		r = 0;
	}
	__u32 w = v;
	r |= shift = (w > 0xFFFF) << 4; w >>= shift;
	r |= shift = (w > 0xFF) << 3; w >>= shift;
	r |= shift = (w > 0xF) << 2; w >>= shift;
	r |= shift = (w > 0x3) << 1; w >>= shift;
	r |= (w >> 1);
	return r < LAT_SLOTS ? r : LAT_SLOTS - 1;
}

#endif
