# Sets a futex word in a shared file to 1, holds it for argv[2] seconds, then
# clears it and wakes the waiters: a lock held by a process outside the target.
import ctypes, mmap, os, sys, time
FUTEX_WAKE = 1
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
word = ctypes.c_int.from_buffer(m)
word.value = 1
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
word.value = 0
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
libc.syscall(202, ctypes.addressof(word), FUTEX_WAKE, 1 << 30, None, None, 0)
