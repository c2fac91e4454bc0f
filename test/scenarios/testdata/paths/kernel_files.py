# CPU-bound in the kernel: creates, writes, reads and deletes 1000 small files
# in a temporary directory, three times over (word-pop's request, in a loop).
import os, sys, tempfile
d = tempfile.mkdtemp(dir=sys.argv[1] if len(sys.argv) > 1 else None)
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    for i in range(1000):
        with open(os.path.join(d, "%d.txt" % i), "w") as f:
            f.write("x" * 4096)
    for i in range(1000):
        with open(os.path.join(d, "%d.txt" % i)) as f:
            f.read()
    for i in range(1000):
        os.unlink(os.path.join(d, "%d.txt" % i))
os.rmdir(d)
