/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Types shared by the kernel side (whyslow.bpf.c) and user space.
 * Go never mirrors these by hand: bpf2go -type generates them. */
#ifndef WHYSLOW_H
#define WHYSLOW_H

#define TASK_COMM_LEN 16
#define PATH_DEPTH 16   /* path components resolved in the kernel */
#define NAME_MAX_LEN 256 /* a component's bytes, NAME_MAX, and its NUL */
/* A description's names, packed: a power of two, so that an offset masked
 * to it and one name more stay inside names[]. PATH_DEPTH names fit. */
#define NAMES_BYTES 4096
#define UNIX_PATH_LEN 108  /* sizeof(sockaddr_un.sun_path) */
#define EXEC_ARGS_LEN 256
#define EXEC_FILE_LEN 128
/* Kernel frames kept per stack, innermost first, after the two of the BPF
 * program itself. Unwinding costs by the frame, and every reason's telltale
 * frame lies within a dozen of schedule(). */
#define STACK_DEPTH 20
#define STACK_SKIP 2
/* stack_id of an off-CPU interval that began before capture (attach): user
 * space took its stack and syscall from /proc when capture began. */
#define STACK_BEFORE_CAPTURE -2
/* waker_sock.nr of a wait the local timer ended: a timeout's or a sleep's
 * end, an itimer's signal. No task woke it (event.WakerTimer). */
#define WAKER_TIMER -2
#define LAT_SLOTS 32    /* log2(ns) latency buckets */
/* x86_64's page, the unit of pages dirtied and written back: event.PageSize
 * in Go (TestParityPageSize). vmlinux.h carries no macros. */
#define PAGE_SHIFT 12
#define PAGE_SIZE (1 << PAGE_SHIFT)

enum event_kind {
	EV_SYSCALL = 1,
	EV_FILE = 2,
	EV_OFFCPU = 3,
	EV_BLOCK = 4,
	EV_THROTTLE = 5,
	EV_WRITEBACK = 6,
	EV_FORK = 7,
	EV_EXEC = 8,
	EV_EXIT = 9,
	EV_URING = 10,
	EV_UNLINK = 11,
	EV_CONN_READ = 12,
	EV_SAMPLE = 13,
	EV_STACK = 14,
	EV_SOCK_BYTES = 15,
};

/* Lost-event counters, one slot per source, per CPU. */
enum lost_source {
	LOST_SYSCALL = 0,
	LOST_FILE = 1,
	LOST_OFFCPU = 2,
	LOST_BLOCK = 3,
	LOST_META = 4,      /* throttle, writeback, lifecycle */
	LOST_URING = 5,
	LOST_AGG = 6,       /* aggregation map full: a syscall neither counted nor streamed */
	LOST_STACK = 7,     /* no stack sent: interval kept, stack missing */
	LOST_PAYLOAD = 8,   /* unused: a read's first bytes travel in its own record (EV_CONN_READ), lost with it as LOST_SYSCALL */
	LOST_SAMPLE = 9,    /* a CPU sample */
	LOST_UNSEEN_WAIT = 10, /* a followed thread switched in with no wait open: its switch-out was missed */
	LOST_NR = 11,
};

enum file_kind {
	FK_UNKNOWN = 0,
	FK_REG = 1,
	FK_DIR = 2,
	FK_CHR = 3,
	FK_BLK = 4,
	FK_FIFO = 5,
	FK_SOCK_INET = 6,
	FK_SOCK_UNIX = 7,
	FK_SOCK_OTHER = 8,
	FK_LNK = 9,
	FK_ANON = 10,
};

struct hdr {
	__u64 ts;        /* CLOCK_MONOTONIC ns */
	__u64 cgroup;
	__u32 pid;       /* tgid */
	__u32 tid;
	__u8 kind;
	__u8 cpu;
	__u16 _pad;
	char comm[TASK_COMM_LEN];
};

/* A file as the kernel knows it: device, inode and generation (inode numbers are
 * reused at once on ext4 and tmpfs; the generation tells a new file from the old). */
struct file_ref {
	__u32 dev;       /* kernel dev_t: major << 20 | minor */
	__u32 gen;
	__u64 ino;
	__u32 kind;      /* enum file_kind */
	__u32 _pad;
};

struct syscall_event {
	struct hdr h;    /* ts = entry */
	__u64 dur;
	__s64 ret;
	__u64 req;       /* bytes asked, where the syscall says */
	__s32 fd;
	__s32 fd2;       /* second fd: sendfile, splice, copy_file_range */
	__u32 nr;
	__u32 flags;     /* open flags, lock cmd, sync flags */
	__u32 blocked;   /* went off CPU while inside; BLOCKED_WAIT: the row is one wait, not the call */
	__u32 _pad;
	struct file_ref f;
	struct file_ref f2;
};

/* A syscalls row made at a context switch (default level): it spans one wait
 * inside the call, not the call, and its return value is not known. */
#define BLOCKED_WAIT 2

struct file_event {
	struct hdr h;
	struct file_ref f;
	__u16 depth;
	__u16 flags;     /* FILEF_* */
	__u16 family;
	__u16 lport;
	__u16 rport;
	__u16 unix_len;  /* unix: bytes of unix_path */
	__u16 _pad[2];
	__u8 laddr[16];
	__u8 raddr[16];
	__u64 size;
	/* unix: the other end's socket inode (0 until it has one: a connection
	 * not yet accepted), and the server's address: this socket's own when
	 * FILEF_UNIX_BOUND, else its peer's (abstract: a leading NUL) */
	__u64 peer_ino;
	char unix_path[UNIX_PATH_LEN];
	/* the path's components, leaf first, each whole and with its NUL,
	 * one after the other: only the bytes they take are sent */
	char names[NAMES_BYTES + NAME_MAX_LEN];
};
#define FILEF_NO_MOUNT 1    /* path is relative to the filesystem's root: user space adds the mount point */
#define FILEF_DELETED 2
#define FILEF_TRUNCATED 4   /* deeper than PATH_DEPTH */
#define FILEF_UNIX_BOUND 8  /* unix: unix_path is this socket's own address (a server's end) */

/* The socket a waker was sending on when it woke a thread (its syscall's
 * fd, read at the wakeup): which side of the conversation it spoke from. */
struct waker_sock {
	struct file_ref f;   /* kind 0: not a socket call */
	__u16 lport;         /* inet: the waker's local and remote ports */
	__u16 rport;
	__u32 bound;         /* unix: the waker's socket has an address (a server's side) */
	__s32 nr;            /* the waker's syscall (kill: a signal woke it), -1 none, WAKER_TIMER */
	__u32 end;           /* TCP: 1 the waker's end connected, 2 it was accepted, 0 not seen */
};

struct offcpu_event {
	struct hdr h;    /* ts = back on CPU */
	__u64 off_ns;    /* switched out -> switched in */
	__u64 runq_ns;   /* woken -> switched in */
	__u32 state;     /* 'R', 'S', 'D', ... */
	__s32 stack_id;  /* uninterruptible waits only (-1 otherwise): see on_switch */
	__s32 syscall;   /* syscall in progress at switch-out, -1 if none */
	__u32 waker_pid;
	__u32 waker_tid;
	__u32 fkind;     /* enum file_kind of the syscall's file, 0 unknown */
	char waker_comm[TASK_COMM_LEN];
	/* Default level: the wait is inside an I/O syscall (call 1), read from its
	 * registers at the switch-out; user space makes it a syscalls row that
	 * spans the wait (one record instead of two). */
	__u32 call;
	__s32 fd;
	__u64 req;
	__u32 flags;
	__u32 outside;   /* the thread is a peer's, not a target's (peers.bpf.h) */
	struct file_ref f;
	struct waker_sock waker_sock;
	/* How many waits this record sums (sched.bpf.h, runs): 1 for a wait of
	 * its own. A run's off_ns and runq_ns are its waits' sums, max_ns its
	 * longest, start_ts its first wait's start; h.ts is its last one's end. */
	__u32 waits;     /* 0: a wait also summed in a run, sent alone for the tests (check_runs) */
	__u32 quota;     /* runnable, held off the CPU by its cgroup's CPU quota (state R) */
	__u64 max_ns;
	__u64 start_ts;
};

struct block_event {
	struct hdr h;    /* issuer; ts = completion */
	__u64 insert_ts;
	__u64 issue_ts;
	__u64 sector;
	__u32 bytes;
	__u32 dev;
	__u32 cmd_flags;
	__s32 error;
	__u32 op;        /* REQ_OP_* */
	__u32 rflags;    /* BLKF_* */
	struct file_ref f;
};
#define BLKF_SYNC 1
#define BLKF_META 2
#define BLKF_FUA 4

struct throttle_event {
	struct hdr h;
	__u64 pause_ns;
	__u64 period_ns;
	__u64 dirtied;
	__u32 bdi_dev;
	__u32 _pad;
};

struct writeback_event {
	struct hdr h;    /* the flusher */
	struct file_ref f;
	__u64 pages;
	__u64 dur;
};

struct fork_event {
	struct hdr h;    /* parent */
	__u32 child_pid;
	__u32 child_tid;
};

struct exec_event {
	struct hdr h;
	__u32 ppid;
	__u32 args_len;
	char filename[EXEC_FILE_LEN];
	char args[EXEC_ARGS_LEN];
};

/* A thread's own I/O accounting (task_struct.ioac, what /proc/PID/task/TID/io
 * shows): every read and write call's bytes and count, at no per-call cost. */
struct task_io {
	__u64 rchar;
	__u64 wchar;
	__u64 syscr;
	__u64 syscw;
	__u64 read_bytes;             /* brought in from storage */
	__u64 write_bytes;            /* dirtied for storage */
	__u64 cancelled_write_bytes;  /* dirtied, then truncated away */
};

struct exit_event {
	struct hdr h;
	__s32 code;
	__u32 group_dead;
	struct task_io io;   /* the exiting thread's own, final */
};

struct uring_event {
	struct hdr h;    /* submitter; ts = submission */
	__u64 dur;
	__s64 res;
	__u64 user_data;
	__u32 opcode;
	__s32 fd;
	struct file_ref f;
};

/* A name removed from a directory: unlink, unlinkat, rmdir. */
#define UNLINK_NAME_LEN 256
struct unlink_event {
	struct hdr h;
	__s64 ret;
	__u64 dur;
	__u32 nr;
	__u32 _pad;
	struct file_ref dir;   /* the directory the name is relative to (dirfd or cwd) */
	char name[UNLINK_NAME_LEN];
};

/* A server's read on a connection (--requests), in one record: the call,
 * when its bytes reached the socket (a turn's first read: arrival.bpf.h)
 * and the first bytes of it kept (payload_kept, conversation.h, generated
 * from internal/event/conversation.go, the rule the framers read by: of a
 * turn its first PAYLOAD_LEN, of each later read PAYLOAD_HEAD_LEN): a
 * request's label, such as an HTTP request line, and the messages
 * protocols framed by message are cut from (PostgreSQL, MySQL, Redis,
 * FastCGI). A turn's first read longer than PAYLOAD_LEN (a pipelined
 * batch) is a conn_batch_event, the same head with a longer data. len 0:
 * payloads off, the arrival known; a read that adds neither is a plain
 * syscall_event. */
#include "conversation.h"
struct conn_read_event {
	struct syscall_event call;   /* call.h.kind is EV_CONN_READ */
	__u64 arrived;               /* TCP: when its bytes reached the socket, 0 unknown */
	__u32 len;                   /* bytes in data */
	__u32 _pad;
	__u8 data[PAYLOAD_LEN];
};
struct conn_batch_event {            /* conn_read_event's layout, with a longer data */
	struct syscall_event call;
	__u64 arrived;
	__u32 len;
	__u32 _pad;
	__u8 data[PAYLOAD_BATCH_LEN];
};

/* A TCP connection's byte totals as it closes (it leaves ESTABLISHED, or
 * CLOSE_WAIT, while it still has its socket): what tcp_sock counts, so that
 * a connection's bytes are known at the default level, which hooks no
 * socket call. */
struct sock_bytes_event {
	struct hdr h;        /* whoever changed its state (often a softirq's) */
	struct file_ref f;   /* the socket */
	__u64 received;      /* bytes_received */
	__u64 sent;          /* bytes_sent (retransmissions included), else bytes_acked */
};

/* A kernel stack sent whole (see own_stack): ids from STACK_OWN_BASE up are
 * these, below it the stacks map's buckets. */
#define STACK_OWN_BASE 1048576   /* 1 << 20 */
struct stack_event {
	struct hdr h;
	__s32 id;
	__u32 depth;
	__u64 ips[STACK_DEPTH];
};

/* A target thread found on CPU at a local timer interrupt (the scheduler
 * tick): in user or kernel mode, the syscall it was in, and the file or path
 * that call names. The default level splits kernel CPU time by these. */
#define SAMPLE_PATH_LEN 256
struct sample_event {
	struct hdr h;
	__s32 syscall;   /* in progress, -1 if none */
	__u32 user;      /* 0: user space decides by the stack */
	__s32 stack_id;  /* kernel stack, from the interrupt to where it came from */
	__s32 fd;
	struct file_ref f;
	char path[SAMPLE_PATH_LEN];  /* the path argument of open, unlink, ... */
};

/* Syscalls level: per thread, per file, per syscall counters kept in the kernel. */
struct agg_key {
	__u32 pid;
	__u32 tid;
	__u32 nr;
	__u32 dev;
	__u64 ino;
	__u32 gen;
	__u32 kind;
};

struct agg_val {
	__u64 count;
	__u64 bytes;
	__u64 total_ns;
	__u64 max_ns;
	__u64 errors;
	__u64 first_ts;
	__u64 last_ts;
	__u64 slots[LAT_SLOTS];
	char comm[TASK_COMM_LEN];
};

/* Pages a task dirtied in an inode; drained by user space. */
struct dirty_key {
	__u32 pid;
	__u32 tid;
	__u32 dev;
	__u32 gen;
	__u64 ino;
};

struct dirty_val {
	__u64 pages;
	__u64 first_ts;
	__u64 last_ts;
	char comm[TASK_COMM_LEN];
};

/* A target thread's on-CPU time, in its wait slot; drained by user space.
 * gone: the thread died (its last switch was seen): user space reads its
 * total once more and removes the slot. */
struct cpu_val {
	__u64 oncpu_ns;  /* the thread's CPU time from its first switch-in seen to its last switch-out */
	__u64 on_since;  /* its last switch-in, while it runs (0: off CPU) */
	__u64 exec_base; /* its se.sum_exec_runtime less oncpu_ns, modulo 2^64: the kernel's own account is the clock */
	/* The life whose time this is: the thread's start_time (CLOCK_MONOTONIC
	 * at its fork). A thread id comes round again while its slot still
	 * holds the last life's time; the switch-in tells lives apart by it,
	 * and user space takes out only a slot whose life ended (drain.go). */
	__u64 life;
	/* The count when this life took the slot, and whose the life before
	 * was: a tid comes round again within a drain period, and what the
	 * last life ran since user space last read it is that thread's. */
	__u64 life_base;
	__u32 before_pid;
	__u32 pid;
	__u32 gone;
	char comm[TASK_COMM_LEN];
	char before_comm[TASK_COMM_LEN];
};

#endif
