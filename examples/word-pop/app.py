"""word-pop: the Flask API of "Why is my disk I/O latency high?" (seed 000).

/popularity/<word> writes 1000 generated articles to SCRATCH/<uuid1>/<i>.txt,
reads them back to count the word, then removes the directory: slow on a slow
disk, and the writing happens in a request thread, not the main thread.
/popular/<word> is the fix: the same work in memory.

    WORDPOP_SCRATCH=/tmp WORDPOP_PORT=8000 python3 app.py
"""
import os
import random
import shutil
import string
import uuid

from flask import Flask

app = Flask(__name__)
SCRATCH = os.environ.get("WORDPOP_SCRATCH", "/tmp")
ARTICLES = int(os.environ.get("WORDPOP_ARTICLES", "1000"))
ARTICLE_BYTES = int(os.environ.get("WORDPOP_ARTICLE_BYTES", "16384"))
WORDS = ["".join(random.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(200)]


def article(word):
    body = random.choices(WORDS + [word], k=ARTICLE_BYTES // 7)
    return " ".join(body)[:ARTICLE_BYTES]


@app.route("/")
def hello():
    return "hello world\n"


@app.route("/popularity/<word>")
def popularity(word):
    d = os.path.join(SCRATCH, str(uuid.uuid1()))
    os.mkdir(d)
    for i in range(ARTICLES):
        with open(os.path.join(d, "%d.txt" % i), "w") as f:
            f.write(article(word))
    count = 0
    for i in range(ARTICLES):
        with open(os.path.join(d, "%d.txt" % i)) as f:
            count += f.read().count(word)
    shutil.rmtree(d)
    return {"word": word, "count": count}


@app.route("/popular/<word>")
def popular(word):
    count = sum(article(word).count(word) for _ in range(ARTICLES))
    return {"word": word, "count": count}


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("WORDPOP_PORT", "8000")), threaded=True)
