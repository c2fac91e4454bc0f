# Four threads take turns on one lock; the holder writes 1 MiB and fsyncs it
# to argv[1] (on a slow disk) before letting go. The main thread joins them.
import os, sys, threading
lock = threading.Lock()
def work(i):
    with lock:
        with open(os.path.join(sys.argv[1], "journal-%d.log" % i), "wb") as f:
            f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
