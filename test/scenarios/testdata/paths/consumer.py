# Reads what the producer writes: it waits on the pipe.
import sys
print(len(sys.stdin.read()))
