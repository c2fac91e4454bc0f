"""Mystery 1 (seed 004): a program waiting on a slow network response
(wchan: sk_wait_data). The server is slow_server.py.

    python3 slow_network.py PORT
"""
import socket
import sys

cli = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
cli.sendall(b"question\n")
print(cli.recv(100).decode().strip())
