/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* io_uring operations with their file. Included by whyslow.bpf.c, after its
 * maps and settings: one object, split along its sections. */
#ifndef WHYSLOW_URING_BPF_H
#define WHYSLOW_URING_BPF_H

/* ---- io_uring ---- */

#define PF_IO_WORKER 0x00000010   /* an io_uring thread: io-wq worker or SQPOLL */
#define IOSQE_FIXED_FILE 1        /* the sqe's fd is an index into the ring's registered files */

/* Whether task holds the ring's lock (the owner word of a mutex is its
 * owner task with flags in the low bits: core_fixes.bpf.h). */
static __always_inline bool ring_locked_by(struct io_ring_ctx *ctx_p, struct task_struct *task)
{
	unsigned long owner = mutex_owner(&ctx_p->uring_lock);
	return owner && (owner & ~7UL) == (unsigned long)task;
}

/* The io_uring operation the current thread is issuing, if any: the file of
 * a block request made inside it (O_DIRECT: user pages, no page cache to
 * name the file), which the thread's syscall cannot tell. The thread is in
 * io_uring_enter, whose fd is the ring, or is an io thread in no syscall.
 * - An io-wq worker (iou-wrk-*) issues its current work.
 * - A submitter (in io_uring_enter, running its task work, or the SQPOLL
 *   thread iou-sqp-*) issues under the ring's lock, and flushes the block
 *   plug batching the requests before letting it go: its operation is the
 *   one it submitted last, while it holds that ring's lock. Once the lock is
 *   let go nothing more is charged to it.
 * Within one hold, a plug batches the requests of every operation submitted
 * (they reach the block tracepoints together, when it is flushed), and task
 * work may issue an operation submitted earlier (a link): the request then
 * names its own, where it can (uring_rq_op).
 * One task storage read and a few plain loads; the lock test only for
 * threads that ever submitted. */
static __always_inline struct io_kiocb *uring_issuing(struct task_struct *task, struct thread_state *ts)
{
	if (bpf_core_field_exists(task->worker_private) && (task->flags & PF_IO_WORKER) && task->worker_private) {
		struct io_worker *w = CAST(struct io_worker, task->worker_private);
		struct io_wq_work *work = w->cur_work;
		if (!work)
			return NULL;
		return (void *)work - bpf_core_field_offset(struct io_kiocb, work);
	}
	if (!ts || !ts->uring_req)
		return NULL;
	struct io_kiocb *req = CAST(struct io_kiocb, ts->uring_req);
	if (!ring_locked_by(req->ctx, task))
		return NULL;
	return (struct io_kiocb *)ts->uring_req;
}

/* The operation a request's data belongs to, when the request tells: an
 * iomap direct I/O (ext4, xfs) hangs its struct iomap_dio on each bio, whose
 * first word is the kiocb, which io_uring keeps in the operation itself.
 * That operation is taken only if it is one of the ring of req (the
 * operation being issued): a bio of another kind, whose bi_private is
 * something else, leads nowhere near it. Otherwise req. */
static __always_inline struct io_kiocb *uring_rq_op(struct request *rq, struct io_kiocb *req)
{
	if (!bpf_core_type_exists(struct iomap_dio))
		return req;
	struct bio *bio = CAST(struct request, rq)->bio;
	if (!bio)
		return req;
	void *priv = CAST(struct bio, bio)->bi_private;
	if (!priv)
		return req;
	struct kiocb *iocb = CAST(struct iomap_dio, priv)->iocb;
	if (!iocb)
		return req;
	struct io_kiocb *op = (void *)iocb - bpf_core_field_offset(struct io_kiocb, cmd) -
			      bpf_core_field_offset(struct io_rw, kiocb);
	if (CAST(struct io_kiocb, op)->ctx != CAST(struct io_kiocb, req)->ctx)
		return req;
	return op;
}

/* The syscall whose work an io_uring operation does, or -1. An io thread
 * makes no syscall of its own: its registers are a copy of its creator's,
 * in io_uring_enter on the ring, so its waits are named after its work (a
 * worker blocked reading a file waits in "pread64" on that file). Opcodes
 * are uapi: numbered once, never renumbered. */
static __always_inline long uring_op_syscall(__u8 op)
{
	switch (op) {
	case IORING_OP_READ: case IORING_OP_READ_FIXED:
		return NR_pread64;
	case IORING_OP_WRITE: case IORING_OP_WRITE_FIXED:
		return NR_pwrite64;
	case IORING_OP_READV:
		return NR_preadv;
	case IORING_OP_WRITEV:
		return NR_pwritev;
	case IORING_OP_FSYNC:
		return NR_fsync;
	case IORING_OP_SYNC_FILE_RANGE:
		return NR_sync_file_range;
	case IORING_OP_FALLOCATE:
		return NR_fallocate;
	case IORING_OP_SENDMSG:
		return NR_sendmsg;
	case IORING_OP_RECVMSG:
		return NR_recvmsg;
	case IORING_OP_SEND:
		return NR_sendto;
	case IORING_OP_RECV:
		return NR_recvfrom;
	case IORING_OP_ACCEPT:
		return NR_accept4;
	case IORING_OP_CONNECT:
		return NR_connect;
	case IORING_OP_OPENAT:
		return NR_openat;
	case IORING_OP_OPENAT2:
		return NR_openat2;
	case IORING_OP_CLOSE:
		return NR_close;
	case IORING_OP_SPLICE:
		return NR_splice;
	case IORING_OP_UNLINKAT:
		return NR_unlinkat;
	}
	return -1;
}

/* The call an io thread (io-wq worker or SQPOLL) waits in: the operation it
 * is working on, with its file, or none (an idle worker waiting for work).
 * A global function, verified once. */
__noinline int uring_wait(struct offstart *s)
{
	if (!s)
		return 0;
	s->io_worker = 1;
	s->syscall = -1;
	struct task_struct *task = bpf_get_current_task_btf();
	struct io_kiocb *req = uring_issuing(task, thread_state(false));
	if (!req)
		return 0;
	struct io_kiocb *r = CAST(struct io_kiocb, req);
	long nr = uring_op_syscall(r->opcode);
	s->syscall = nr;
	__u32 cls = syscall_class(nr);
	if (!cls || cls == CLS_UNLINK)
		return 0;
	s->cls = cls;
	s->fd = (r->flags & IOSQE_FIXED_FILE) ? -1 : r->cqe.fd;
	if (cls == CLS_READ || cls == CLS_WRITE) {
		struct io_rw *rw = CAST(struct io_rw, (void *)req + bpf_core_field_offset(struct io_kiocb, cmd));
		s->req = rw->len;
	}
	if (cls != CLS_OPEN)
		file_ref_of(r->file, &s->f);
	return 0;
}

static __always_inline int on_uring_submit(struct io_kiocb *req)
{
	/* Every submitter's, target or not: block requests of other processes
	 * are named too (uring_issuing). */
	struct thread_state *ts = thread_state(true);
	if (ts)
		ts->uring_req = (__u64)req;
	__u64 id = bpf_get_current_pid_tgid();
	if (!is_target(id >> 32))
		return 0;
	struct uring_pending p = {};
	p.ts = bpf_ktime_get_ns();
	p.pid = id >> 32;
	p.tid = (__u32)id;
	p.opcode = BPF_CORE_READ(req, opcode);
	p.user_data = BPF_CORE_READ(req, cqe.user_data);
	p.fd = BPF_CORE_READ(req, cqe.fd);
	current_comm(p.comm);
	/* The file is mostly taken at issue, after this: named from the fd
	 * here, at completion for a registered file (an index, not an fd). */
	struct file *f = BPF_CORE_READ(req, file);
	if (f)
		file_ref_of(f, &p.f);
	else if (!(BPF_CORE_READ(req, flags) & IOSQE_FIXED_FILE))
		fd_ref(p.fd, &p.f);
	__u64 key = (__u64)req;
	bpf_map_update_elem(&uring_inflight, &key, &p, BPF_ANY);
	return 0;
}

static __always_inline int on_uring_complete(void *req, struct io_uring_cqe *cqe)
{
	__u64 key = (__u64)req;
	struct uring_pending *p = bpf_map_lookup_elem(&uring_inflight, &key);
	if (!p)
		return 0;
	struct uring_event *e = reserve_event(sizeof(*e), LOST_URING);
	if (!e) {
		bpf_map_delete_elem(&uring_inflight, &key);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	e->h.ts = p->ts;
	e->h.pid = p->pid;
	e->h.tid = p->tid;
	e->h.kind = EV_URING;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h._pad = 0;
	e->h.cgroup = 0;
	__builtin_memcpy(e->h.comm, p->comm, sizeof(e->h.comm));
	e->dur = now - p->ts;
	e->res = BPF_CORE_READ(cqe, res);
	e->user_data = p->user_data;
	e->opcode = p->opcode;
	e->fd = p->fd;
	e->f = p->f;
	if (!p->f.dev && !p->f.ino)
		file_ref_of(BPF_CORE_READ((struct io_kiocb *)req, file), &e->f);
	submit_event(e);
	bpf_map_delete_elem(&uring_inflight, &key);
	return 0;
}

#endif
