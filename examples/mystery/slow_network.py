"""Mystery 1 (seed 004): a program waiting on a slow network response. It
starts a loopback server that answers after DELAY seconds in a child process,
then asks it and waits (wchan: sk_wait_data).

    python3 slow_network.py [DELAY]
"""
import os
import socket
import sys
import time

delay = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
if os.fork() == 0:
    conn, _ = srv.accept()
    conn.recv(100)
    time.sleep(delay)
    conn.sendall(b"the answer is 42\n")
    conn.close()
    os._exit(0)
srv.close()
cli = socket.create_connection(("127.0.0.1", port))
cli.sendall(b"question\n")
print(cli.recv(100).decode().strip())
os.wait()
