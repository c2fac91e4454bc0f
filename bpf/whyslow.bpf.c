//go:build ignore
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* whyslow's kernel side: tracepoints only (tp_btf with raw_tp twins), no kprobes.
 * Each handler is one static function; HANDLER() exposes it twice so the loader
 * can pick the flavour this kernel accepts. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "whyslow.h"
#include "syscalls.h"

/* mode bits: vmlinux.h carries types, not the uapi macros */
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFLNK 0120000
#define S_IFREG 0100000
#define S_IFBLK 0060000
#define S_IFDIR 0040000
#define S_IFCHR 0020000
#define S_IFIFO 0010000

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Settings, fixed before load so the verifier prunes what is off. */
const volatile bool system_wide = false;
const volatile bool full = false;          /* stream every I/O syscall */
const volatile __u64 slow_ns = 1000000;    /* default level: stream syscalls at least this slow */
const volatile __u32 self_pid = 0;         /* whyslow itself, never traced */
const volatile bool by_request = false;    /* stream the target's socket calls, for request analysis */
const volatile bool payload = false;       /* and take each request's first bytes (its label) */
/* Per-call hooks (sys_enter, sys_exit) are loaded: --syscalls, --full,
 * --requests. Without them (the default level) the syscall and file of each
 * wait are read at the context switch, from the registers the call saved. */
const volatile bool syscall_hooks = false;
/* Take the kernel stack of interruptible waits too (for flame graphs of them). */
const volatile bool all_stacks = false;

extern int CONFIG_HZ __kconfig;

/* Hot paths read kernel structs with plain loads through bpf_rdonly_cast
 * (fault-safe, CO-RE relocated) instead of one bpf_probe_read_kernel call per
 * field: a syscall's file identity costs a few nanoseconds, not a microsecond.
 * libbpf 1.1 has no bpf_core_cast, so the kfunc is declared here. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define CAST(type, p) ((type *)bpf_rdonly_cast((void *)(p), bpf_core_type_id_kernel(type)))

/* Wake the reader only when the ring is filling: it polls every 50 ms anyway,
 * and a wakeup per event costs more than the event. Every ring, every event:
 * one wakeup per block completion cost an fsync-bound program (SQLite
 * commits) a fifth of its throughput, the reader taking the CPU its
 * wakeup was about to need. */
static __always_inline __u64 wake_flags(void *rb)
{
	/* a quarter full: the reader has time to come before it overflows */
	return bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(rb, BPF_RB_RING_SIZE) / 4 ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_NR);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* The target set: tgids followed through fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} targets SEC(".maps");

struct inflight {
	__u64 ts;
	__u64 req;
	__u64 buf;       /* user buffer of a read: a request's first bytes */
	__s32 fd;
	__s32 fd2;
	__u32 nr;
	__u32 flags;
	__u32 blocked;
	__u32 _pad;
	struct file_ref f;
	struct file_ref f2;
};

/* Per-thread state in task local storage: the syscall in flight, and the
 * thread's last file (struct file and inode pointers with the identity they
 * had), so repeated calls on one fd are not identified again. */
struct thread_state {
	struct inflight in;
	__u32 active;
	__s32 stack_id;     /* the last sync wait's stack, */
	__u64 stack_ts;     /* when it was taken, */
	__s64 stack_nr;     /* and in which syscall (see wait_stack) */
	__u64 last_file;
	__u64 last_inode;
	struct file_ref last_ref;
};
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

static __always_inline struct thread_state *thread_state(bool create)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* The syscall the current thread is inside, if traced. */
static __always_inline struct inflight *current_inflight(void)
{
	struct thread_state *ts = thread_state(false);
	return ts && ts->active ? &ts->in : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct agg_key);
	__type(value, struct agg_val);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} agg SEC(".maps");

/* Maps written rarely allocate on demand (BPF_F_NO_PREALLOC): preallocating
 * tens of megabytes made start-up slow. Maps touched at every context switch
 * stay preallocated. */

/* Files already described to user space (dev, ino, gen) -> 1, or 2 for a socket with a peer. */
struct seen_key {
	__u32 dev;
	__u32 gen;
	__u64 ino;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct seen_key);
	__type(value, __u8);
} seen SEC(".maps");

struct offstart {
	__u64 ts;
	__u32 state;
	__s32 stack_id;
	__s32 syscall;
	__u32 pid;
	/* Without syscall hooks: the call the thread waits in, read at the switch
	 * (cls 0: none worth a syscalls row). other: a process outside the
	 * targets, in a sync call. */
	__u32 cls;
	__u32 other;
	__s32 fd;
	__u32 flags;
	__u64 req;
	struct file_ref f;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct offstart);
} offcpu_start SEC(".maps");

/* Threads already off CPU when capture began (attach): tid -> when capture
 * began. Their first switch-in ends a wait whose start was not seen. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} waiting_at_start SEC(".maps");

struct waker {
	__u64 ts;
	__u32 pid;
	__u32 tid;
	char comm[TASK_COMM_LEN];
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct waker);
} wakers SEC(".maps");

/* LRU: threads come and go in a long system-wide recording. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct cpu_val);
} cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct rqinfo {
	__u64 insert_ts;
	__u64 issue_ts;
	__u32 pid;
	__u32 tid;
	char comm[TASK_COMM_LEN];
	struct file_ref f;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct rqinfo);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct dirty_key);
	__type(value, struct dirty_val);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} dirty SEC(".maps");

struct uring_pending {
	__u64 ts;
	__u64 user_data;
	__u32 pid;
	__u32 tid;
	__u32 opcode;
	__s32 fd;
	char comm[TASK_COMM_LEN];
	struct file_ref f;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct uring_pending);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} uring_inflight SEC(".maps");

struct wb_start {
	__u64 ts;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct wb_start);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} wb_inflight SEC(".maps");

/* ---- helpers ---- */

static __always_inline void count_lost(__u32 source)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &source);
	if (n)
		(*n)++;
}

static __always_inline bool is_target(__u32 tgid)
{
	if (tgid == self_pid)
		return false;
	if (system_wide)
		return tgid != 0;
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

static __always_inline void fill_hdr(struct hdr *h, __u8 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	h->ts = bpf_ktime_get_ns();
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->kind = kind;
	h->cpu = bpf_get_smp_processor_id();
	h->cgroup = bpf_get_current_cgroup_id();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

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
	struct file *f = NULL;
	if (fd < 0)
		return NULL;
	struct task_struct *task = CAST(struct task_struct, task_p);
	struct fdtable *fdt = task->files->fdt;
	if ((unsigned int)fd >= fdt->max_fds)
		return NULL;
	/* a variable index into the array: one probe read */
	bpf_probe_read_kernel(&f, sizeof(f), (void *)((unsigned long)fdt->fd + (unsigned long)fd * sizeof(f)));
	return f;
}

/* Per-CPU scratch for a file_event: too big for the stack, built here and copied out. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct file_event);
} file_scratch SEC(".maps");

struct walk_ctx {
	struct dentry *d;
	struct mount *mnt;
	__u32 depth;
	__u32 flags;
};

/* One step of the walk from leaf to root, crossing mounts when the mount is
 * known. A bpf_loop callback, so the verifier checks it once. */
static long walk_step(__u32 i, struct walk_ctx *c)
{
	__u32 zero = 0;
	struct file_event *e = bpf_map_lookup_elem(&file_scratch, &zero);
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
	bpf_probe_read_kernel_str(e->names[c->depth & (PATH_DEPTH - 1)], NAME_LEN, name);
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

/* Describes a file to user space once per (dev, ino, gen); sockets again once they have a peer. */
static __always_inline void describe_inline(struct file *file, struct inode *inode, struct dentry *dentry,
					    struct vfsmount *mnt, struct file_ref *r)
{
	struct seen_key k = { .dev = r->dev, .gen = r->gen, .ino = r->ino };
	__u8 state = 1;
	if (r->kind == FK_SOCK_INET && file) {
		struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
		if (sock->sk->__sk_common.skc_dport)
			state = 2;
	}
	__u8 *old = bpf_map_lookup_elem(&seen, &k);
	if (old && *old >= state)
		return;
	bpf_map_update_elem(&seen, &k, &state, BPF_ANY);

	__u32 zero = 0;
	struct file_event *e = bpf_map_lookup_elem(&file_scratch, &zero);
	if (!e)
		return;
	fill_hdr(&e->h, EV_FILE);
	e->f = *r;
	e->flags = 0;
	e->family = 0;
	e->lport = 0;
	e->rport = 0;
	__builtin_memset(e->laddr, 0, sizeof(e->laddr));
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	e->size = BPF_CORE_READ(inode, i_size);
	if (BPF_CORE_READ(inode, __i_nlink) == 0)
		e->flags |= FILEF_DELETED;
	if (r->kind == FK_SOCK_INET && file)
		sock_addrs(e, file);
	e->depth = 0;
	if (dentry) {
		struct walk_ctx c = { .d = dentry };
		if (mnt)
			c.mnt = (void *)mnt - bpf_core_field_offset(struct mount, mnt);
		else
			c.flags = FILEF_NO_MOUNT;
		bpf_loop(PATH_DEPTH + 8, walk_step, &c, 0);
		e->depth = c.depth;
		e->flags |= c.flags;
	}
	if (bpf_ringbuf_output(&meta, e, sizeof(*e), wake_flags(&meta))) {
		count_lost(LOST_FILE);
		bpf_map_delete_elem(&seen, &k);
	}
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
	struct hlist_node *first = BPF_CORE_READ(inode, i_dentry.first);
	struct dentry *d = NULL;
	if (first)
		d = (void *)first - bpf_core_field_offset(struct dentry, d_u.d_alias);
	describe(NULL, inode, d, NULL, r);
}

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

/* ---- I/O syscalls ---- */

/* fd_ref through the thread's one-file cache. A hit needs the same struct
 * file, the same inode, and the same inode number and generation, so a freed
 * and reused struct is never mistaken for the file it replaced. */
static __always_inline void fd_ref_cached(struct thread_state *ts, int fd, struct file_ref *r)
{
	struct file *file = fd_file((void *)bpf_get_current_task(), fd);
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
		/* only record locks: F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW */
		if (a1 != 6 && a1 != 7 && a1 != 37 && a1 != 38)
			return false;
		in->fd = a0; in->flags = a1; break;
	case NR_mmap:
		/* only file mappings */
		if ((long)a4 < 0 || (a3 & 0x20))
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
		in->req = a0; in->fd = -100; break;
	case NR_unlinkat:
		in->req = a1; in->fd = a0; in->flags = a2; break;
	}
	return true;
}

static __always_inline int on_sys_enter(struct pt_regs *regs, long id)
{
	__u32 cls = syscall_class(id);
	if (!cls)
		return 0;
	__u64 pidtgid = bpf_get_current_pid_tgid();
	__u32 tgid = pidtgid >> 32, tid = (__u32)pidtgid;
	/* Syncs are traced for everyone: they are how other processes hurt the target. */
	if (!is_target(tgid) && !(cls == CLS_SYNC && tgid != self_pid))
		return 0;

	struct thread_state *ts = thread_state(true);
	if (!ts)
		return 0;
	struct inflight in = {};
	in.ts = bpf_ktime_get_ns();
	if (!syscall_args(id, CAST(struct pt_regs, regs), &in))
		return 0;
	if (cls == CLS_UNLINK) {
		/* the directory a relative name lives in: dirfd, or the cwd */
		if ((int)in.fd == -100) {
			struct task_struct *task = (void *)bpf_get_current_task();
			struct dentry *d = BPF_CORE_READ(task, fs, pwd.dentry);
			struct inode *inode = BPF_CORE_READ(d, d_inode);
			if (inode) {
				inode_ref(inode, NULL, &in.f);
				describe(NULL, inode, d, BPF_CORE_READ(task, fs, pwd.mnt), &in.f);
			}
		} else {
			fd_ref(in.fd, &in.f);
		}
		ts->in = in;
		ts->active = 1;
		return 0;
	}
	/* Files are identified at entry, while the fd still names them (close, fsync). */
	if (in.fd >= 0 && cls != CLS_OPEN)
		fd_ref_cached(ts, in.fd, &in.f);
	if (in.fd2 >= 0)
		fd_ref(in.fd2, &in.f2);
	ts->in = in;
	ts->active = 1;
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
	if (ret < 0 && ret != -11 /* EAGAIN: polling, not a failure */)
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
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
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
	struct unlink_event *e = bpf_ringbuf_reserve(&meta, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_META);
		return;
	}
	fill_hdr(&e->h, EV_UNLINK);
	e->h.ts = in->ts;
	e->ret = ret;
	e->dur = dur;
	e->nr = in->nr;
	e->_pad = 0;
	e->dir = in->f;
	if (bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)in->req) < 0)
		e->name[0] = 0;
	bpf_ringbuf_submit(e, wake_flags(&meta));
}

/* Per connection, what the target did last: 1 wrote, 2 read. A read after a
 * write (or the first on a connection) begins a request. */
struct conn_key {
	__u32 pid;
	__u32 dev;
	__u64 ino;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct conn_key);
	__type(value, __u8);
} conn_dir SEC(".maps");

static __always_inline void note_request(struct inflight *in, __u32 pid, long ret)
{
	if (ret <= 0 || !is_socket(&in->f))
		return;
	__u32 cls = syscall_class(in->nr);
	bool read = cls == CLS_READ || in->nr == NR_recvfrom || in->nr == NR_recvmsg;
	bool write = cls == CLS_WRITE || in->nr == NR_sendto || in->nr == NR_sendmsg || in->nr == NR_sendfile;
	if (!read && !write)
		return;
	struct conn_key k = { .pid = pid, .dev = in->f.dev, .ino = in->f.ino };
	__u8 *last = bpf_map_lookup_elem(&conn_dir, &k);
	__u8 now = read ? 2 : 1;
	bool first = read && (!last || *last != 2);
	if (!last || *last != now)
		bpf_map_update_elem(&conn_dir, &k, &now, BPF_ANY);
	if (!first || !payload || !in->buf)
		return;
	struct payload_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_PAYLOAD);
		return;
	}
	fill_hdr(&e->h, EV_PAYLOAD);
	e->h.ts = in->ts;
	e->f = in->f;
	__u32 n = ret > PAYLOAD_LEN ? PAYLOAD_LEN : ret;
	e->len = 0;
	e->_pad = 0;
	if (n > 0 && n <= PAYLOAD_LEN && bpf_probe_read_user(e->data, n, (void *)in->buf) == 0)
		e->len = n;
	bpf_ringbuf_submit(e, wake_flags(&events));
}

static __always_inline int on_sys_exit(struct pt_regs *regs, long ret)
{
	__u64 pidtgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pidtgid;
	struct thread_state *ts = thread_state(false);
	if (!ts || !ts->active)
		return 0;
	ts->active = 0;
	struct inflight *in = &ts->in;
	__u64 now = bpf_ktime_get_ns();
	__u64 dur = now - in->ts;
	__u32 cls = syscall_class(in->nr);

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
	if (by_request)
		note_request(in, pidtgid >> 32, ret);
	if (!stream_it(in, cls, ret, dur)) {
		aggregate(in, pidtgid >> 32, tid, ret, now, dur);
		return 0;
	}
	struct syscall_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_SYSCALL);
		return 0;
	}
	fill_hdr(&e->h, EV_SYSCALL);
	e->h.ts = in->ts;
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
	bpf_ringbuf_submit(e, wake_flags(&events));
	return 0;
}

/* ---- scheduler: off-CPU intervals, wakers, on-CPU time ---- */

static __always_inline __u32 state_char(bool preempt, unsigned int state)
{
	if (preempt || state == 0)
		return 'R';
	if (state & 2)
		return 'D';
	if (state & 1)
		return 'S';
	if (state & 4)
		return 'T';
	if (state & 8)
		return 't';
	return '?';
}

/* The syscall a thread is switched out in, read from its saved registers
 * (default level: no entry hook). Unlinks are left out: their name is only
 * worth reading at entry. */
static __always_inline void wait_syscall(struct offstart *s, struct pt_regs *regs)
{
	__u32 cls = syscall_class(s->syscall);
	if (!cls || cls == CLS_UNLINK)
		return;
	struct inflight in = {};
	if (!syscall_args(s->syscall, regs, &in))
		return;
	s->cls = cls;
	s->fd = in.fd;
	s->req = in.req;
	s->flags = in.flags;
	if (in.fd >= 0 && cls != CLS_OPEN) {
		struct thread_state *ts = thread_state(true);
		if (ts)
			fd_ref_cached(ts, in.fd, &s->f);
	}
}

/* Another process's wait inside a sync call, as a syscalls row covering the
 * wait only (default level): ret 0 (unknown), no bytes. The target's own
 * waits ride on their offcpu_event (call). */
static __always_inline void emit_wait(struct task_struct *task, __u32 pid, __u32 tid,
				      struct offstart *s, __u64 now)
{
	struct syscall_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_SYSCALL);
		return;
	}
	e->h.ts = s->ts;
	e->h.pid = pid;
	e->h.tid = tid;
	e->h.kind = EV_SYSCALL;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h._pad = 0;
	e->h.cgroup = 0;
	BPF_CORE_READ_STR_INTO(&e->h.comm, task, comm);
	e->dur = now - s->ts;
	e->ret = 0;
	e->req = s->req;
	e->fd = s->fd;
	e->fd2 = -1;
	e->nr = s->syscall;
	e->flags = s->flags;
	e->blocked = BLOCKED_WAIT;
	e->_pad = 0;
	e->f = s->f;
	__builtin_memset(&e->f2, 0, sizeof(e->f2));
	bpf_ringbuf_submit(e, wake_flags(&events));
}

/* The kernel stack of a wait, or -1. Unwinding is most of a context
 * switch's cost (~3 µs), so it is spent where the stack tells the reason:
 * - an interruptible wait (futex, poll, pipe, socket, sleep, flock, wait4)
 *   is told by its syscall and file kind: no stack;
 * - a sync call is "sync" whatever it waits on, and waits a dozen times a
 *   call (each buffer, each page): its stack is taken once per 10 ms per
 *   thread, and reused for the waits between (an fsync loop ran 5% slower);
 * - other uninterruptible waits (disk, journal, page and inode locks,
 *   throttling look alike from the syscall) always get theirs.
 * all_stacks (--full) takes every one. */
#define SYNC_STACK_REUSE_NS 10000000ULL
static __always_inline __s32 wait_stack(void *ctx, __u32 state, long nr, __u64 now)
{
	if (state != 'D' && !all_stacks)
		return -1;
	struct thread_state *ts = NULL;
	bool sync = syscall_class(nr) == CLS_SYNC && !all_stacks;
	if (sync) {
		ts = thread_state(true);
		if (ts && ts->stack_nr == nr && now - ts->stack_ts < SYNC_STACK_REUSE_NS)
			return ts->stack_id;
	}
	__s32 id = bpf_get_stackid(ctx, &stacks, STACK_SKIP);
	if (id < 0 && id != -14 /* EFAULT: no stack */)
		count_lost(LOST_STACK);
	if (ts && id >= 0) {
		ts->stack_nr = nr;
		ts->stack_ts = now;
		ts->stack_id = id;
	}
	return id;
}

static __always_inline int on_switch(void *ctx, bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct task_struct *pv = CAST(struct task_struct, prev), *nx = CAST(struct task_struct, next);
	__u32 prev_tgid = pv->tgid, prev_tid = pv->pid;
	__u32 next_tgid = nx->tgid, next_tid = nx->pid;

	/* A dying task's last switch is no wait: it never runs again. */
	bool dead = (prev_state & 0x80) || pv->exit_state;
	if (prev_tid && dead) {
		bpf_map_delete_elem(&offcpu_start, &prev_tid);
		bpf_map_delete_elem(&wakers, &prev_tid);
	}
	if (prev_tid && !dead && is_target(prev_tgid)) {
		struct offstart s = {};
		s.ts = now;
		s.pid = prev_tgid;
		s.state = state_char(preempt, prev_state);
		s.syscall = -1;
		s.stack_id = -1;
		if (s.state != 'R') {
			struct inflight *in = syscall_hooks ? current_inflight() : NULL; /* prev is current here */
			if (in) {
				in->blocked = 1;
				s.syscall = in->nr;
				s.f.kind = in->f.kind;
			} else {
				struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
				s.syscall = regs->orig_ax;
				if (!syscall_hooks)
					wait_syscall(&s, regs);
			}
			s.stack_id = wait_stack(ctx, s.state, s.syscall, now);
		}
		bpf_map_update_elem(&offcpu_start, &prev_tid, &s, BPF_ANY);
	} else if (!syscall_hooks && prev_tid && !dead && prev_tgid != self_pid && pv->mm &&
		   state_char(preempt, prev_state) != 'R') {
		/* Another process's sync: how others hurt the target. */
		struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(bpf_get_current_task_btf()));
		long nr = regs->orig_ax;
		if (syscall_class(nr) == CLS_SYNC) {
			struct offstart s = {};
			s.ts = now;
			s.pid = prev_tgid;
			s.syscall = nr;
			s.other = 1;
			wait_syscall(&s, regs);
			bpf_map_update_elem(&offcpu_start, &prev_tid, &s, BPF_ANY);
		}
	}
	/* close the on-CPU stretch, dying or not */
	struct cpu_val *pc = prev_tid ? bpf_map_lookup_elem(&cpu, &prev_tid) : NULL;
	if (pc && pc->on_since) {
		pc->oncpu_ns += now - pc->on_since;
		pc->on_since = 0;
	}

	if (!syscall_hooks && next_tid && !is_target(next_tgid)) {
		struct offstart *o = bpf_map_lookup_elem(&offcpu_start, &next_tid);
		if (o && o->other) {
			emit_wait(nx, next_tgid, next_tid, o, now);
			bpf_map_delete_elem(&offcpu_start, &next_tid);
		}
		return 0;
	}
	if (next_tid && is_target(next_tgid)) {
		struct cpu_val *c = bpf_map_lookup_elem(&cpu, &next_tid);
		if (!c) {
			struct cpu_val zero = {};
			zero.pid = next_tgid;
			BPF_CORE_READ_STR_INTO(&zero.comm, next, comm);
			bpf_map_update_elem(&cpu, &next_tid, &zero, BPF_NOEXIST);
			c = bpf_map_lookup_elem(&cpu, &next_tid);
		}
		if (c)
			c->on_since = now;

		struct offstart *s = bpf_map_lookup_elem(&offcpu_start, &next_tid);
		struct offstart before = {};
		if (!s) {
			/* No switch-out seen: a wait begun before capture, if user
			 * space found the thread waiting when it attached. */
			__u64 *since = bpf_map_lookup_elem(&waiting_at_start, &next_tid);
			if (!since)
				return 0;
			before.ts = *since;
			before.pid = next_tgid;
			before.state = '?';
			before.stack_id = STACK_BEFORE_CAPTURE;
			before.syscall = -1;
			bpf_map_delete_elem(&waiting_at_start, &next_tid);
			s = &before;
		}
		struct offcpu_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			count_lost(LOST_OFFCPU);
			bpf_map_delete_elem(&offcpu_start, &next_tid);
			return 0;
		}
		e->h.ts = now;
		e->h.pid = next_tgid;
		e->h.tid = next_tid;
		e->h.kind = EV_OFFCPU;
		e->h.cpu = bpf_get_smp_processor_id();
		e->h._pad = 0;
		e->h.cgroup = 0;
		BPF_CORE_READ_STR_INTO(&e->h.comm, next, comm);
		e->off_ns = now - s->ts;
		e->state = s->state;
		e->stack_id = s->stack_id;
		e->syscall = s->syscall;
		e->runq_ns = s->state == 'R' ? e->off_ns : 0;
		e->waker_pid = 0;
		e->waker_tid = 0;
		e->fkind = s->f.kind;
		__builtin_memset(e->waker_comm, 0, sizeof(e->waker_comm));
		e->call = !syscall_hooks && s->cls;
		e->fd = s->fd;
		e->req = s->req;
		e->flags = s->flags;
		e->_pad = 0;
		e->f = s->f;
		struct waker *w = bpf_map_lookup_elem(&wakers, &next_tid);
		if (w && w->ts >= s->ts) {
			e->runq_ns = now - w->ts;
			e->waker_pid = w->pid;
			e->waker_tid = w->tid;
			__builtin_memcpy(e->waker_comm, w->comm, sizeof(e->waker_comm));
		}
		bpf_ringbuf_submit(e, wake_flags(&events));
		bpf_map_delete_elem(&offcpu_start, &next_tid);
	}
	return 0;
}

/* ---- CPU samples at the local timer interrupt ---- */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_event);
} sample_scratch SEC(".maps");

/* The path argument of a call that names a file by path. */
static __always_inline unsigned long path_arg(long nr, struct pt_regs *rg)
{
	switch (nr) {
	case NR_open: case NR_creat: case NR_unlink: case NR_rmdir:
		return rg->di;
	case NR_openat: case NR_openat2: case NR_unlinkat:
		return rg->si;
	}
	return 0;
}

static __always_inline int on_tick(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (!task->pid || !is_target(tgid))
		return 0;
	__u32 zero = 0;
	struct sample_event *e = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!e)
		return 0;
	fill_hdr(&e->h, EV_SAMPLE);
	/* Whether the interrupt came from user mode is not in the tracepoint's
	 * arguments (and per-CPU irq_regs is not reachable here): user space
	 * tells from the kernel stack, which ends at the interrupt's entry when
	 * the thread was in user mode. */
	e->user = 0;
	e->syscall = -1;
	e->fd = -1;
	__builtin_memset(&e->f, 0, sizeof(e->f));
	e->path[0] = 0;
	e->stack_id = bpf_get_stackid(ctx, &stacks, STACK_SKIP);
	{
		struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(task));
		long nr = regs->orig_ax;
		e->syscall = nr;
		__u32 cls = syscall_class(nr);
		struct inflight in = {};
		if (cls && syscall_args(nr, regs, &in)) {
			e->fd = in.fd;
			unsigned long p = path_arg(nr, regs);
			if (p)
				bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)p);
			else if (in.fd >= 0) {
				struct thread_state *ts = thread_state(true);
				if (ts)
					fd_ref_cached(ts, in.fd, &e->f);
			}
		}
	}
	if (bpf_ringbuf_output(&events, e, sizeof(*e), wake_flags(&events)))
		count_lost(LOST_SAMPLE);
	return 0;
}

/* prctl(PR_SET_NAME) and friends: the thread's on-CPU account takes the new
 * name, so reports do not name it by the one it started with. */
static __always_inline int on_rename(struct task_struct *task, const char *comm)
{
	struct task_struct *t = CAST(struct task_struct, task);
	if (!is_target(t->tgid))
		return 0;
	__u32 tid = t->pid;
	struct cpu_val *c = bpf_map_lookup_elem(&cpu, &tid);
	if (c)
		bpf_probe_read_kernel_str(c->comm, sizeof(c->comm), comm);
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	struct task_struct *t = CAST(struct task_struct, p);
	__u32 tgid = t->tgid;
	if (!is_target(tgid))
		return 0;
	__u32 tid = t->pid;
	__u64 id = bpf_get_current_pid_tgid();
	struct waker w = {};
	w.ts = bpf_ktime_get_ns();
	w.pid = id >> 32;
	w.tid = (__u32)id;
	bpf_get_current_comm(w.comm, sizeof(w.comm));
	bpf_map_update_elem(&wakers, &tid, &w, BPF_ANY);
	return 0;
}

/* ---- process lifecycle ---- */

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid), ctid = BPF_CORE_READ(child, pid);
	if (ptgid == self_pid)
		return 0;
	if (!system_wide && cpid == ctid && bpf_map_lookup_elem(&targets, &ptgid)) {
		__u8 one = 1;
		bpf_map_update_elem(&targets, &cpid, &one, BPF_ANY);
	}
	/* Threads are reported for targets only; processes for everyone, so that
	 * short-lived ones (sync, find) have a name and a parent. */
	if (cpid != ctid && !is_target(ptgid))
		return 0;
	struct fork_event *e = bpf_ringbuf_reserve(&meta, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_META);
		return 0;
	}
	fill_hdr(&e->h, EV_FORK);
	e->child_pid = cpid;
	e->child_tid = ctid;
	bpf_ringbuf_submit(e, wake_flags(&meta));
	return 0;
}

static __always_inline int on_exec(struct task_struct *p, struct linux_binprm *bprm)
{
	if (BPF_CORE_READ(p, tgid) == self_pid)
		return 0;
	struct exec_event *e = bpf_ringbuf_reserve(&meta, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_META);
		return 0;
	}
	fill_hdr(&e->h, EV_EXEC);
	/* the thread keeps its on-CPU account under its new name */
	struct cpu_val *c = bpf_map_lookup_elem(&cpu, &e->h.tid);
	if (c)
		__builtin_memcpy(c->comm, e->h.comm, sizeof(c->comm));
	e->ppid = BPF_CORE_READ(p, real_parent, tgid);
	const char *fn = BPF_CORE_READ(bprm, filename);
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), fn);
	unsigned long start = BPF_CORE_READ(p, mm, arg_start), end = BPF_CORE_READ(p, mm, arg_end);
	unsigned long len = end - start;
	if (len > EXEC_ARGS_LEN)
		len = EXEC_ARGS_LEN;
	e->args_len = 0;
	if (bpf_probe_read_user(e->args, len, (void *)start) == 0)
		e->args_len = len;
	bpf_ringbuf_submit(e, wake_flags(&meta));
	return 0;
}

static __always_inline int on_exit(struct task_struct *p, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	if (tgid == self_pid)
		return 0;
	if (tgid != tid && !is_target(tgid))
		return 0;
	struct exit_event *e = bpf_ringbuf_reserve(&meta, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_META);
		return 0;
	}
	fill_hdr(&e->h, EV_EXIT);
	e->code = BPF_CORE_READ(p, exit_code);
	e->group_dead = group_dead;
	bpf_ringbuf_submit(e, wake_flags(&meta));
	return 0;
}

/* ---- block I/O ---- */

static __always_inline __u32 rq_dev(struct request *rq)
{
	struct block_device *part = BPF_CORE_READ(rq, part);
	if (part)
		return BPF_CORE_READ(part, bd_dev);
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	return (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
}

/* The file whose data a request carries: the page cache page's owner when it
 * lives on this device (or is the device's own metadata); otherwise (O_DIRECT
 * from user pages, anonymous or shmem) the file of the submitter's syscall. */
static __always_inline void rq_file(struct request *rq, struct file_ref *r)
{
	struct page *page = BPF_CORE_READ(rq, bio, bi_io_vec, bv_page);
	if (page) {
		struct address_space *mapping = BPF_CORE_READ(page, mapping);
		if (mapping && !((unsigned long)mapping & 1)) {
			struct inode *host = BPF_CORE_READ(mapping, host);
			if (host) {
				struct file_ref pr = {};
				inode_ref(host, NULL, &pr);
				if (pr.kind == FK_BLK || pr.dev == rq_dev(rq)) {
					inode_only_ref(host, r);
					return;
				}
			}
		}
	}
	if (syscall_hooks) {
		struct inflight *in = current_inflight();
		if (in)
			*r = in->f;
		return;
	}
	/* No entry hook: the file of the call the issuer is in (O_DIRECT). */
	struct task_struct *task = bpf_get_current_task_btf();
	if (!task->mm)
		return;   /* a kernel thread: no syscall */
	struct pt_regs *regs = CAST(struct pt_regs, bpf_task_pt_regs(task));
	long nr = regs->orig_ax;
	__u32 cls = syscall_class(nr);
	struct inflight in = {};
	if (!cls || cls == CLS_OPEN || cls == CLS_UNLINK || !syscall_args(nr, regs, &in) || in.fd < 0)
		return;
	struct thread_state *ts = thread_state(true);
	if (ts)
		fd_ref_cached(ts, in.fd, r);
}

static __always_inline struct rqinfo *rq_track(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rqinfo *info = bpf_map_lookup_elem(&requests, &key);
	if (info)
		return info;
	struct rqinfo fresh = {};
	__u64 id = bpf_get_current_pid_tgid();
	fresh.pid = id >> 32;
	fresh.tid = (__u32)id;
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	rq_file(rq, &fresh.f);
	bpf_map_update_elem(&requests, &key, &fresh, BPF_ANY);
	return bpf_map_lookup_elem(&requests, &key);
}

static __always_inline int on_rq_insert(struct request *rq)
{
	struct rqinfo *info = rq_track(rq);
	if (info && !info->insert_ts)
		info->insert_ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int on_rq_issue(struct request *rq)
{
	struct rqinfo *info = rq_track(rq);
	if (info)
		info->issue_ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int on_rq_complete(struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct rqinfo *info = bpf_map_lookup_elem(&requests, &key);
	if (!info)
		return 0;
	struct block_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_BLOCK);
		bpf_map_delete_elem(&requests, &key);
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
	e->insert_ts = info->insert_ts ? info->insert_ts : info->issue_ts;
	e->issue_ts = info->issue_ts;
	e->sector = BPF_CORE_READ(rq, __sector);
	e->bytes = nr_bytes;
	e->dev = rq_dev(rq);
	__u32 flags = BPF_CORE_READ(rq, cmd_flags);
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
	bpf_ringbuf_submit(e, wake_flags(&events));
	bpf_map_delete_elem(&requests, &key);
	return 0;
}

/* ---- page cache and writeback ---- */

static __always_inline int on_dirty_folio(struct folio *folio, struct address_space *mapping)
{
	if (!mapping)
		return 0;
	struct inode *host = BPF_CORE_READ(mapping, host);
	if (!host)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) == self_pid)
		return 0;
	struct file_ref r = {};
	inode_only_ref(host, &r);
	struct dirty_key k = { .pid = id >> 32, .tid = (__u32)id, .dev = r.dev, .gen = r.gen, .ino = r.ino };
	__u64 pages = 1;
	unsigned long fl = 0;
	bpf_probe_read_kernel(&fl, sizeof(fl), folio);
	if (fl & (1ul << bpf_core_enum_value(enum pageflags, PG_head))) {
		if (bpf_core_field_exists(folio->_nr_pages))
			pages = BPF_CORE_READ(folio, _nr_pages);
	}
	__u64 now = bpf_ktime_get_ns();
	struct dirty_val *v = bpf_map_lookup_elem(&dirty, &k);
	if (!v) {
		struct dirty_val zero = {};
		zero.first_ts = now;
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
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
	struct throttle_event *e = bpf_ringbuf_reserve(&meta, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_META);
		return 0;
	}
	fill_hdr(&e->h, EV_THROTTLE);
	__u64 hz = CONFIG_HZ ? CONFIG_HZ : 250;
	e->pause_ns = (__u64)pause * 1000000000ull / hz;
	e->period_ns = (__u64)period * 1000000000ull / hz;
	e->dirtied = dirtied;
	e->bdi_dev = BPF_CORE_READ(wb, bdi, dev, devt);
	bpf_ringbuf_submit(e, wake_flags(&meta));
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
	struct writeback_event *e = bpf_ringbuf_reserve(&meta, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_META);
		return 0;
	}
	fill_hdr(&e->h, EV_WRITEBACK);
	__builtin_memset(&e->f, 0, sizeof(e->f));
	inode_only_ref(inode, &e->f);
	e->pages = nr_to_write - left;
	e->dur = start ? e->h.ts - start : 0;
	bpf_ringbuf_submit(e, wake_flags(&meta));
	return 0;
}

/* ---- io_uring ---- */

static __always_inline int on_uring_submit(struct io_kiocb *req)
{
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
	bpf_get_current_comm(p.comm, sizeof(p.comm));
	struct file *f = BPF_CORE_READ(req, file);
	if (f)
		file_ref_of(f, &p.f);
	else
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
	struct uring_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_URING);
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
	bpf_ringbuf_submit(e, wake_flags(&events));
	bpf_map_delete_elem(&uring_inflight, &key);
	return 0;
}

/* ---- entry points: tp_btf and raw_tp twins ---- */

#define TWIN(tp, name, args, call)                                            \
	SEC("tp_btf/" #tp) int BPF_PROG(btf_##name, args) { return call; }   \
	SEC("raw_tp/" #tp) int BPF_PROG(raw_##name, args) { return call; }

#define COMMA ,

TWIN(sys_enter, sys_enter, struct pt_regs *regs COMMA long id, on_sys_enter(regs, id))
TWIN(sys_exit, sys_exit, struct pt_regs *regs COMMA long ret, on_sys_exit(regs, ret))
TWIN(sched_switch, sched_switch,
     bool preempt COMMA struct task_struct *prev COMMA struct task_struct *next COMMA unsigned int prev_state,
     on_switch(ctx, preempt, prev, next, prev_state))
/* sched_waking, not sched_wakeup: it runs in the waker's context, while
 * sched_wakeup may run later on the target CPU (ttwu wake list) as swapper. */
TWIN(local_timer_entry, local_timer_entry, int vector, on_tick(ctx))
TWIN(sched_waking, sched_waking, struct task_struct *p, on_wakeup(p))
TWIN(task_rename, task_rename, struct task_struct *task COMMA const char *comm, on_rename(task, comm))
TWIN(sched_wakeup_new, sched_wakeup_new, struct task_struct *p, on_wakeup(p))
TWIN(sched_process_fork, sched_process_fork, struct task_struct *parent COMMA struct task_struct *child,
     on_fork(parent, child))
TWIN(sched_process_exec, sched_process_exec,
     struct task_struct *p COMMA pid_t old_pid COMMA struct linux_binprm *bprm, on_exec(p, bprm))
TWIN(sched_process_exit, sched_process_exit, struct task_struct *p COMMA bool group_dead, on_exit(p, group_dead))
TWIN(block_rq_insert, block_rq_insert, struct request *rq, on_rq_insert(rq))
TWIN(block_rq_issue, block_rq_issue, struct request *rq, on_rq_issue(rq))
TWIN(block_rq_complete, block_rq_complete,
     struct request *rq COMMA int error COMMA unsigned int nr_bytes, on_rq_complete(rq, error, nr_bytes))
TWIN(writeback_dirty_folio, writeback_dirty_folio, struct folio *folio COMMA struct address_space *mapping,
     on_dirty_folio(folio, mapping))
TWIN(balance_dirty_pages, balance_dirty_pages,
     struct bdi_writeback *wb COMMA struct dirty_throttle_control *dtc COMMA unsigned long dirty_ratelimit COMMA
     unsigned long task_ratelimit COMMA unsigned long dirtied COMMA unsigned long period COMMA long pause COMMA
     unsigned long start_time,
     on_balance_dirty_pages(dirtied, period, pause, wb))
TWIN(writeback_single_inode_start, wb_inode_start,
     struct inode *inode COMMA struct writeback_control *wbc COMMA unsigned long nr_to_write,
     on_wb_inode_start(inode))
TWIN(writeback_single_inode, wb_inode,
     struct inode *inode COMMA struct writeback_control *wbc COMMA unsigned long nr_to_write,
     on_wb_inode(inode, wbc, nr_to_write))
TWIN(io_uring_submit_req, uring_submit, struct io_kiocb *req, on_uring_submit(req))
TWIN(io_uring_complete, uring_complete,
     struct io_ring_ctx *ctx_ COMMA void *req COMMA struct io_uring_cqe *cqe, on_uring_complete(req, cqe))

/* Keep every shared type in BTF so bpf2go -type can generate its Go twin. */
const struct hdr *unused_hdr __attribute__((unused));
const struct file_ref *unused_file_ref __attribute__((unused));
const struct syscall_event *unused_syscall_event __attribute__((unused));
const struct payload_event *unused_payload_event __attribute__((unused));
const struct sample_event *unused_sample_event __attribute__((unused));
const struct file_event *unused_file_event __attribute__((unused));
const struct offcpu_event *unused_offcpu_event __attribute__((unused));
const struct block_event *unused_block_event __attribute__((unused));
const struct throttle_event *unused_throttle_event __attribute__((unused));
const struct writeback_event *unused_writeback_event __attribute__((unused));
const struct fork_event *unused_fork_event __attribute__((unused));
const struct exec_event *unused_exec_event __attribute__((unused));
const struct exit_event *unused_exit_event __attribute__((unused));
const struct uring_event *unused_uring_event __attribute__((unused));
const struct unlink_event *unused_unlink_event __attribute__((unused));
const struct agg_key *unused_agg_key __attribute__((unused));
const struct agg_val *unused_agg_val __attribute__((unused));
const struct dirty_key *unused_dirty_key __attribute__((unused));
const struct dirty_val *unused_dirty_val __attribute__((unused));
const struct cpu_val *unused_cpu_val __attribute__((unused));
