/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Block I/O: requests with their issuer and the file of their data. Included
 * by whyslow.bpf.c, after its maps and settings: one object, split along its
 * sections. */
#ifndef WHYSLOW_BLOCK_BPF_H
#define WHYSLOW_BLOCK_BPF_H

/* ---- block I/O ---- */

static __always_inline __u32 rq_dev(struct request *rq_p)
{
	struct request *rq = CAST(struct request, rq_p);
	struct block_device *part = rq->part;
	if (part)
		return part->bd_dev;
	struct gendisk *disk = rq->q->disk;
	return (disk->major << 20) | disk->first_minor;
}

/* The file whose data a request carries: the page cache page's owner when it
 * lives on this device (or is the device's own metadata); otherwise (O_DIRECT
 * from user pages, anonymous or shmem) the file of the io_uring operation
 * being issued, or of the submitter's syscall. A global function, verified
 * once: inlined, the issue and insert programs verified it on each of their
 * paths (the request's address crosses it in memory, read as a number: a
 * global function's arguments are scalars or memory). */
__noinline int rq_file(__u64 *rq_addr, struct file_ref *r)
{
	if (!rq_addr || !r)
		return 0;
	struct request *rq_p = (struct request *)*rq_addr;
	struct request *rq = CAST(struct request, rq_p);
	struct bio *bio = rq->bio;
	struct page *page = bio ? bio->bi_io_vec->bv_page : NULL;
	if (page) {
		/* read as a number: an anonymous page's mapping has its low bit set */
		struct address_space *mapping = BPF_CORE_READ(page, mapping);
		if (mapping && !((unsigned long)mapping & 1)) {
			struct inode *host = CAST(struct address_space, mapping)->host;
			if (host) {
				struct file_ref pr = {};
				inode_ref(host, NULL, &pr);
				if (pr.kind == FK_BLK || pr.dev == rq_dev(rq_p)) {
					inode_only_ref(host, r);
					return 0;
				}
			}
		}
	}
	struct task_struct *task = bpf_get_current_task_btf();
	if (!task->mm)
		return 0;   /* a kernel thread: no syscall */
	/* io_uring: the operation's file. Its issuer's syscall names the ring
	 * (io_uring_enter's fd), or none: an io thread's registers are a copy
	 * of its creator's. */
	struct thread_state *ts = thread_state(false);
	struct io_kiocb *req = uring_issuing(task, ts);
	if (req) {
		if (!ts)
			ts = thread_state(true);
		if (ts)
			file_ref_cached(ts, CAST(struct io_kiocb, uring_rq_op(rq_p, req))->file, r);
		return 0;
	}
	if (task->flags & PF_IO_WORKER)
		return 0;
	struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(task));
	if (syscall_hooks) {
		/* current_call(), with the thread's state at hand */
		if (ts && ts->active) {
			resolve_call(ts, regs);
			if (ts->in.nr != NR_io_uring_enter)
				*r = ts->in.f;
		}
		return 0;
	}
	/* No entry hook: the file of the call the issuer is in (O_DIRECT). */
	long nr = regs->orig_ax;
	__u32 cls = syscall_class(nr);
	struct inflight in = {};
	if (!cls || cls == CLS_OPEN || cls == CLS_UNLINK || nr == NR_io_uring_enter ||
	    !syscall_args(nr, regs, &in) || in.fd < 0)
		return 0;
	if (!ts)
		ts = thread_state(true);
	if (ts)
		fd_ref_cached(ts, in.fd, r);
	return 0;
}

/* A request's entry whose request completed: kept for the struct's next use. */
static __always_inline bool rq_done(struct rqinfo *info)
{
	return !info->insert_ts && !info->issue_ts;
}

/* Notes a request's insert or issue time, tracking it from the first of the
 * two seen (a request issued directly is never inserted). */
static __always_inline void rq_track(struct request *rq, bool issue)
{
	__u64 key = (__u64)rq;
	__u64 now = bpf_ktime_get_ns();
	__u64 born = CAST(struct request, rq)->start_time_ns;
	struct rqinfo *info = bpf_map_lookup_elem(&requests, &key);
	/* An entry is this request's only if it was made for it: a request
	 * merged into another is freed without a completion, and its struct,
	 * reused, found the dead one's issuer and file (an O_DIRECT write was
	 * charged to a library fio had read at its start). The time the block
	 * layer stamped the request with at its allocation tells them apart; a
	 * queue that stamps none (0), only a request's insert, its first sight
	 * (a requeued request, inserted again, keeps its entry where stamped). */
	if (info && !rq_done(info) && info->born == born && (born || issue)) {
		if (issue)
			info->issue_ts = now;
		else if (!info->insert_ts)
			info->insert_ts = now;
		return;
	}
	struct rqinfo fresh = {};
	fresh.born = born;
	if (issue)
		fresh.issue_ts = now;
	else
		fresh.insert_ts = now;
	__u64 id = bpf_get_current_pid_tgid();
	fresh.pid = id >> 32;
	fresh.tid = (__u32)id;
	current_comm(fresh.comm);
	rq_file(&key, &fresh.f);
	if (info) {
		/* the struct's last use (done, or freed unseen): its entry is
		 * this request's now, written in place; nothing else reads it
		 * until this request completes */
		*info = fresh;
		return;
	}
	if (bpf_map_update_elem(&requests, &key, &fresh, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&requests_held, 1);
}

/* A request completed: its entry kept, done, for the struct's next
 * request, or deleted past REQUESTS_KEPT. */
static __always_inline void rq_finish(struct rqinfo *info, __u64 key)
{
	if (requests_held <= REQUESTS_KEPT) {
		info->insert_ts = 0;
		info->issue_ts = 0;
		return;
	}
	if (bpf_map_delete_elem(&requests, &key) == 0)
		__sync_fetch_and_add(&requests_held, -1);
}

/* A request merged into another (block_rq_merge names the one going away)
 * is freed without a completion: its entry is finished here, so that its
 * struct's next request never takes it for its own. born cannot tell them
 * apart inside one plug: blk-mq stamps every request of a plug with the
 * plug's cached time, and a plug of more than 32 requests is inserted while
 * still open. io_uring batches of 128 operations on four files under a
 * busy disk had 1 to 3 requests of ~1000 charged to another file of the
 * batch (TestIOUringBatchAcrossFiles/deep). */
static __always_inline int on_rq_merge(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rqinfo *info = bpf_map_lookup_elem(&requests, &key);
	if (info && !rq_done(info))
		rq_finish(info, key);
	return 0;
}

static __always_inline int on_rq_insert(struct request *rq)
{
	rq_track(rq, false);
	return 0;
}

static __always_inline int on_rq_issue(struct request *rq)
{
	rq_track(rq, true);
	return 0;
}

static __always_inline int on_rq_complete(struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct rqinfo *info = bpf_map_lookup_elem(&requests, &key);
	if (!info || rq_done(info))
		return 0;
	struct block_event *e = reserve_event(sizeof(*e), LOST_BLOCK);
	if (!e) {
		rq_finish(info, key);
		return 0;
	}
	e->h.ts = bpf_ktime_get_ns();
	e->h.pid = info->pid;
	e->h.tid = info->tid;
	e->h.kind = EV_BLOCK;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h._pad = 0;
	e->h.cgroup = 0;
	__builtin_memcpy(e->h.comm, info->comm, sizeof(e->h.comm));
	/* A request inserted and never issued (seen: a 0-byte sync write, most
	 * likely an empty flush served by one already in flight) counts its
	 * wait at the device: an issue time of 0 made the disk view's queue
	 * time overflow. */
	e->insert_ts = info->insert_ts ? info->insert_ts : info->issue_ts;
	e->issue_ts = info->issue_ts ? info->issue_ts : info->insert_ts;
	/* Queued since the block layer made it (its start_time_ns, the same
	 * clock), as /proc/diskstats and iostat -x time a request: a request
	 * waits for a tag, or in a plug, before its insert (the time between
	 * was 16-19% of the await of writers on a throttled loop device). */
	if (info->born && info->born < e->insert_ts)
		e->insert_ts = info->born;
	struct request *rqc = CAST(struct request, rq);
	e->sector = rqc->__sector;
	e->bytes = nr_bytes;
	e->dev = rq_dev(rq);
	__u32 flags = rqc->cmd_flags;
	e->cmd_flags = flags;
	e->op = flags & 0xff;
	e->rflags = 0;
	if (flags & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)))
		e->rflags |= BLKF_SYNC;
	if (flags & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		e->rflags |= BLKF_META;
	if (flags & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)))
		e->rflags |= BLKF_FUA;
	e->error = error;
	e->f = info->f;
	submit_event(e);
	rq_finish(info, key);
	return 0;
}

#endif
