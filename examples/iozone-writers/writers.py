"""Four processes writing large files with 1 MiB records at once, like
`iozone -i 0 -t 4` in "Detecting Disk I/O-bound Applications" (seed 002).

    python3 writers.py DIR [--procs 4] [--mib 64]
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--procs", type=int, default=4)
p.add_argument("--mib", type=int, default=64)
a = p.parse_args()

record = b"z" * (1 << 20)
children = []
start = time.monotonic()
for i in range(a.procs):
    pid = os.fork()
    if pid == 0:
        path = os.path.join(a.dir, "iozone.tmp.%d" % i)
        with open(path, "wb") as f:
            for _ in range(a.mib):
                f.write(record)
            f.flush()
            os.fsync(f.fileno())
        os.unlink(path)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("%d writers x %d MiB: %.2f s" % (a.procs, a.mib, time.monotonic() - start), file=sys.stderr)
