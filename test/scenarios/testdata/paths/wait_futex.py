# Waits on the futex word in argv[1] (shared with hold_futex.py) until it is 0.
import ctypes, mmap, os, sys
FUTEX_WAIT = 0
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 4096)
word = ctypes.c_int.from_buffer(m)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
while word.value == 1:
    libc.syscall(202, ctypes.addressof(word), FUTEX_WAIT, 1, None, None, 0)
