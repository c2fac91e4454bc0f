/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-call hooks (--syscalls, --full, --requests): the syscall in flight,
 * aggregates, streamed calls, request payloads; syscall_args also serves the
 * default level. Included by whyslow.bpf.c, after its maps and settings: one
 * object, split along its sections. */
#ifndef WHYSLOW_SYSCALL_BPF_H
#define WHYSLOW_SYSCALL_BPF_H

/* ---- I/O syscalls ---- */


/* What a syscall's registers say: its fd(s), size and flags. False for calls
 * not worth following (fcntl other than record locks, anonymous mmap). Used at
 * entry, and at a context switch when no entry hook runs (default level):
 * pt_regs keep the arguments for the whole call. */
static __always_inline bool syscall_args(long id, struct pt_regs *rg, struct inflight *in)
{
	unsigned long a0 = rg->di, a1 = rg->si, a2 = rg->dx, a3 = rg->r10, a4 = rg->r8;
	in->nr = id;
	in->fd = -1;
	in->fd2 = -1;
	switch (id) {
	case NR_read: case NR_recvfrom:
		in->fd = a0; in->req = a2; in->buf = a1; break;
	case NR_write: case NR_pread64: case NR_pwrite64: case NR_sendto:
		in->fd = a0; in->req = a2; break;
	case NR_readv: case NR_writev: case NR_preadv: case NR_pwritev:
	case NR_preadv2: case NR_pwritev2: case NR_recvmsg: case NR_sendmsg:
	case NR_fsync: case NR_fdatasync: case NR_syncfs: case NR_connect:
	case NR_accept: case NR_accept4: case NR_close: case NR_ftruncate:
		in->fd = a0; break;
	case NR_fallocate:
		in->fd = a0; in->req = a3; in->flags = a1; break;
	case NR_sync_file_range:
		in->fd = a0; in->req = a2; in->flags = a3; break;
	case NR_io_uring_enter:
		in->fd = a0; in->req = a1; in->flags = a3; break;
	case NR_flock:
		in->fd = a0; in->flags = a1; break;
	case NR_fcntl:
		/* only record locks */
		if (a1 != F_SETLK && a1 != F_SETLKW && a1 != F_OFD_SETLK && a1 != F_OFD_SETLKW)
			return false;
		in->fd = a0; in->flags = a1; break;
	case NR_mmap:
		/* only file mappings */
		if ((long)a4 < 0 || (a3 & MAP_ANONYMOUS))
			return false;
		in->fd = a4; in->req = a1; in->flags = a2; break;
	case NR_msync:
		in->req = a1; in->flags = a2; break;
	case NR_sendfile:
		in->fd = a1; in->fd2 = a0; in->req = a3; break;
	case NR_splice:
		in->fd = a0; in->fd2 = a2; in->req = a4; break;
	case NR_copy_file_range:
		in->fd = a0; in->fd2 = a2; in->req = rg->r9; break;
	case NR_openat: case NR_openat2:
		in->flags = a2; break;
	case NR_open:
		in->flags = a1; break;
	case NR_unlink: case NR_rmdir:
		in->req = a0; in->fd = AT_FDCWD; break;
	case NR_unlinkat:
		in->req = a1; in->fd = a0; in->flags = a2; break;
	}
	return true;
}

/* The call's arguments and files, read from the registers it saved (they
 * hold the arguments for the whole call on x86_64) once per call: at its
 * exit, or sooner when a wait or a block request inside it needs them. The
 * entry hook only stamps the time: a call that neither waits nor does I/O
 * is read once, at exit, and its file comes from the thread's one-file
 * cache. A call on an fd another thread closes meanwhile may be taken for
 * the file that fd names at exit. cls is the call's class. */
static __always_inline void resolve_call_of(struct thread_state *ts, struct pt_regs *rg, __u32 cls)
{
	if (ts->resolved)
		return;
	ts->resolved = 1;
	struct inflight *in = &ts->in;
	in->req = 0;
	in->buf = 0;
	in->flags = 0;
	__builtin_memset(&in->f, 0, sizeof(in->f));
	__builtin_memset(&in->f2, 0, sizeof(in->f2));
	syscall_args(in->nr, rg, in);
	if (cls == CLS_UNLINK) {
		/* the directory a relative name lives in: dirfd, or the cwd */
		if (in->fd == AT_FDCWD) {
			struct task_struct *task = (void *)bpf_get_current_task();
			struct dentry *d = BPF_CORE_READ(task, fs, pwd.dentry);
			struct inode *inode = BPF_CORE_READ(d, d_inode);
			if (inode) {
				inode_ref(inode, NULL, &in->f);
				describe(NULL, inode, d, BPF_CORE_READ(task, fs, pwd.mnt), &in->f);
			}
		} else {
			fd_ref(in->fd, &in->f);
		}
		return;
	}
	if (in->fd >= 0 && cls != CLS_OPEN)
		fd_ref_cached(ts, in->fd, &in->f);
	if (in->fd2 >= 0)
		fd_ref(in->fd2, &in->f2);
}

static __always_inline void resolve_call(struct thread_state *ts, struct pt_regs *rg)
{
	if (!ts->resolved)
		resolve_call_of(ts, rg, syscall_class(ts->in.nr));
}

/* The syscall the current thread is inside, if followed, with its
 * arguments and files read. */
static __always_inline struct inflight *current_call(void)
{
	struct thread_state *ts = thread_state(false);
	if (!ts || !ts->active)
		return NULL;
	resolve_call(ts, CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf())));
	return &ts->in;
}

static __always_inline int on_sys_enter(struct pt_regs *regs, long id)
{
	__u32 cls = syscall_class(id);
	if (!cls)
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct thread_state *ts = target_state(tgid);
	if (!ts) {
		/* Syncs are traced for everyone: they are how other processes hurt the target. */
		if (cls != CLS_SYNC || tgid == self_pid)
			return 0;
		ts = thread_state(true);
		if (!ts)
			return 0;
	}
	struct pt_regs *rg = CAST(struct pt_regs, regs);
	if (id == NR_fcntl || id == NR_mmap) {
		/* only record locks and file mappings are followed */
		struct inflight probe = {};
		if (!syscall_args(id, rg, &probe))
			return 0;
	}
	ts->in.ts = bpf_ktime_get_ns();
	ts->in.nr = id;
	ts->in.blocked = 0;
	ts->resolved = 0;
	ts->active = 1;
	/* a closed fd names nothing at exit */
	if (cls == CLS_CLOSE)
		resolve_call_of(ts, rg, cls);
	return 0;
}

static __always_inline bool is_socket(struct file_ref *f)
{
	return f->kind == FK_SOCK_INET || f->kind == FK_SOCK_UNIX;
}

static __always_inline bool stream_it(struct inflight *in, __u32 cls, long ret, __u64 dur)
{
	if (full)
		return true;
	if (by_request && is_socket(&in->f))
		return true;   /* requests are cut from every read and write of a connection */
	if (ret < 0 && ret != -EAGAIN /* polling, not a failure */)
		return true;
	if (in->blocked || dur >= slow_ns)
		return true;
	return cls == CLS_OPEN || cls == CLS_CLOSE || cls == CLS_SYNC || cls == CLS_LOCK ||
	       cls == CLS_MMAP || in->nr == NR_connect || in->nr == NR_accept || in->nr == NR_accept4;
}

static __always_inline void aggregate(struct inflight *in, __u32 pid, __u32 tid, long ret, __u64 now, __u64 dur)
{
	struct agg_key k = { .pid = pid, .tid = tid, .nr = in->nr, .dev = in->f.dev,
			     .ino = in->f.ino, .gen = in->f.gen, .kind = in->f.kind };
	struct agg_val *v = bpf_map_lookup_elem(&agg, &k);
	if (!v) {
		struct agg_val zero = {};
		zero.first_ts = in->ts;
		current_comm(zero.comm);
		if (bpf_map_update_elem(&agg, &k, &zero, BPF_NOEXIST) && bpf_map_lookup_elem(&agg, &k) == NULL) {
			count_lost(LOST_AGG);
			return;
		}
		v = bpf_map_lookup_elem(&agg, &k);
		if (!v) {
			count_lost(LOST_AGG);
			return;
		}
	}
	/* one writer per entry (the key holds the tid): plain adds suffice */
	v->count++;
	if (ret > 0)
		v->bytes += ret;
	else if (ret < 0)
		v->errors++;
	v->total_ns += dur;
	if (dur > v->max_ns)
		v->max_ns = dur;
	v->last_ts = now;
	__u32 s = lat_slot(dur);
	if (s < LAT_SLOTS)
		v->slots[s]++;
}

static __always_inline void emit_unlink(struct inflight *in, long ret, __u64 dur)
{
	struct unlink_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return;
	fill_hdr_at(&e->h, EV_UNLINK, in->ts);
	e->ret = ret;
	e->dur = dur;
	e->nr = in->nr;
	e->_pad = 0;
	e->dir = in->f;
	if (bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)in->req) < 0)
		e->name[0] = 0;
	submit_meta(e);
}

/* Per connection, what the target did last (CONN_WROTE, CONN_READ) and
 * which end it is (CONN_SERVER, CONN_CLIENT), by the rule of
 * internal/event/conversation.go that serverSide (requests_cut.go) reads by
 * too: the call that opened it says it (conn_opened_end, syscalls.h), else
 * the first data (a read: the server's end). A server's read after a write
 * (or the first on a connection) begins a turn: a request, or a pipelined
 * batch of them. Only a turn's first read looks up its bytes' arrival (a
 * later read's bytes are the same request's, or a pipelined one's that
 * arrived with them), and kept counts the turn's bytes kept so far
 * (payload_kept). A client's reads are answers: their bytes and arrival
 * are not wanted (the analyses frame requests from the server's reads),
 * and not kept. Written in place: an LRU update takes a lock and a free
 * element, at every turn of every conversation. */
#define CONN_WROTE 1
#define CONN_READ 2
#define CONN_DIR 3
#define CONN_SERVER 4
#define CONN_CLIENT 8
struct conn_key {
	__u32 pid;
	__u32 dev;
	__u64 ino;
};
struct conn_state {
	__u8 dir;        /* CONN_* */
	__u8 _pad;
	__u16 kept;      /* the server's current turn: its bytes kept, up to PAYLOAD_BATCH_LEN */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct conn_key);
	__type(value, struct conn_state);
} conn_dir SEC(".maps");

/* A syscall record's fields after its header, from the call in flight. */
static __always_inline void fill_call(struct syscall_event *e, struct inflight *in, long ret, __u64 dur)
{
	e->dur = dur;
	e->ret = ret;
	e->req = in->req;
	e->fd = in->fd;
	e->fd2 = in->fd2;
	e->nr = in->nr;
	e->flags = in->flags;
	e->blocked = in->blocked;
	e->_pad = 0;
	e->f = in->f;
	e->f2 = in->f2;
}

/* send_read sends a server's read as a conn_read_event or conn_batch_event
 * (their heads are one layout): the call, its arrival and n of its bytes
 * (at most cap). Returns the bytes sent; a record the ring had no room for
 * is lost as a call (LOST_SYSCALL). */
#define send_read(type, in, ret, dur, arrived, n, cap)                                       \
	({                                                                                   \
		void *ring;                                                                  \
		__u32 sent = 0;                                                              \
		struct type *e = reserve_call(sizeof(struct type), &ring);                  \
		if (e) {                                                                     \
			fill_hdr_at(&e->call.h, EV_CONN_READ, (in)->ts);                     \
			fill_call(&e->call, (in), (ret), (dur));                             \
			e->arrived = (arrived);                                              \
			e->_pad = 0;                                                         \
			/* n is 1 to cap (a power of two): bounded so in the register \
			 * the copy is given, where the verifier sees it (the        \
			 * compiler may pass the read's length, which n equals) */   \
			__u32 want = (n);                                                    \
			if (want > 0) {                                                      \
				asm volatile("%[w] += -1; %[w] &= %[m]; %[w] += 1"         \
					     : [w] "+r"(want) : [m] "i"((cap) - 1));         \
				if (bpf_probe_read_user(e->data, want, (void *)(in)->buf) == 0) \
					sent = want;                                         \
			}                                                                    \
			e->len = sent;                                                       \
			submit_call(e, ring);                                                \
		}                                                                            \
		sent;                                                                        \
	})

/* Follows a socket call's connection (conn_dir) and, for a server's read
 * that adds something to its call (its arrival, its first bytes), sends
 * the call itself with them in one record (a conn_read_event): true then,
 * and the caller sends nothing more. cls is the call's class. */
static __always_inline bool note_request(struct thread_state *ts, struct inflight *in, __u32 cls, long ret,
					 __u64 dur)
{
	struct conn_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .dev = in->f.dev, .ino = in->f.ino };
	__u32 end = conn_opened_end(in->nr);
	if (end != END_NONE) {
		/* a non-blocking connect returns -EINPROGRESS: still the client */
		if (ret < 0 && end != END_CLIENT)
			return false;
		struct conn_state opened = { .dir = end == END_CLIENT ? CONN_CLIENT : CONN_SERVER };
		bpf_map_update_elem(&conn_dir, &k, &opened, BPF_ANY);
		return false;
	}
	if (ret <= 0)
		return false;
	/* event.Reads and event.Writes (syscalls.h): sendfile, splice and
	 * copy_file_range are neither, their f is the file they read from, so a
	 * sendfile is no answer on a connection. */
	bool read = reads_conn(in->nr, cls);
	if (!read && !writes_conn(in->nr, cls))
		return false;
	struct conn_state *st = bpf_map_lookup_elem(&conn_dir, &k);
	__u8 old = st ? st->dir : 0;
	__u8 side = old & (CONN_SERVER | CONN_CLIENT);
	if (!side)
		side = read ? CONN_SERVER : CONN_CLIENT;
	__u8 now = side | (read ? CONN_READ : CONN_WROTE);
	if (!read || side == CONN_CLIENT) {
		if (!st) {
			struct conn_state fresh = { .dir = now };
			bpf_map_update_elem(&conn_dir, &k, &fresh, BPF_ANY);
		} else if (old != now) {
			st->dir = now;
		}
		return false;
	}
	bool first = (old & CONN_DIR) != CONN_READ;
	__u32 before = first || !st ? 0 : st->kept;
	__u32 n = payload && in->buf ? payload_kept(first, before, ret) : 0;
	__u64 arrived = first && in->f.kind == FK_SOCK_INET ? arrival_of((struct file *)ts->last_file, ret) : 0;
	__u32 sent = 0;
	bool sends = arrived || n;
	if (sends) {
		if (n > PAYLOAD_LEN)
			sent = send_read(conn_batch_event, in, ret, dur, arrived, n, PAYLOAD_BATCH_LEN);
		else
			sent = send_read(conn_read_event, in, ret, dur, arrived, n, PAYLOAD_LEN);
	}
	__u32 kept = before + sent;
	if (kept > PAYLOAD_BATCH_LEN)
		kept = PAYLOAD_BATCH_LEN;
	if (!st) {
		struct conn_state fresh = { .dir = now, .kept = kept };
		bpf_map_update_elem(&conn_dir, &k, &fresh, BPF_ANY);
	} else {
		if (old != now)
			st->dir = now;
		if (st->kept != kept)
			st->kept = kept;
	}
	return sends;
}

static __always_inline int on_sys_exit(struct pt_regs *regs, long ret)
{
	struct pt_regs *rg = CAST(struct pt_regs, regs);
	/* Most calls are none whyslow follows: known by their number before
	 * the thread's storage is looked up. */
	long nr = rg->orig_ax;
	__u32 cls = syscall_class(nr);
	if (!cls)
		return 0;
	struct thread_state *ts = thread_state(false);
	if (!ts || !ts->active)
		return 0;
	ts->active = 0;
	if (ts->in.nr != nr)   /* a call whose exit went unseen: the one followed */
		cls = syscall_class(ts->in.nr);
	__u64 now = bpf_ktime_get_ns();
	resolve_call_of(ts, rg, cls);
	struct inflight *in = &ts->in;
	__u64 dur = now - in->ts;

	/* A new fd names its file now: opens and accepts. */
	if (ret >= 0 && (cls == CLS_OPEN || in->nr == NR_accept || in->nr == NR_accept4)) {
		in->fd = ret;
		fd_ref(ret, &in->f);
	}
	if (in->nr == NR_connect && in->fd >= 0)
		fd_ref(in->fd, &in->f);   /* now with its peer */

	if (cls == CLS_UNLINK) {
		emit_unlink(in, ret, dur);
		return 0;
	}
	if (by_request && is_socket(&in->f) && note_request(ts, in, cls, ret, dur))
		return 0;   /* sent with its arrival and first bytes */
	__u64 pidtgid = bpf_get_current_pid_tgid();
	if (!stream_it(in, cls, ret, dur)) {
		aggregate(in, pidtgid >> 32, (__u32)pidtgid, ret, now, dur);
		return 0;
	}
	void *ring;
	struct syscall_event *e = reserve_call(sizeof(*e), &ring);
	if (!e)
		return 0;
	fill_hdr_at(&e->h, EV_SYSCALL, in->ts);
	fill_call(e, in, ret, dur);
	submit_call(e, ring);
	return 0;
}

#endif
