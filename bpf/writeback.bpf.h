/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The page cache: pages dirtied, dirty throttling, writeback. Included by
 * whyslow.bpf.c, after its maps and settings: one object, split along its
 * sections. */
#ifndef WHYSLOW_WRITEBACK_BPF_H
#define WHYSLOW_WRITEBACK_BPF_H

/* ---- page cache and writeback ---- */

static __always_inline int on_dirty_folio(struct folio *folio, struct address_space *mapping)
{
	if (!mapping)
		return 0;
	struct inode *host = CAST(struct address_space, mapping)->host;
	if (!host)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) == self_pid)
		return 0;
	struct file_ref r = {};
	inode_only_ref(host, &r);
	struct dirty_key k = { .pid = id >> 32, .tid = (__u32)id, .dev = r.dev, .gen = r.gen, .ino = r.ino };
	__u64 pages = 1;
	/* the first word, whether the kernel calls it unsigned long or memdesc_flags_t */
	unsigned long fl = 0;
	bpf_probe_read_kernel(&fl, sizeof(fl), folio);
	if (fl & (1ul << bpf_core_enum_value(enum pageflags, PG_head))) {
		if (bpf_core_field_exists(folio->_nr_pages))
			pages = CAST(struct folio, folio)->_nr_pages;
	}
	/* A large folio is dirtied whole, and counted whole (by the kernel too:
	 * /proc/PID/io's write_bytes): PostgreSQL's 8 KiB WAL writes, each into
	 * a folio its last fdatasync cleaned, counted 30 times what they wrote.
	 * Inside a write(2) or pwrite64(2), a folio counts no more pages than
	 * the call spans. */
	if (pages > 1) {
		struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
		long nr = regs->orig_ax;
		__u64 count = regs->dx, span = pages;
		if (nr == NR_pwrite64)   /* the offset is known: the pages it touches */
			span = ((regs->r10 + count + PAGE_SIZE - 1) >> PAGE_SHIFT) - (regs->r10 >> PAGE_SHIFT);
		else if (nr == NR_write)
			span = (count + PAGE_SIZE - 1) >> PAGE_SHIFT;
		if (span && span < pages)
			pages = span;
	}
	__u64 now = bpf_ktime_get_ns();
	struct dirty_val *v = bpf_map_lookup_elem(&dirty, &k);
	if (!v) {
		struct dirty_val zero = {};
		zero.first_ts = now;
		current_comm(zero.comm);
		bpf_map_update_elem(&dirty, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&dirty, &k);
		if (!v) {
			count_lost(LOST_META);
			return 0;
		}
	}
	__sync_fetch_and_add(&v->pages, pages);
	v->last_ts = now;
	return 0;
}

static __always_inline int on_balance_dirty_pages(unsigned long dirtied, unsigned long period, long pause,
						  struct bdi_writeback *wb)
{
	if (pause <= 0)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) == self_pid)
		return 0;
	struct throttle_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_THROTTLE);
	__u64 hz = CONFIG_HZ ? CONFIG_HZ : 250;
	e->pause_ns = (__u64)pause * 1000000000ull / hz;
	e->period_ns = (__u64)period * 1000000000ull / hz;
	e->dirtied = dirtied;
	e->bdi_dev = BPF_CORE_READ(wb, bdi, dev, devt);
	submit_meta(e);
	return 0;
}

static __always_inline int on_wb_inode_start(struct inode *inode)
{
	__u64 key = (__u64)inode;
	struct wb_start s = { .ts = bpf_ktime_get_ns() };
	bpf_map_update_elem(&wb_inflight, &key, &s, BPF_ANY);
	return 0;
}

static __always_inline int on_wb_inode(struct inode *inode, struct writeback_control *wbc, unsigned long nr_to_write)
{
	long left = BPF_CORE_READ(wbc, nr_to_write);
	__u64 key = (__u64)inode;
	struct wb_start *s = bpf_map_lookup_elem(&wb_inflight, &key);
	__u64 start = s ? s->ts : 0;
	bpf_map_delete_elem(&wb_inflight, &key);
	if ((long)nr_to_write - left <= 0)
		return 0;
	struct writeback_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_WRITEBACK);
	__builtin_memset(&e->f, 0, sizeof(e->f));
	inode_only_ref(inode, &e->f);
	e->pages = nr_to_write - left;
	e->dur = start ? e->h.ts - start : 0;
	submit_meta(e);
	return 0;
}

#endif
