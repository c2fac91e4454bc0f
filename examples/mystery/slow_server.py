"""A loopback server that answers each request after DELAY seconds: the far
end of mystery 1. Not traced with the client, as a remote server would not be.

    python3 slow_server.py PORT DELAY
"""
import socket
import sys
import threading
import time

port, delay = int(sys.argv[1]), float(sys.argv[2])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(8)


def answer(conn):
    conn.recv(100)
    time.sleep(delay)
    conn.sendall(b"the answer is 42\n")
    conn.close()


while True:
    conn, _ = srv.accept()
    threading.Thread(target=answer, args=(conn,), daemon=True).start()
