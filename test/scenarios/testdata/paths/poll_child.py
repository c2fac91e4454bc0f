# Starts a child that computes for argv[1] seconds and polls it every 10 ms,
# as fio's main thread and many supervisors do.
import subprocess, sys, time
p = subprocess.Popen([sys.executable, "-c",
    "import time\nt = time.time()\nwhile time.time() - t < %s: pass" % sys.argv[1]])
while p.poll() is None:
    time.sleep(0.01)
