/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A file's identity and path: from an fd, a struct file or an inode to dev,
 * ino, gen and kind, described to user space once (the path walk runs in a
 * bpf_loop, describe_file is verified once). Included by whyslow.bpf.c, after
 * its maps and settings: one object, split along its sections. */
#ifndef WHYSLOW_FILE_BPF_H
#define WHYSLOW_FILE_BPF_H

static __always_inline __u32 inode_kind(struct inode *inode_p, struct file *file)
{
	struct inode *inode = CAST(struct inode, inode_p);
	umode_t mode = inode->i_mode;
	switch (mode & S_IFMT) {
	case S_IFREG:
		/* anon inodes are regular-looking inodes on the anon_inodefs superblock */
		return inode->i_sb->s_magic == 0x09041934 ? FK_ANON : FK_REG;
	case S_IFDIR: return FK_DIR;
	case S_IFCHR: return FK_CHR;
	case S_IFBLK: return FK_BLK;
	case S_IFIFO: return FK_FIFO;
	case S_IFLNK: return FK_LNK;
	case S_IFSOCK: {
		if (!file)
			return FK_SOCK_OTHER;
		struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
		__u16 family = sock->sk->__sk_common.skc_family;
		if (family == 2 || family == 10)
			return FK_SOCK_INET;
		if (family == 1)
			return FK_SOCK_UNIX;
		return FK_SOCK_OTHER;
	}
	}
	return inode->i_sb->s_magic == 0x09041934 ? FK_ANON : FK_UNKNOWN;
}

static __always_inline void inode_ref(struct inode *inode_p, struct file *file, struct file_ref *r)
{
	struct inode *inode = CAST(struct inode, inode_p);
	r->dev = inode->i_sb->s_dev;
	r->ino = inode->i_ino;
	r->gen = inode->i_generation;
	r->kind = inode_kind(inode_p, file);
}

static __always_inline struct file *fd_file(struct task_struct *task_p, int fd)
{
	if (fd < 0)
		return NULL;
	struct task_struct *task = CAST(struct task_struct, task_p);
	struct fdtable *fdt = task->files->fdt;
	if ((unsigned int)fd >= fdt->max_fds)
		return NULL;
	/* A variable index into the array, which the verifier refuses through a
	 * typed pointer: the slot's address is cast to a struct whose first
	 * member is a pointer (llist_node), and read with a plain, fault-safe
	 * load instead of a probe read call. */
	struct llist_node *slot = CAST(struct llist_node, (unsigned long)fdt->fd + (unsigned long)fd * sizeof(struct file *));
	return (struct file *)slot->next;
}

/* Per-CPU scratch for a file_event: too big for the stack, built here and
 * copied out. One slot per describe under way on the CPU: a program the
 * timer interrupt runs (the CPU sampler) can describe a file in the middle
 * of another program's describe on the same CPU. Sharing one slot, it
 * overwrote the event being built, which went out under its file: an
 * io_uring operation's file, marked seen, was never described (its ring's
 * anon inode got its path). As the kernel's bpf_trace_nest_level. */
#define SCRATCH_SLOTS 3   /* a task, a softirq, a hardirq */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct file_event);
} file_scratch SEC(".maps");

/* Describes under way on this CPU: the slot of the next one. An interrupt's
 * describe ends before the one it interrupted resumes, so a plain count is
 * enough. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} file_nest SEC(".maps");

/* Tests only (describeHold in Go): hold each describe in a target's task
 * context open this long, so that the timer tick lands inside it. Zero
 * prunes the code at load. */
const volatile __u64 describe_hold_ns = 0;

static long hold_step(__u32 i, __u64 *until)
{
	return bpf_ktime_get_ns() >= *until;
}

/* The dentry and mount as plain pointers: the callback's argument types
 * go into the BTF of every program that describes a file, and struct
 * dentry and struct mount would bring most of the kernel's types with them
 * (56 KB each, marshalled and parsed again for each program at load). */
struct walk_ctx {
	void *d;      /* struct dentry * */
	void *mnt;    /* struct mount * */
	__u32 depth;
	__u32 off;    /* bytes of names written */
	__u32 flags;
	__u32 slot;   /* of file_scratch */
};

/* One step of the walk from leaf to root, crossing mounts when the mount is
 * known. A bpf_loop callback, so the verifier checks it once. */
static long walk_step(__u32 i, struct walk_ctx *c)
{
	__u32 slot = c->slot;
	struct file_event *e = bpf_map_lookup_elem(&file_scratch, &slot);
	if (!e)
		return 1;
	/* locals, not c->...: CO-RE must not relocate through struct walk_ctx */
	struct dentry *d = c->d;
	struct mount *mnt = c->mnt;
	if (mnt) {
		struct dentry *mnt_root = BPF_CORE_READ(mnt, mnt.mnt_root);
		if (d == mnt_root) {
			struct mount *parent = BPF_CORE_READ(mnt, mnt_parent);
			if (parent == mnt)
				return 1;
			c->d = BPF_CORE_READ(mnt, mnt_mountpoint);
			c->mnt = parent;
			return 0;
		}
	}
	struct dentry *p = BPF_CORE_READ(d, d_parent);
	if (!p || p == d)
		return 1;
	if (c->depth >= PATH_DEPTH) {
		c->flags |= FILEF_TRUNCATED;
		return 1;
	}
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	__u32 off = c->off;
	/* PATH_DEPTH names of NAME_MAX_LEN fit NAMES_BYTES: never cut here */
	long n = bpf_probe_read_kernel_str(&e->names[off & (NAMES_BYTES - 1)], NAME_MAX_LEN, name);
	if (n <= 0) {
		e->names[off & (NAMES_BYTES - 1)] = 0;   /* unreadable: an empty name */
		n = 1;
	}
	c->off = off + n;
	c->depth++;
	c->d = p;
	return 0;
}

static __always_inline void sock_addrs(struct file_event *e, struct file *file)
{
	struct socket *sock = BPF_CORE_READ(file, private_data);
	struct sock *sk = BPF_CORE_READ(sock, sk);
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	e->family = family;
	e->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == 2) {
		BPF_CORE_READ_INTO(&e->laddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO(&e->raddr, sk, __sk_common.skc_daddr);
	} else if (family == 10) {
		BPF_CORE_READ_INTO(&e->laddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&e->raddr, sk, __sk_common.skc_v6_daddr);
	}
}

/* A unix socket's other end: its sock, and that sock's inode number once it
 * has a socket (accept gives it one). */
static __always_inline struct sock *unix_peer(struct file *file)
{
	struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
	return CAST(struct unix_sock, sock->sk)->peer;
}

static __always_inline __u64 sock_ino(struct sock *sk)
{
	if (!sk)
		return 0;
	struct socket *s = CAST(struct sock, sk)->sk_socket;
	if (!s)
		return 0;
	/* SOCK_INODE(): the inode allocated with the socket */
	struct inode *inode = (void *)s - bpf_core_field_offset(struct socket_alloc, socket) +
			      bpf_core_field_offset(struct socket_alloc, vfs_inode);
	return CAST(struct inode, inode)->i_ino;
}

/* The server's address of a unix connection: the socket's own when bound,
 * else its peer's. */
static __always_inline void unix_addrs(struct file_event *e, struct file *file)
{
	struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
	struct unix_sock *u = CAST(struct unix_sock, sock->sk);
	struct sock *peer = u->peer;
	e->peer_ino = sock_ino(peer);
	struct unix_address *addr = u->addr;
	if (addr)
		e->flags |= FILEF_UNIX_BOUND;
	else if (peer)
		addr = CAST(struct unix_sock, peer)->addr;
	if (!addr)
		return;
	int len = CAST(struct unix_address, addr)->len - 2;   /* less sun_family */
	if (len <= 0)
		return;
	e->unix_len = len > UNIX_PATH_LEN ? UNIX_PATH_LEN : len;
	bpf_probe_read_kernel(e->unix_path, sizeof(e->unix_path), (void *)addr + bpf_core_field_offset(struct unix_address, name) + 2);
}

/* Describes a file to user space once per (dev, ino, gen); sockets again
 * once they are connected (a unix one again once its peer has a socket). */
static __always_inline void describe_inline(struct file *file, struct inode *inode, struct dentry *dentry,
					    struct vfsmount *mnt, struct file_ref *r)
{
	struct seen_key k = { .dev = r->dev, .gen = r->gen, .ino = r->ino };
	__u8 state = 1;
	if (r->kind == FK_SOCK_INET && file) {
		/* Connected once it has both ports: connect sets its peer's, then
		 * searches for its own (tcp_v4_connect), and the sampler or a
		 * wakeup may describe it in between. */
		struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
		if (sock->sk->__sk_common.skc_dport && sock->sk->__sk_common.skc_num)
			state = 2;
	} else if (r->kind == FK_SOCK_UNIX && file) {
		struct sock *peer = unix_peer(file);
		if (peer)
			state = sock_ino(peer) ? 3 : 2;
	}
	__u8 *old = bpf_map_lookup_elem(&seen, &k);
	if (old && *old >= state)
		return;
	__u32 zero = 0;
	__u32 *nest = bpf_map_lookup_elem(&file_nest, &zero);
	if (!nest)
		return;
	__u32 slot = *nest;
	if (slot >= SCRATCH_SLOTS)
		return;   /* left unseen: described at its next sight */
	struct file_event *e = bpf_map_lookup_elem(&file_scratch, &slot);
	if (!e)
		return;
	*(volatile __u32 *)nest = slot + 1;
	bpf_map_update_elem(&seen, &k, &state, BPF_ANY);

	fill_hdr(&e->h, EV_FILE);
	e->f = *r;
	e->flags = 0;
	e->family = 0;
	e->lport = 0;
	e->rport = 0;
	e->unix_len = 0;
	e->peer_ino = 0;
	__builtin_memset(e->laddr, 0, sizeof(e->laddr));
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	e->size = BPF_CORE_READ(inode, i_size);
	if (BPF_CORE_READ(inode, __i_nlink) == 0)
		e->flags |= FILEF_DELETED;
	if (r->kind == FK_SOCK_INET && file)
		sock_addrs(e, file);
	else if (r->kind == FK_SOCK_UNIX && file)
		unix_addrs(e, file);
	e->depth = 0;
	__u32 c_off = 0;
	if (describe_hold_ns && slot == 0 && is_target(bpf_get_current_pid_tgid() >> 32)) {
		__u64 until = bpf_ktime_get_ns() + describe_hold_ns;
		bpf_loop(1 << 23, hold_step, &until, 0);
	}
	if (dentry) {
		struct walk_ctx c = { .d = dentry, .slot = slot };
		if (mnt)
			c.mnt = (void *)mnt - bpf_core_field_offset(struct mount, mnt);
		else
			c.flags = FILEF_NO_MOUNT;
		bpf_loop(PATH_DEPTH + 8, walk_step, &c, 0);
		e->depth = c.depth;
		e->flags |= c.flags;
		c_off = c.off;
	}
	/* Only the bytes the names take: most paths are a few short components,
	 * and a burst of new files (a build, a package install) then fits the
	 * meta ring many times over. */
	if (c_off > NAMES_BYTES)
		c_off = NAMES_BYTES;
	__u64 size = offsetof(struct file_event, names) + c_off;
	if (output_meta(e, size, LOST_FILE))
		bpf_map_delete_elem(&seen, &k);
	*(volatile __u32 *)nest = slot;
}

/* describe as a global function: the verifier checks it once, not at each
 * of the dozen places a file is identified (that was most of start-up).
 * Kernel pointers cross the call in memory, where the callee reads them as
 * numbers: a global function's arguments must be scalars or memory. */
struct describe_args {
	__u64 file, inode, dentry, mnt;
	struct file_ref r;
};

__noinline int describe_file(struct describe_args *a)
{
	if (!a || !a->inode)
		return 0;
	describe_inline((struct file *)a->file, (struct inode *)a->inode, (struct dentry *)a->dentry,
			(struct vfsmount *)a->mnt, &a->r);
	return 0;
}

static __always_inline void describe(struct file *file, struct inode *inode, struct dentry *dentry,
				     struct vfsmount *mnt, struct file_ref *r)
{
	struct describe_args a = { .file = (__u64)file, .inode = (__u64)inode, .dentry = (__u64)dentry,
				   .mnt = (__u64)mnt, .r = *r };
	describe_file(&a);
}

static __always_inline void file_ref_of(struct file *file, struct file_ref *r)
{
	if (!file)
		return;
	struct file *f = CAST(struct file, file);
	struct inode *inode = f->f_inode;
	if (!inode)
		return;
	inode_ref(inode, file, r);
	describe(file, inode, f->f_path.dentry, f->f_path.mnt, r);
}

static __always_inline void fd_ref(int fd, struct file_ref *r)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	file_ref_of(fd_file(task, fd), r);
}

/* An inode met without a struct file (page cache, writeback): path from its first dentry alias. */
static __always_inline void inode_only_ref(struct inode *inode, struct file_ref *r)
{
	inode_ref(inode, NULL, r);
	struct hlist_node *first = CAST(struct inode, inode)->i_dentry.first;
	struct dentry *d = NULL;
	if (first)
		d = (void *)first - bpf_core_field_offset(struct dentry, d_u.d_alias);
	describe(NULL, inode, d, NULL, r);
}

/* ---- the last file per thread ---- */

/* file_ref_of through the thread's one-file cache. A hit needs the same
 * struct file, the same inode, and the same inode number and generation, so
 * a freed and reused struct is never mistaken for the file it replaced. */
static __always_inline void file_ref_cached(struct thread_state *ts, struct file *file, struct file_ref *r)
{
	if (!file)
		return;
	struct inode *inode = CAST(struct file, file)->f_inode;
	if (!inode)
		return;
	struct inode *ic = CAST(struct inode, inode);
	if ((__u64)file == ts->last_file && (__u64)inode == ts->last_inode &&
	    ic->i_ino == ts->last_ref.ino && ic->i_generation == ts->last_ref.gen) {
		*r = ts->last_ref;
		return;
	}
	file_ref_of(file, r);
	ts->last_file = (__u64)file;
	ts->last_inode = (__u64)inode;
	ts->last_ref = *r;
}

static __always_inline void fd_ref_cached(struct thread_state *ts, int fd, struct file_ref *r)
{
	file_ref_cached(ts, fd_file((void *)bpf_get_current_task(), fd), r);
}

/* The file of fd in the current thread, through its cache, as a global
 * function: the verifier checks the fd table walk and the file's identity
 * once per program, not at each place a wait or a sample reads the file of
 * the call it is in (twice in sched_switch). */
__noinline int fd_ref_current(int fd, struct file_ref *r)
{
	if (!r)
		return 0;
	struct thread_state *ts = thread_state(true);
	if (ts)
		fd_ref_cached(ts, fd, r);
	return 0;
}

#endif
