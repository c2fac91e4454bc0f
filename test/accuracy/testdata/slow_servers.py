# The slow servers the accuracy programs ask: over TCP and UDP on 127.0.0.1
# and over a Unix socket (its path the first argument), each request is a
# number of seconds, answered "ok" after them (at most MAX). Prints
# "tcp=PORT udp=PORT" when it listens; exits when its stdin closes, so a
# test that dies takes it along.
#
# The ports are below the ephemeral range (net.ipv4.ip_local_port_range
# begins at 32768 by default), as a real service's: whyslow tells a
# client's end of a connection from a server's by which port is ephemeral.
import random
import socket
import socketserver
import sys
import threading
import time

MAX = 5.0


def delay(request):
    try:
        return min(max(float(request), 0.0), MAX)
    except ValueError:
        return 0.0


class Stream(socketserver.StreamRequestHandler):
    def handle(self):
        time.sleep(delay(self.rfile.readline()))
        self.wfile.write(b'ok\n')


class Datagram(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        time.sleep(delay(data))
        sock.sendto(b'ok\n', self.client_address)


class TCP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class UDP(socketserver.ThreadingUDPServer):
    daemon_threads = True


class Unix(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def below_ephemeral(server, handler):
    for _ in range(200):
        try:
            return server(('127.0.0.1', random.randrange(20000, 30000)), handler)
        except OSError:
            continue
    sys.exit('no free port in 20000-29999')


tcp = below_ephemeral(TCP, Stream)
udp = below_ephemeral(UDP, Datagram)
unix = Unix(sys.argv[1], Stream)
for s in (tcp, udp, unix):
    threading.Thread(target=s.serve_forever, daemon=True).start()
print('tcp=%d udp=%d' % (tcp.server_address[1], udp.server_address[1]), flush=True)
sys.stdin.read()
