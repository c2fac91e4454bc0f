"""Mystery 3 (seed 004): writes MIB megabytes buffered to PATH and exits. Run
twice in a row on a slow disk: the second run is slow, because the kernel is
still flushing the first run's dirty pages. With --fsync the cost is paid
inside the program, visibly.

    python3 writer.py PATH [MIB] [--fsync]
"""
import os
import sys
import time

path = sys.argv[1]
mib = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 64
t = time.monotonic()
with open(path, "wb") as f:
    block = b"w" * (1 << 20)
    for _ in range(mib):
        f.write(block)
    if "--fsync" in sys.argv:
        f.flush()
        os.fsync(f.fileno())
print("wrote %d MiB in %.2f s" % (mib, time.monotonic() - t), file=sys.stderr)
