# The Python program of the bench corpus (bench/corpus.sh records it with perf record
# -g): the interpreter's eval loop, object allocation, dicts, regular expressions,
# json, zlib and sorting, in one process, so its profile spreads over libpython's many
# functions, libc, libz and the kernel rather than one hot loop.
# Usage: python3 work.py CPU-SECONDS (its own CPU time, so that a busy machine does not
# shorten the profile)
import json
import re
import sys
import time
import zlib

WORD = re.compile(r"[a-z]+[0-9]*")


class Item:
    def __init__(self, i):
        self.key = "item%d" % (i * 7919 % 10007)
        self.value = i * 31 % 977
        self.tags = [chr(97 + (i + k) % 26) * (1 + k % 3) for k in range(4)]

    def score(self):
        return sum(len(t) for t in self.tags) * self.value % 1013


def build(n):
    return [Item(i) for i in range(n)]


def index(items):
    d = {}
    for it in items:
        d.setdefault(it.value % 97, []).append(it.key)
    return d


def text(items):
    doc = json.dumps([{"k": it.key, "v": it.value, "t": it.tags} for it in items])
    words = WORD.findall(doc)
    back = json.loads(doc)
    return len(zlib.compress(doc.encode(), 6)) + len(words) + len(back)


def rank(items):
    return sorted(items, key=lambda it: (it.score(), it.key))[:10]


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    t0 = time.process_time()
    total = 0
    while time.process_time() - t0 < secs:
        items = build(3000)
        total += len(index(items))
        total += text(items)
        total += len(rank(items))
    return 0 if total >= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
