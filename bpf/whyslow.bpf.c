//go:build ignore
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* whyslow's kernel side: tracepoints only (tp_btf with raw_tp twins), no kprobes.
 * Each handler is one static function; TWIN() at the end exposes it as a
 * tp_btf program, or, built with -DRAW_TP (a second object), as a raw_tp one,
 * so the loader can pick the flavour this kernel accepts. This file holds the
 * settings and maps; the handlers live in the *.bpf.h files it includes, by
 * subject. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "whyslow.h"
#include "syscalls.h"

/* uapi constants: vmlinux.h carries types, not macros */
#define AT_FDCWD -100
#define MAP_ANONYMOUS 0x20
#define F_SETLK 6
#define F_SETLKW 7
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#define EAGAIN 11
#define EFAULT 14
#define EEXIST 17

/* mode bits */
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
const volatile bool payload = false;       /* and keep the first bytes of a server's reads (a request's label) */
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
 * wakeup was about to need. A quarter full gives the reader time to come
 * before the ring overflows; the loader sets each ring's quarter with its
 * size, which saves a query per event. */
const volatile __u64 events_wake_at = 4 << 20;
const volatile __u64 meta_wake_at = 1 << 20;
#define wake_flags(rb, at) \
	(bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > (at) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP)
#define wake_events() wake_flags(&events, events_wake_at)
#define wake_meta() wake_flags(&meta, meta_wake_at)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} meta SEC(".maps");

/* A ring per CPU for the syscall records of the per-call hooks, the busiest
 * stream: on one shared ring, two CPUs reserving at once took turns on its
 * lock and its producer position, and sys_exit cost 250 ns a call with two
 * busy threads against 110 with one. Slot cpu holds that CPU's ring; the
 * loader sizes the outer array to the possible CPUs and the rings, and
 * fills it only when the hooks are loaded (an empty slot sends the record
 * to events). The loader sets calls_wake_at to a quarter of a ring. */
struct calls_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct calls_ring);
} calls SEC(".maps");
const volatile __u64 calls_wake_at = 256 << 10;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_NR);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* The target set: tgids followed through fork, never removed (a dying
 * process's last switch still asks), so sized for the processes one recording
 * forks: 256k. Its buckets are allocated whole at load, preallocated or not:
 * 1M entries took 11 ms of every start, 256k take under 3. Unused when
 * recording system-wide: user space then makes it one entry. A fork that
 * finds it full counts as lost meta. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 18);
	__type(key, __u32);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} targets SEC(".maps");

/* A filter in front of targets: slot tgid % TARGET_SLOTS is 1 once any
 * target with that remainder was added (before it is added: never a false
 * no). Most tasks a switch or a wakeup asks about (kernel threads, other
 * processes) find theirs 0 with an array read, inlined by the verifier,
 * instead of a hash lookup (hashing, a bucket of a 4 MiB table). */
#define TARGET_SLOTS (1 << 16)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TARGET_SLOTS);
	__type(key, __u32);
	__type(value, __u8);
} target_slots SEC(".maps");

static __always_inline void add_target_slot(__u32 tgid)
{
	__u32 slot = tgid % TARGET_SLOTS;
	__u8 *on = bpf_map_lookup_elem(&target_slots, &slot);
	if (on)
		*on = 1;
}

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

/* A stack taken at an uninterruptible wait, by where the thread waited
 * (sched.bpf.h, wait_site): a wait at the same site in the same call
 * reuses it for a while instead of unwinding the stack again. */
#define WAIT_SITES 4
struct wait_site {
	__u64 site;         /* the return address into the function that waits */
	__u64 ts;           /* when its stack was taken */
	__s32 nr;           /* the syscall, -1 none */
	__s32 stack_id;
	__u32 memalloc;     /* in reclaim (PF_MEMALLOC): its waits are memory's */
	__u32 _pad;
};

/* Per-thread state in task local storage: the syscall in flight, the
 * thread's last file (struct file and inode pointers with the identity they
 * had), so repeated calls on one fd are not identified again, and the last
 * io_uring operation it submitted. */
struct thread_state {
	struct inflight in;
	__u8 active;        /* in a followed syscall: in holds it */
	__u8 resolved;      /* in's arguments and files are read (see resolve_call) */
	__u8 target;        /* the thread's process is a target: known once, true for life */
	__u8 _pad;
	__s32 stack_id;     /* the last sync wait's stack, */
	__u64 stack_ts;     /* when it was taken, */
	__s64 stack_nr;     /* and in which syscall (see wait_stack) */
	struct wait_site sites[WAIT_SITES]; /* the last stacks of other uninterruptible waits, by site */
	__u32 site_next;    /* the entry of sites the next one takes */
	__u32 _pad2;
	__u64 last_file;
	__u64 last_inode;
	struct file_ref last_ref;
	__u64 uring_req;    /* the io_uring operation (io_kiocb) it submitted last (see uring_issuing) */
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
	__u8 other;
	__u8 io_worker;   /* an io_uring thread: the call is its operation's (uring_wait) */
	__u8 peer;        /* a peer's wait (peers.bpf.h): a call row at every level */
	__u8 quota;       /* preempted by its cgroup's CPU quota (cpu_quota_throttled) */
	__s32 fd;
	__u32 flags;
	__u64 req;
	struct file_ref f;
};
/* Threads not on a CPU when capture began, as far as /proc could tell
 * (attach): tid -> when capture began. Their first switch-in ends a wait
 * whose start was not seen. A thread /proc showed runnable may have been
 * running: its first switch seen is then a switch-out (ran_since_attach). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} waiting_at_start SEC(".maps");

/* The last wakeup of a thread. of names the wait it ended (that wait's
 * start, or WOKEN_UNOPENED when none was open: a wait begun before capture,
 * or one whose switch-out was not seen), so that the switch-in asks whether
 * this wakeup ended its wait by identity, with no clock read at the wakeup
 * (clock.bpf.h). */
#define WOKEN_UNOPENED (~0ULL)
struct waker {
	__u64 ts;         /* when, read only where the kernel's stamps cannot tell (clock.bpf.h) */
	__u64 of;
	__u64 run_delay;  /* the thread's sched_info.run_delay then */
	__u64 queued;     /* its sched_info.last_queued then: 0 but for a sleeper the kernel queued (clock.bpf.h) */
	__u32 pid;
	__u32 tid;
	char comm[TASK_COMM_LEN];
	struct waker_sock sock;   /* the socket the waker was sending on, if any */
};

/* A thread's slot: its open wait, who woke it, and its run of short waits
 * not sent yet (sched.bpf.h, runs). One lookup at each end of a wait finds
 * all three: the waker was a map of its own, a lookup more at every wakeup
 * and switch-in. */
struct wait_slot {
	struct offstart w;        /* the open wait: w.ts 0 when none */
	struct waker wk;          /* the last wakeup, set at sched_waking */
	struct offcpu_event run;  /* short waits alike, summed: run.waits 0 when none */
	/* A target thread's on-CPU time, read by user space at each drain
	 * (drain.go). In the slot, not a map of its own: the switch looks the
	 * slot up at both ends already, and a second map's lookups were a
	 * quarter of a watched context switch (~120 of ~500 ns). cpu.pid 0:
	 * never switched in as a target. */
	struct cpu_val cpu;
};
/* tid -> its slot. A target thread's entry stays, its wait closed (w.ts 0)
 * between waits, until user space has read its last on-CPU time after it
 * died (drain.go retires it); another process's sync wait is deleted when
 * it ends (sched.bpf.h, open_wait), a peer's slot when it dies. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct wait_slot);
} offcpu_start SEC(".maps");

/* An empty slot, the value a new thread's entry starts from (too big for
 * the stack). */
static struct wait_slot empty_slot;

/* Kernel stacks by id. An id is a hash bucket: a second, different stack in
 * a taken bucket is refused (-EEXIST), and overwriting the bucket
 * (BPF_F_REUSE_STACKID) would rename the stack of every event that named it
 * before. Such a stack is sent whole instead, once (own_stack). A few
 * hundred distinct stacks in 16k buckets collide about as often as not; 64k
 * cost 1.5 ms more to create and ~12 MB of kernel memory. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 65536);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* Stacks sent whole: their content's hash -> their id. An LRU: a stack
 * evicted and met again is sent again, under a new id. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __s32);
} own_stacks SEC(".maps");

/* The stack being sent whole, and how many this CPU sent: ids are
 * STACK_OWN_BASE + cpu << 16 + that count, unique without an atomic (which
 * -mcpu=v1 lacks) until a CPU sends 65536 (the LRU keeps 4096). One slot:
 * the two programs that take stacks cannot nest (sched_switch runs with
 * interrupts off, the tick in one). */
struct stack_scratch {
	struct stack_event ev;
	__u32 sent;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

struct rqinfo {
	__u64 insert_ts;
	__u64 issue_ts;
	__u64 born;      /* the request's start_time_ns: tells a reused struct from its last use */
	__u32 pid;
	__u32 tid;
	char comm[TASK_COMM_LEN];
	struct file_ref f;
};
/* Preallocated (~2 MB): an allocation at each request's first sight and a
 * deferred free at its completion were a quarter of the block hooks' time.
 * A completed request's entry is kept, marked done, up to REQUESTS_KEPT
 * entries, and written in place when blk-mq hands its struct (one per tag,
 * allocated with the queue) to the next request: the hash update and
 * delete of each request, each taking a bucket's lock, were ~2 µs of an
 * fsync loop's 21 µs iteration with the other block hooks (BENCHMARKS.md,
 * 1d). Past REQUESTS_KEPT (a machine with more request structs than that,
 * or queues come and gone) completions delete their entries again. */
#define REQUESTS_MAX 16384
#define REQUESTS_KEPT (REQUESTS_MAX / 2)
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, REQUESTS_MAX);
	__type(key, __u64);
	__type(value, struct rqinfo);
} requests SEC(".maps");
/* Entries in requests, approximately: added at a new key, taken at a delete. */
__s64 requests_held = 0;

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

/* Every record goes out through these: reserved in its ring, or counted
 * lost under its source (NULL then, and the caller gives up), then
 * submitted with the ring's wakeup policy. A record built elsewhere (a
 * per-CPU scratch) is copied out with output_*, which count a loss the same
 * way and return nonzero on it. */
static __always_inline void *reserve_event(__u64 size, __u32 source)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);
	if (!e)
		count_lost(source);
	return e;
}

static __always_inline void *reserve_meta(__u64 size, __u32 source)
{
	void *e = bpf_ringbuf_reserve(&meta, size, 0);
	if (!e)
		count_lost(source);
	return e;
}

/* A syscall record: in this CPU's ring of calls, else (no ring in its
 * slot) in events. *ring is where it went, for submit_call. */
static __always_inline void *reserve_call(__u64 size, void **ring)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *rb = bpf_map_lookup_elem(&calls, &cpu);
	void *e;
	if (rb)
		e = bpf_ringbuf_reserve(rb, size, 0);
	else
		e = bpf_ringbuf_reserve(&events, size, 0);
	if (!e)
		count_lost(LOST_SYSCALL);
	*ring = rb;
	return e;
}

static __always_inline void submit_call(void *e, void *ring)
{
	if (ring)
		bpf_ringbuf_submit(e, wake_flags(ring, calls_wake_at));
	else
		bpf_ringbuf_submit(e, wake_events());
}

static __always_inline void submit_event(void *e)
{
	bpf_ringbuf_submit(e, wake_events());
}

static __always_inline void submit_meta(void *e)
{
	bpf_ringbuf_submit(e, wake_meta());
}

static __always_inline long output_event(void *data, __u64 size, __u32 source)
{
	long err = bpf_ringbuf_output(&events, data, size, wake_events());
	if (err)
		count_lost(source);
	return err;
}

static __always_inline long output_meta(void *data, __u64 size, __u32 source)
{
	long err = bpf_ringbuf_output(&meta, data, size, wake_meta());
	if (err)
		count_lost(source);
	return err;
}

/* What a process is to the capture, as the targets map holds it: one of
 * the targets, a peer (a process outside them that it waits on, followed
 * while it serves them: see peers.bpf.h), or nothing. */
#define KIND_NONE 0
#define KIND_TARGET 1
#define KIND_PEER 2     /* KIND_PEER + hops - 1: hops from the target, 1 to PEER_HOPS */
#define PEER_HOPS 3

/* Whether tgid may be a target or a peer (recording a command): its slot
 * in target_slots is set. Never a false no. */
static __always_inline bool maybe_followed(__u32 tgid)
{
	__u32 slot = tgid % TARGET_SLOTS;
	__u8 *maybe = bpf_map_lookup_elem(&target_slots, &slot);
	return maybe && *maybe;
}

static __always_inline __u8 task_kind(__u32 tgid)
{
	if (tgid == self_pid || tgid == 0)
		return KIND_NONE;
	if (system_wide)
		return KIND_TARGET;
	__u32 slot = tgid % TARGET_SLOTS;
	__u8 *maybe = bpf_map_lookup_elem(&target_slots, &slot);
	if (!maybe || !*maybe)
		return KIND_NONE;
	__u8 *kind = bpf_map_lookup_elem(&targets, &tgid);
	return kind ? *kind : KIND_NONE;
}

static __always_inline bool is_target(__u32 tgid)
{
	return task_kind(tgid) == KIND_TARGET;
}

/* The current thread's state if its process is a target. The targets map
 * only grows, so a yes is kept in the thread's storage: the map is searched
 * once per thread, not at every call. */
static __always_inline struct thread_state *target_state(__u32 tgid)
{
	struct thread_state *ts = thread_state(false);
	if (ts && ts->target)
		return ts;
	if (!is_target(tgid))
		return NULL;
	if (!ts)
		ts = thread_state(true);
	if (ts)
		ts->target = 1;
	return ts;
}

/* A task's name, read with two loads: the helpers (bpf_get_current_comm,
 * bpf_probe_read_kernel_str) cost a call and a byte loop each, on paths
 * that run at every wakeup and switch of a target. comm is always
 * NUL-terminated within its 16 bytes; a rename while it is read may mix two
 * names, as the helpers could. */
static __always_inline void task_comm(struct task_struct *task, char *dst)
{
	struct task_struct *t = CAST(struct task_struct, task);
	__u64 *src = (__u64 *)t->comm;
	((__u64 *)dst)[0] = src[0];
	((__u64 *)dst)[1] = src[1];
}

static __always_inline void current_comm(char *dst)
{
	task_comm(bpf_get_current_task_btf(), dst);
}

/* The header of an event about the current thread, at ts. */
static __always_inline void fill_hdr_at(struct hdr *h, __u8 kind, __u64 ts)
{
	__u64 id = bpf_get_current_pid_tgid();
	h->ts = ts;
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->kind = kind;
	h->cpu = bpf_get_smp_processor_id();
	h->cgroup = bpf_get_current_cgroup_id();
	current_comm(h->comm);
}

static __always_inline void fill_hdr(struct hdr *h, __u8 kind)
{
	fill_hdr_at(h, kind, bpf_ktime_get_ns());
}

/* The header of an event about a task that is not the current one (the one
 * switched in), at ts. */
static __always_inline void fill_hdr_of(struct hdr *h, __u8 kind, __u64 ts, struct task_struct *task,
					__u32 pid, __u32 tid)
{
	h->ts = ts;
	h->pid = pid;
	h->tid = tid;
	h->kind = kind;
	h->cpu = bpf_get_smp_processor_id();
	h->_pad = 0;
	h->cgroup = 0;
	task_comm(task, h->comm);
}

/* Sends a stack the stacks map refused (its bucket is another's) as a
 * stack_event, once per content, and returns its own id; -1 if it could not
 * be sent. A global function: verified once, not in each program that takes
 * stacks. */
__noinline int own_stack(struct stack_scratch *sc)
{
	if (!sc)
		return -1;
	struct stack_event *st = &sc->ev;
	__u64 hash = 14695981039346656037ULL;   /* FNV-1a over the addresses */
	for (int i = 0; i < STACK_DEPTH; i++) {
		hash ^= st->ips[i];
		hash *= 1099511628211ULL;
	}
	__s32 *known = bpf_map_lookup_elem(&own_stacks, &hash);
	if (known)
		return *known;
	__s32 id = STACK_OWN_BASE + ((bpf_get_smp_processor_id() & 0x3fff) << 16) + (sc->sent & 0xffff);
	st->id = id;
	fill_hdr(&st->h, EV_STACK);
	/* Out before it is known: an event never names a stack user space lacks. */
	if (bpf_ringbuf_output(&events, st, sizeof(*st), wake_events()))
		return -1;
	sc->sent++;
	bpf_map_update_elem(&own_stacks, &hash, &id, BPF_ANY);
	return id;
}

/* own_stack for a stack of n bytes just taken into sc: the slots past it
 * zeroed first (the hash covers every slot). A global function: its loop
 * over the slots is verified once, not on each path of the callers. */
__noinline int own_stack_of(struct stack_scratch *sc, long n)
{
	if (!sc || n <= 0)
		return -1;
	sc->ev.depth = n / sizeof(__u64);
	for (int i = 0; i < STACK_DEPTH; i++)
		if (i >= sc->ev.depth)
			sc->ev.ips[i] = 0;
	return own_stack(sc);
}

/* A task's state as ps writes it: R (running or preempted), D, S, T, t. */
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

/* 1 while this CPU runs its local timer interrupt. A wakeup inside it is
 * the timer's (a sleep's end, an itimer's signal: PostgreSQL's
 * deadlock_timeout), not the task the interrupt happened to stop: on a busy
 * machine that task is any other process, and the critical path followed
 * it. Such a wakeup is told as an idle CPU's is, by no process (pid 0). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} in_timer_irq SEC(".maps");

static __always_inline void timer_irq(__u32 on)
{
	__u32 zero = 0;
	__u32 *v = bpf_map_lookup_elem(&in_timer_irq, &zero);
	if (v)
		*v = on;
}

static __always_inline bool waking_from_timer(void)
{
	__u32 zero = 0;
	__u32 *v = bpf_map_lookup_elem(&in_timer_irq, &zero);
	return v && *v;
}

/* The id of the current kernel stack: a bucket of the stacks map, or an id
 * of its own when the bucket is another stack's. -1 when there is none. */
static __always_inline __s32 stack_id_of(void *ctx)
{
	__s32 id = bpf_get_stackid(ctx, &stacks, STACK_SKIP);
	if (id != -EEXIST)
		return id;
	__u32 zero = 0;
	struct stack_scratch *sc = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!sc)
		return -1;
	return own_stack_of(sc, bpf_get_stack(ctx, sc->ev.ips, sizeof(sc->ev.ips), STACK_SKIP));
}

#include "core_fixes.bpf.h"
#include "file.bpf.h"
#include "hist.bpf.h"
#include "arrival.bpf.h"
#include "syscall.bpf.h"
#include "uring.bpf.h"
#include "clock.bpf.h"
#include "peers.bpf.h"
#include "sched.bpf.h"
#include "sample.bpf.h"
#include "lifecycle.bpf.h"
#include "block.bpf.h"
#include "writeback.bpf.h"

/* ---- entry points: tp_btf and raw_tp twins ----
 * One flavour an object (internal/capture/gen.go): the loader parses the
 * object of the flavour it loads, and with both in one it parsed every
 * program twice for one load (a third of its time). */

#ifdef RAW_TP
#define TWIN(tp, name, args, call) \
	SEC("raw_tp/" #tp) int BPF_PROG(raw_##name, args) { return call; }
#else
#define TWIN(tp, name, args, call) \
	SEC("tp_btf/" #tp) int BPF_PROG(btf_##name, args) { return call; }
#endif

#define COMMA ,

TWIN(sys_enter, sys_enter, struct pt_regs *regs COMMA long id, on_sys_enter(regs, id))
TWIN(sys_exit, sys_exit, struct pt_regs *regs COMMA long ret, on_sys_exit(regs, ret))
#ifndef RAW_TP
SEC("tp_btf/sched_switch")
int BPF_PROG(btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(ctx, preempt, prev, next, prev_state);
}
#else
SEC("raw_tp/sched_switch")
int BPF_PROG(raw_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(ctx, preempt, prev, next, prev_state);
}
#endif
/* sched_waking, not sched_wakeup: it runs in the waker's context, while
 * sched_wakeup may run later on the target CPU (ttwu wake list) as swapper. */
TWIN(local_timer_entry, local_timer_entry, int vector, on_tick(ctx))
TWIN(local_timer_exit, local_timer_exit, int vector, on_timer_exit())
#ifndef RAW_TP
SEC("tp_btf/sched_waking")
int BPF_PROG(btf_sched_waking, struct task_struct *p) { return on_wakeup(p, true); }
#else
SEC("raw_tp/sched_waking")
int BPF_PROG(raw_sched_waking, struct task_struct *p) { return on_wakeup(p, false); }
#endif
TWIN(task_rename, task_rename, struct task_struct *task COMMA const char *comm, on_rename(task, comm))
#ifndef RAW_TP
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_sched_wakeup_new, struct task_struct *p)
{
	on_new_task(p);
	return on_wakeup(p, true);
}
#else
SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_sched_wakeup_new, struct task_struct *p)
{
	on_new_task(p);
	return on_wakeup(p, false);
}
#endif
TWIN(sched_process_fork, sched_process_fork, struct task_struct *parent COMMA struct task_struct *child,
     on_fork(parent, child))
TWIN(sched_process_exec, sched_process_exec,
     struct task_struct *p COMMA pid_t old_pid COMMA struct linux_binprm *bprm, on_exec(p, bprm))
TWIN(sched_process_exit, sched_process_exit, struct task_struct *p COMMA bool group_dead, on_exit(p, group_dead))
TWIN(block_rq_insert, block_rq_insert, struct request *rq, on_rq_insert(rq))
TWIN(block_rq_issue, block_rq_issue, struct request *rq, on_rq_issue(rq))
TWIN(block_rq_merge, block_rq_merge, struct request *rq, on_rq_merge(rq))
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
TWIN(inet_sock_set_state, sock_state, const struct sock *sk COMMA const int oldstate COMMA const int newstate,
     on_established(sk, oldstate, newstate) | on_sock_state(sk, oldstate, newstate))
TWIN(tcp_probe, tcp_probe, struct sock *sk COMMA const struct sk_buff *skb, on_tcp_probe(sk, skb))
TWIN(io_uring_submit_req, uring_submit, struct io_kiocb *req, on_uring_submit(req))
TWIN(io_uring_complete, uring_complete,
     struct io_ring_ctx *ctx_ COMMA void *req COMMA struct io_uring_cqe *cqe, on_uring_complete(req, cqe))

/* Keep every shared type in BTF so bpf2go -type can generate its Go twin:
 * the enums too, so Go's constants are C's (internal/capture/gen.go). */
const enum event_kind *unused_event_kind __attribute__((unused));
const enum lost_source *unused_lost_source __attribute__((unused));
const enum file_kind *unused_file_kind __attribute__((unused));
const struct hdr *unused_hdr __attribute__((unused));
const struct file_ref *unused_file_ref __attribute__((unused));
const struct syscall_event *unused_syscall_event __attribute__((unused));
const struct conn_read_event *unused_conn_read_event __attribute__((unused));
const struct conn_batch_event *unused_conn_batch_event __attribute__((unused));
const struct sample_event *unused_sample_event __attribute__((unused));
const struct stack_event *unused_stack_event __attribute__((unused));
const struct file_event *unused_file_event __attribute__((unused));
const struct offcpu_event *unused_offcpu_event __attribute__((unused));
const struct waker_sock *unused_waker_sock __attribute__((unused));
const struct block_event *unused_block_event __attribute__((unused));
const struct throttle_event *unused_throttle_event __attribute__((unused));
const struct writeback_event *unused_writeback_event __attribute__((unused));
const struct fork_event *unused_fork_event __attribute__((unused));
const struct exec_event *unused_exec_event __attribute__((unused));
const struct exit_event *unused_exit_event __attribute__((unused));
const struct task_io *unused_task_io __attribute__((unused));
const struct sock_bytes_event *unused_sock_bytes_event __attribute__((unused));
const struct uring_event *unused_uring_event __attribute__((unused));
const struct unlink_event *unused_unlink_event __attribute__((unused));
const struct agg_key *unused_agg_key __attribute__((unused));
const struct agg_val *unused_agg_val __attribute__((unused));
const struct dirty_key *unused_dirty_key __attribute__((unused));
const struct dirty_val *unused_dirty_val __attribute__((unused));
const struct cpu_val *unused_cpu_val __attribute__((unused));
