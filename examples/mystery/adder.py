"""Mystery 2 (seed 004): CPU-bound: adds numbers for SECONDS seconds (user time = elapsed).

    python3 adder.py [SECONDS]
"""
import sys
import time

end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
total = 0
while time.monotonic() < end:
    for i in range(100000):
        total += i
print(total)
