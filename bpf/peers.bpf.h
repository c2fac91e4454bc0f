/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Peers: the processes outside the target that it waits on. A client's wait
 * on its server, a backend's on the session holding its row lock: the
 * critical path goes on into them, so their waits are captured too, from
 * the moment they take part and, through a short history every user task
 * keeps, the waits just before. Included by whyslow.bpf.c, after its maps
 * and settings: one object, split along its sections.
 *
 * Who is a peer (targets map value KIND_PEER + hops - 1):
 *   - a process a target woke (its request reached it): one hop;
 *   - a process that woke a target or a peer (it answered, let go of a lock,
 *     finished the work another waited for): one hop more than the wakee.
 * Hops stop at PEER_HOPS, so that a busy logger or broker does not pull in
 * the whole machine. Kernel threads are never peers: their waits are told by
 * the stacks of those who wait on them. */
#ifndef WHYSLOW_PEERS_BPF_H
#define WHYSLOW_PEERS_BPF_H

/* Off on a system-wide capture, where every process is a target. */
const volatile bool follow_peers = false;

/* A user task's last long waits (a millisecond or more), noted at their
 * wakeups: when it becomes a peer by waking a target, the waits that led to
 * the wakeup (a lock holder's sleep before it committed) are sent then.
 * Nothing is noted at its switches: when a wait began is the kernel's own
 * stamp, read at the wakeup (clock.bpf.h, sleep_began), and a short wait
 * costs its wakeup a few loads. The history lives in the woken task's
 * storage: tp_btf only (raw_tp's task pointers are not trusted), so under
 * raw_tp a new peer's history is not sent. */
#define RECENT_WAITS 4
#define RECENT_JOIN_NS 1000000ULL
#define PF_KTHREAD 0x00200000
struct recent_wait {
	__u64 start;
	__u64 end;       /* its wakeup */
	__s32 syscall;
	__u32 state;
	__s32 fd;        /* the call's fd, -1 if none */
	__s32 waker_nr;  /* the waker's syscall (kill: it signalled), -1 none */
	struct waker_sock sock; /* the socket the waker sent on, its side */
	__u32 waker_pid; /* who woke it (tp_btf only), 0 none seen */
	__u32 waker_tid;
	char waker_comm[TASK_COMM_LEN];
	/* The waker's own longest wait during this one (a lock holder's sleep
	 * before it let go), noted at the wakeup: the waker may have exited
	 * by the time this task becomes a peer. by_end 0: none. */
	__u64 by_start;
	__u64 by_end;
	__s32 by_syscall;
	__u32 by_state;
	__s32 by_waker_nr; /* how the waker's wait ended (WAKER_TIMER: its timeout) */
	__u32 _pad;
};
struct recent {
	struct recent_wait w[RECENT_WAITS];
	__u32 next;
	__u32 _pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct recent);
} recent SEC(".maps");

static __always_inline bool user_task(struct task_struct *t)
{
	return CAST(struct task_struct, t)->mm != NULL;
}

/* The fd a syscall names in its first argument, or -1. */
static __always_inline __s32 first_fd(long nr, struct pt_regs *regs)
{
	__u32 cls = syscall_class(nr);
	if (!cls || cls == CLS_OPEN || cls == CLS_UNLINK || nr == NR_sync || cls == CLS_MMAP)
		return -1;
	return (__s32)regs->di;
}

/* When capture began (CLOCK_MONOTONIC), set by user space before load. */
const volatile __u64 capture_start_ns = 0;

/* The state task t sleeps in, as a letter; '?' once it is running again
 * (while it is being woken it still has its sleep's). */
static __always_inline __u32 waiting_state(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->__state))
		return '?';
	unsigned int st = CAST(struct task_struct, t)->__state;
	return st ? state_char(false, st) : '?';
}

/* When sleeping task t's wait began (began, its run-queue clock's time), as
 * CLOCK_MONOTONIC at now, no earlier than capture: a wait begun before it
 * is noted as waiting since capture began, as user space notes a
 * target's. With no offset measured yet (capture has just begun), this
 * CPU's clock now stands in for it. */
static __always_inline __u64 wait_began(__u64 began, __u64 now)
{
	__s64 off = 0;
	if (!rq_offset(now, &off))
		off = (__s64)(now - this_rq_clock());
	__u64 start = began + off;
	if (start < capture_start_ns)
		start = capture_start_ns;
	return start < now ? start : now;
}

/* TCP sockets by which end they are: SOCK_CONNECTED for a connect()'s,
 * SOCK_ACCEPTED for a listener's child. Seen at their state changes, a few
 * per connection; sockets older than the capture are not in it, and the
 * ports tell (see internal/capture/side.go). */
#define SOCK_CONNECTED 1
#define SOCK_ACCEPTED 2
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} sock_ends SEC(".maps");

/* A connection closing, while it still has its socket: its byte totals.
 * fin: the other end's FIN came (CLOSE_WAIT), which bytes_received counts
 * as one more byte (its sequence number). */
static __always_inline void send_sock_bytes(const struct sock *sk_p, bool fin)
{
	struct sock *sk = CAST(struct sock, sk_p);
	struct socket *sock = sk->sk_socket;
	if (!sock)
		return;
	struct inode *inode = (void *)sock - bpf_core_field_offset(struct socket_alloc, socket) +
			      bpf_core_field_offset(struct socket_alloc, vfs_inode);
	struct tcp_sock *tp = CAST(struct tcp_sock, sk_p);
	struct sock_bytes_event *e = reserve_meta(sizeof(*e), LOST_META);
	if (!e)
		return;
	fill_hdr(&e->h, EV_SOCK_BYTES);
	struct inode *in = CAST(struct inode, inode);
	e->f.dev = in->i_sb->s_dev;
	e->f.ino = in->i_ino;
	e->f.gen = in->i_generation;
	e->f.kind = FK_SOCK_INET;
	e->f._pad = 0;
	e->received = tp->bytes_received;
	if (fin && e->received > 0)
		e->received--;
	if (bpf_core_field_exists(tp->bytes_sent))
		e->sent = BPF_CORE_READ(tp, bytes_sent);
	else
		e->sent = tp->bytes_acked;
	submit_meta(e);
}

static __always_inline int on_sock_state(const struct sock *sk, int oldstate, int newstate)
{
	if (oldstate == 1 /* TCP_ESTABLISHED */ && (newstate == 4 /* FIN_WAIT1 */ || newstate == 8 /* CLOSE_WAIT */ ||
						    newstate == 7 /* CLOSE */) ||
	    oldstate == 8 && newstate == 9 /* CLOSE_WAIT -> LAST_ACK */)
		send_sock_bytes(sk, newstate == 8 || oldstate == 8);
	__u64 key = (__u64)sk;
	__u8 end = 0;
	if (newstate == 2 /* TCP_SYN_SENT */)
		end = SOCK_CONNECTED;
	else if (oldstate == 3 /* TCP_SYN_RECV */ && newstate == 1 /* TCP_ESTABLISHED */)
		end = SOCK_ACCEPTED;
	if (end)
		bpf_map_update_elem(&sock_ends, &key, &end, BPF_ANY);
	else if (newstate == 7 /* TCP_CLOSE */)
		bpf_map_delete_elem(&sock_ends, &key);   /* its address may be another's next */
	return 0;
}

/* The socket the current task is sending on (its syscall's fd), if any:
 * which side of a conversation the wakeup came from. A global function:
 * verified once, not at each of the wakeup's two calls. */
__noinline int waker_socket(struct waker_sock *ws)
{
	if (!ws)
		return 0;
	struct task_struct *cur = bpf_get_current_task_btf();
	struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(cur));
	long nr = regs->orig_ax;
	ws->nr = nr;
	__u32 cls = syscall_class(nr);
	if (cls != CLS_NET && cls != CLS_WRITE && cls != CLS_XFER && nr != 48 /* shutdown */)
		return 0;
	__s32 fd = (__s32)regs->di;
	struct file *file = fd_file((void *)cur, fd);
	if (!file)
		return 0;
	/* A pipe or a file (most wakeups through a write): no side, and no
	 * describing of it, which costs a lookup of the files seen. */
	struct inode *inode = CAST(struct file, file)->f_inode;
	if (!inode || (CAST(struct inode, inode)->i_mode & S_IFMT) != S_IFSOCK)
		return 0;
	/* Not through the thread's file cache: its task storage may be busy
	 * here (a wakeup nested in another program), and the side must not
	 * depend on it. */
	struct file_ref f = {};
	file_ref_of(file, &f);
	if (f.kind != FK_SOCK_INET && f.kind != FK_SOCK_UNIX)
		return 0;
	ws->f = f;
	struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
	struct sock *sk = sock->sk;
	if (f.kind == FK_SOCK_INET) {
		ws->lport = CAST(struct sock, sk)->__sk_common.skc_num;
		ws->rport = bpf_ntohs(CAST(struct sock, sk)->__sk_common.skc_dport);
		__u64 key = (__u64)sk;
		__u8 *end = bpf_map_lookup_elem(&sock_ends, &key);
		if (end)
			ws->end = *end;
	} else {
		ws->bound = CAST(struct unix_sock, sk)->addr != NULL;
	}
	return 0;
}

/* The current task, or the timer, wakes user task p of process tgid (tp_btf:
 * p trusted), neither a target nor a peer: if its wait was long, it is noted
 * in its history, with who ended it, and how (noted: not whyslow's own
 * wakeups). A wait of under a millisecond is no link of a chain worth its
 * cost here (a ping-pong's thousands a second): it costs a few loads, the
 * run queue's clock standing in for the clock, so a wait of up to a tick
 * over 1 ms may be taken for short. */
static __always_inline void wake_recent(struct task_struct *p, __u32 tgid, bool noted)
{
	__u64 began = sleep_began(p);
	if (!began)
		return;
	/* This CPU's run-queue clock: up to a tick behind while a task runs on
	 * it, as old as its idleness when the idle task is current (an
	 * interrupt's wakeup): then the clock is read. */
	__u64 rq_now = bpf_get_current_task_btf()->pid ? this_rq_clock() : 0;
	if (rq_now && rq_now < began + RECENT_JOIN_NS)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 start = wait_began(began, now);
	struct recent *r = bpf_task_storage_get(&recent, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!r || !start)
		return;
	struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(p));
	long nr = regs->orig_ax;
	/* One call waits many times (an fsync a dozen): its long waits, a
	 * moment apart, are kept as one, so that the history reaches further
	 * back. A wait its timer ended is not joined: its call returned (a poll
	 * timed out, a sleep ended), and the next one, though the same syscall,
	 * is another wait (PostgreSQL's pg_sleep, then a wait for the client). */
	struct recent_wait *w = &r->w[(r->next - 1) & (RECENT_WAITS - 1)];
	if (!(w->syscall == nr && w->end && start >= w->end && start - w->end < RECENT_JOIN_NS &&
	      w->waker_nr != WAKER_TIMER)) {
		__u32 i = r->next & (RECENT_WAITS - 1);
		w = &r->w[i];
		w->start = start;
		w->state = waiting_state(p);
		w->syscall = nr;
		w->fd = first_fd(nr, regs);
		r->next = i + 1;
	}
	w->end = now;
	w->waker_pid = 0;
	w->waker_tid = 0;
	w->waker_nr = -1;
	w->by_end = 0;
	__builtin_memset(w->waker_comm, 0, sizeof(w->waker_comm));
	__builtin_memset(&w->sock, 0, sizeof(w->sock));
	if (!noted)
		return;
	bool timer = waking_from_timer();
	__u64 id = timer ? 0 : bpf_get_current_pid_tgid();
	struct task_struct *cur = bpf_get_current_task_btf();
	nr = timer ? WAKER_TIMER : -1;   /* -1: a thread of its own process, or no user task */
	if (id && (__u32)(id >> 32) != tgid && cur->mm)
		nr = CAST(struct pt_regs, bpf_task_pt_regs(cur))->orig_ax;
	w->waker_pid = id >> 32;
	w->waker_tid = (__u32)id;
	w->waker_nr = nr;
	if (id)
		current_comm(w->waker_comm); /* not the timer's: the task it interrupted */
	if (nr < 0)
		return;   /* a thread of its own process, or no user task */
	/* which end it spoke from: a client's request to a server waiting for
	 * work is no wait on that client */
	waker_socket(&w->sock);
	struct recent *mine = bpf_task_storage_get(&recent, cur, 0, 0);
	if (!mine)
		return;
	__u64 best = 0;
	for (int i = 0; i < RECENT_WAITS; i++) {
		struct recent_wait *m = &mine->w[i];
		if (!m->end || m->end <= w->start)
			continue;
		__u64 from = m->start > w->start ? m->start : w->start;
		if (m->end - from > best) {
			best = m->end - from;
			w->by_start = m->start;
			w->by_end = m->end;
			w->by_syscall = m->syscall;
			w->by_state = m->state;
			w->by_waker_nr = m->waker_nr;
		}
	}
}

/* A process outside has just become a peer while its task t sleeps (a
 * target's request reached it, or it let a peer go): its wait is opened in
 * its slot from the kernel's stamps, as its switch-out would have opened it,
 * with the call its registers hold and that call's file. Its switch-in ends
 * it as any peer's (tp_btf: t trusted). */
static __always_inline struct wait_slot *open_peer_wait(struct task_struct *t, __u32 tgid, __u32 tid)
{
	struct task_struct *p = CAST(struct task_struct, t);
	if (!p->__state || p->on_cpu)
		return NULL;   /* running, or still on its way off a CPU */
	__u64 began = sleep_began(t);
	if (!began)
		return NULL;
	__u64 start = wait_began(began, bpf_ktime_get_ns());
	struct wait_slot *slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!slot) {
		/* made meanwhile by another CPU if it fails: found all the same */
		bpf_map_update_elem(&offcpu_start, &tid, &empty_slot, BPF_NOEXIST);
		slot = bpf_map_lookup_elem(&offcpu_start, &tid);
	}
	if (!slot || slot->w.ts)
		return slot;
	struct offstart s = {};
	s.ts = start;
	s.pid = tgid;
	s.state = waiting_state(t);
	s.stack_id = -1;
	s.peer = 1;
	struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(t));
	s.syscall = regs->orig_ax;
	s.fd = -1;
	__u32 cls = syscall_class(s.syscall);
	struct inflight in = {};
	if (cls && cls != CLS_UNLINK && syscall_args(s.syscall, regs, &in)) {
		s.cls = cls;
		s.fd = in.fd;
		s.req = in.req;
		s.flags = in.flags;
		if (in.fd >= 0 && cls != CLS_OPEN)
			file_ref_of(fd_file(t, in.fd), &s.f);
	}
	slot->w = s;
	return slot;
}

/* Makes tgid a peer at hops from the target; returns whether it became one. */
static __always_inline bool add_peer(__u32 tgid, __u32 hops)
{
	if (hops > PEER_HOPS)
		return false;
	__u8 kind = KIND_PEER + hops - 1;
	add_target_slot(tgid);
	/* BPF_NOEXIST: a target, or a peer already, stays what it is. */
	return bpf_map_update_elem(&targets, &tgid, &kind, BPF_NOEXIST) == 0;
}

static __always_inline __u32 hops_of(__u8 kind)
{
	return kind == KIND_TARGET ? 0 : kind - KIND_PEER + 1;
}

extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* Sends the wait the waker of w was in before it woke w's task (by_*), as
 * its process's: the one hop of a holder that may be gone. */
static __always_inline void send_waker_wait(struct recent_wait *w)
{
	struct offcpu_event *e = reserve_event(sizeof(*e), LOST_OFFCPU);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->h.ts = w->by_end;
	e->h.pid = w->waker_pid;
	e->h.tid = w->waker_tid;
	e->h.kind = EV_OFFCPU;
	e->h.cpu = bpf_get_smp_processor_id();
	__builtin_memcpy(e->h.comm, w->waker_comm, sizeof(e->h.comm));
	e->off_ns = w->by_end - w->by_start;
	e->waits = 1;
	e->max_ns = e->off_ns;
	e->start_ts = w->by_start;
	e->state = w->by_state;
	e->stack_id = -1;
	e->syscall = w->by_syscall;
	e->fd = -1;
	e->outside = 1;
	e->waker_sock.nr = w->by_waker_nr;
	submit_event(e);
}

/* Sends the noted waits of a task (pid, tid) that ended after since, as a
 * peer's; further is the waker of the last one sent that is a process
 * outside the capture (0: none), for the caller to follow one hop further.
 * The task crosses the global functions below as a number (their arguments
 * are scalars or memory), its history as memory. */
struct recent_args {
	__u64 task;
	__u64 since;
	__u64 now;
	__u64 waker_since;
	__u32 pid;
	__u32 tid;
	__u32 further;
	__u32 _pad;
};

/* One noted wait w, if it ended after since; returns nonzero when its event
 * could not be reserved (the ring is full: the rest would not fit either).
 * A global function: verified once, not for each of the history's four
 * waits in each of send_recent's two calls. */
__noinline int send_recent_wait(struct recent_wait *w, struct recent_args *a)
{
	if (!w || !a)
		return 0;
	if (!w->end || w->end <= a->since || w->end > a->now || w->start >= w->end)
		return 0;
	struct offcpu_event *e = reserve_event(sizeof(*e), LOST_OFFCPU);
	if (!e)
		return 1;
	struct task_struct *task = (struct task_struct *)a->task;
	__builtin_memset(e, 0, sizeof(*e));
	fill_hdr_of(&e->h, EV_OFFCPU, w->end, task, a->pid, a->tid);
	e->off_ns = w->end - w->start;
	e->waits = 1;
	e->max_ns = e->off_ns;
	e->start_ts = w->start;
	e->state = w->state;
	e->stack_id = -1;
	e->syscall = w->syscall;
	e->fd = w->fd;
	e->outside = 1;
	e->waker_pid = w->waker_pid;
	e->waker_tid = w->waker_tid;
	__builtin_memcpy(e->waker_comm, w->waker_comm, sizeof(e->waker_comm));
	e->waker_sock = w->sock;
	e->waker_sock.nr = w->waker_nr;
	__u32 cls = syscall_class(w->syscall);
	if (cls && w->fd >= 0) {
		e->call = 1;
		file_ref_of(fd_file(task, w->fd), &e->f);
		e->fkind = e->f.kind;
	}
	submit_event(e);
	if (w->waker_pid && w->waker_pid != a->pid && w->waker_pid != self_pid) {
		a->further = w->waker_tid;
		a->waker_since = w->start;
		if (w->by_end)
			send_waker_wait(w);
	}
	return 0;
}

/* The waits of history r (NULL: none). */
static __always_inline void send_recent_of(struct recent *r, struct recent_args *a)
{
	a->further = 0;
	if (!r)
		return;
	for (int i = 0; i < RECENT_WAITS; i++) {
		if (send_recent_wait(&r->w[i], a)) {
			a->further = 0;
			return;
		}
	}
}

/* The current task has just become a peer at hops: sends its noted waits
 * that ended after since, and, when the last of them was ended by another
 * process new to the capture (a lock holder that let go), makes that one a
 * peer too and sends its own (tp_btf: a task found by pid is trusted). */
static __always_inline void send_recent(__u64 since, __u64 now, __u32 hops, bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *cur = bpf_get_current_task_btf();
	struct recent_args a = { .task = (__u64)cur, .since = since, .now = now, .pid = id >> 32, .tid = (__u32)id };
	send_recent_of(bpf_task_storage_get(&recent, cur, 0, 0), &a);
	__u32 waker_tid = a.further;
	if (!btf || !waker_tid)
		return;
	struct task_struct *t = bpf_task_from_pid(waker_tid);
	if (!t)
		return;
	/* Not t->mm: the holder may be exiting already (its session ended
	 * after the commit that let go), its history still readable. */
	__u32 tgid = t->tgid;
	if (!(t->flags & PF_KTHREAD) && task_kind(tgid) == KIND_NONE && add_peer(tgid, hops + 1)) {
		a.task = (__u64)t;
		a.pid = tgid;
		a.tid = waker_tid;
		send_recent_of(bpf_task_storage_get(&recent, t, 0, 0), &a);
		open_peer_wait(t, tgid, waker_tid);   /* asleep again since: its wait goes on as a peer's */
	}
	bpf_task_release(t);
}

#endif
