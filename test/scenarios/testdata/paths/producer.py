# Computes for argv[1] seconds, then writes its result to stdout.
import sys, time
t, n = time.time(), 0
while time.time() - t < float(sys.argv[1]):
    n += 1
sys.stdout.write("%d\n" % n)
