#!/usr/bin/env python3
"""Compare the shape of two perf-stat-format outputs (perf's and tally's).

usage: shape.py MODE PERF_FILE TALLY_FILE     MODE: std | csv | json
std : every line has the same length and the same text once numbers are masked
      (so column widths, units, prefixes, padding and trailing spaces must match);
csv : every line has the same number of separators and the same masked fields;
json: every line parses, with the same keys in the same order and value types.
Rate units (/sec, K/sec, M/sec) count as one, since the values differ; so do the
comm-pid prefixes of --per-thread (perf's and tally's targets are different tasks).
Exit 0 when the shapes match, else 1 with the first difference on stderr.
"""
import json
import re
import sys

NUM = re.compile(r'[-+]?[0-9][0-9.,]*')


def mask(s):
    s = re.sub(r'[KMG]/sec', '/sec', s)
    s = NUM.sub('#', s)
    return re.sub(r' +', ' ', s)


def lines(path):
    with open(path) as f:
        return [l for l in f.read().split('\n') if not l.startswith('# started on')]


def strip_comm(l):
    return re.sub(r'^(\s*[0-9.]*[ ,]?\s*)[^\s,]+-[0-9]+', r'\1COMM-0', l)


def std(p, t):
    if len(p) != len(t):
        return 'line count %d != %d\n--- perf\n%s\n--- tally\n%s' % (
            len(p), len(t), '\n'.join(p), '\n'.join(t))
    for a, b in zip(p, t):
        # -r's elapsed line prints as many digits as the stddev needs: data-dependent
        varies = '+-' in a and 'time elapsed' in a
        if len(a) != len(b) and strip_comm(a) == a and not varies:
            return 'length %d != %d:\n  perf : %r\n  tally: %r' % (len(a), len(b), a, b)
        if mask(strip_comm(a)) != mask(strip_comm(b)):
            return 'text differs:\n  perf : %r\n  tally: %r' % (a, b)
    return None


def csv(p, t, sep=','):
    p = [l for l in p if l]
    t = [l for l in t if l]
    if len(p) != len(t):
        return 'line count %d != %d\n--- perf\n%s\n--- tally\n%s' % (
            len(p), len(t), '\n'.join(p), '\n'.join(t))
    for a, b in zip(p, t):
        if a.count(sep) != b.count(sep):
            return 'separators %d != %d:\n  perf : %r\n  tally: %r' % (
                a.count(sep), b.count(sep), a, b)
        fa = [mask(x).strip() for x in strip_comm(a).split(sep)]
        fb = [mask(x).strip() for x in strip_comm(b).split(sep)]
        if fa != fb:
            return 'fields differ:\n  perf : %r\n  tally: %r' % (a, b)
    return None


def jshape(o):
    return [(k, type(v).__name__, mask(v) if isinstance(v, str) and k != 'thread' else None)
            for k, v in o.items()]


def jsn(p, t):
    p = [l for l in p if l.strip()]
    t = [l for l in t if l.strip()]
    if len(p) != len(t):
        return 'line count %d != %d\n--- perf\n%s\n--- tally\n%s' % (
            len(p), len(t), '\n'.join(p), '\n'.join(t))
    for a, b in zip(p, t):
        try:
            oa, ob = json.loads(a), json.loads(b)
        except ValueError as e:
            return 'not JSON (%s): %r / %r' % (e, a, b)
        if jshape(oa) != jshape(ob):
            return 'keys/types differ:\n  perf : %r\n  tally: %r' % (a, b)
    return None


def main():
    mode, pf, tf = sys.argv[1:4]
    err = {'std': std, 'csv': csv, 'json': jsn}[mode](lines(pf), lines(tf))
    if err:
        sys.stderr.write(err + '\n')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
