"""Times requests like `time curl`: prints one line per request, seconds."""
import sys
import time
import urllib.request

url, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
for _ in range(n):
    t = time.monotonic()
    urllib.request.urlopen(url, timeout=300).read()
    print("%.3f %s" % (time.monotonic() - t, url), flush=True)
