/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The syscalls whyslow follows, by x86_64 number, and the class each belongs to.
 * User space keeps the same table (internal/event/syscalls.go); a test checks they agree. */
#ifndef WHYSLOW_SYSCALLS_H
#define WHYSLOW_SYSCALLS_H

#if !defined(__TARGET_ARCH_x86)
#error "syscall numbers are x86_64 only for now"
#endif

enum {
	NR_read = 0, NR_write = 1, NR_open = 2, NR_close = 3, NR_mmap = 9,
	NR_pread64 = 17, NR_pwrite64 = 18, NR_readv = 19, NR_writev = 20,
	NR_msync = 26, NR_sendfile = 40, NR_connect = 42, NR_accept = 43,
	NR_sendto = 44, NR_recvfrom = 45, NR_sendmsg = 46, NR_recvmsg = 47,
	NR_fcntl = 72, NR_flock = 73, NR_fsync = 74, NR_fdatasync = 75,
	NR_creat = 85, NR_sync = 162, NR_openat = 257, NR_splice = 275,
	NR_sync_file_range = 277, NR_accept4 = 288, NR_preadv = 295,
	NR_pwritev = 296, NR_syncfs = 306, NR_copy_file_range = 326,
	NR_preadv2 = 327, NR_pwritev2 = 328, NR_io_uring_enter = 426,
	NR_openat2 = 437, NR_rmdir = 84, NR_unlink = 87, NR_unlinkat = 263,
	NR_ftruncate = 77, NR_fallocate = 285,
};

enum {
	CLS_NONE = 0, CLS_READ = 1, CLS_WRITE = 2, CLS_OPEN = 3, CLS_CLOSE = 4,
	CLS_SYNC = 5, CLS_NET = 6, CLS_MMAP = 7, CLS_LOCK = 8, CLS_URING = 9,
	CLS_XFER = 10, CLS_UNLINK = 11,
};

static __always_inline __u32 syscall_class(long nr)
{
	switch (nr) {
	case NR_read: case NR_pread64: case NR_readv: case NR_preadv: case NR_preadv2:
		return CLS_READ;
	case NR_write: case NR_pwrite64: case NR_writev: case NR_pwritev: case NR_pwritev2:
	case NR_ftruncate: case NR_fallocate:
		return CLS_WRITE;
	case NR_open: case NR_openat: case NR_openat2: case NR_creat:
		return CLS_OPEN;
	case NR_close:
		return CLS_CLOSE;
	case NR_fsync: case NR_fdatasync: case NR_sync: case NR_syncfs:
	case NR_sync_file_range: case NR_msync:
		return CLS_SYNC;
	case NR_connect: case NR_accept: case NR_accept4: case NR_sendto:
	case NR_recvfrom: case NR_sendmsg: case NR_recvmsg:
		return CLS_NET;
	case NR_mmap:
		return CLS_MMAP;
	case NR_flock: case NR_fcntl:
		return CLS_LOCK;
	case NR_io_uring_enter:
		return CLS_URING;
	case NR_sendfile: case NR_splice: case NR_copy_file_range:
		return CLS_XFER;
	case NR_unlink: case NR_unlinkat: case NR_rmdir:
		return CLS_UNLINK;
	}
	return CLS_NONE;
}
#endif
