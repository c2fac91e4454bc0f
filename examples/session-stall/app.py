"""A web app in the image of the PHP board of "Finding the Root Cause of a Web
Request Latency" (seed 003): each request opens (or creates) a session file,
reads a SQLite database, and appends to an access log.

    python3 app.py DIR PORT
"""
import http.server
import os
import socketserver
import sqlite3
import sys
import time

root, port = sys.argv[1], int(sys.argv[2])
sessions = os.path.join(root, "sessions")
os.makedirs(sessions, exist_ok=True)
db_path = os.path.join(root, "board.sqlite")
if not os.path.exists(db_path):
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE posts (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    db.executemany("INSERT INTO posts (title, body) VALUES (?, ?)",
                   [("post %d" % i, "x" * 500) for i in range(2000)])
    db.commit()
    db.close()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        sess = os.path.join(sessions, "sess_board")
        with open(sess, "a+") as f:          # PHP's session_start(): open, read
            f.seek(0)
            data = f.read()[-4000:]
            f.truncate(0)                    # session_write_close(): truncate, write
            f.write(data + "visit %f\n" % time.time())
        db = sqlite3.connect(db_path)
        rows = db.execute("SELECT title, body FROM posts ORDER BY id DESC LIMIT 20").fetchall()
        db.close()
        with open(os.path.join(root, "access.log"), "a") as log:
            log.write("%s GET %s\n" % (time.time(), self.path))
        body = ("%d posts\n" % len(rows)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("127.0.0.1", port), Handler).serve_forever()
