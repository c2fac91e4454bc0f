"""Requests the board every 0.5 s and prints each latency in ms."""
import sys
import time
import urllib.request

url, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    t = time.monotonic()
    urllib.request.urlopen(url, timeout=60).read()
    print("%.1f" % ((time.monotonic() - t) * 1000), flush=True)
    time.sleep(0.5)
