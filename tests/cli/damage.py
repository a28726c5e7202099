#!/usr/bin/env python3
"""Make damaged perf.data files from good ones, for tests/cli/test-broken-files.sh.

Usage: damage.py FILE_MODE.data PIPE_MODE.data ZSTD.data OUTDIR

Writes OUTDIR/KIND.data for every kind of damage below and OUTDIR/MANIFEST with one
line per file: "KIND EXPECT SCOPE WHAT", where EXPECT is
  fail   damaged: readers must print a message and exit nonzero
  short  merely cut short: readers read up to the last complete record, warn how much
         is missing, exit 0
  warn   readable with a warning (an unknown record type, skipped by its size), exit 0
SCOPE is "head" for damage to what every reader reads (file header, attrs, features,
pipe attrs) and "data" for damage that only a command walking the records can see
(evlist, like perf evlist, reads no records).
The inputs are perf 6.1 files (tests/fuzz/corpus/); every offset patched here is found
by walking the file's own structures, so a re-recorded input works too.
"""
import struct
import sys
import os

PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR = 1, 2, 4, 8
PERF_SAMPLE_READ, PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_ID, PERF_SAMPLE_CPU = 16, 32, 64, 128
PERF_SAMPLE_PERIOD, PERF_SAMPLE_STREAM_ID = 256, 512
PERF_SAMPLE_IDENTIFIER = 1 << 16

HDR = struct.Struct('<8sQQQQQQQQ4Q')  # magic size attr_size attrs data event_types features


class File:
    """A file-mode perf.data: header fields and the list of data records."""

    def __init__(self, raw):
        self.raw = bytes(raw)
        f = HDR.unpack_from(raw, 0)
        (self.magic, self.size, self.attr_size, self.attrs_off, self.attrs_size,
         self.data_off, self.data_size) = f[:7]
        self.features = f[9:13]
        self.records = []  # (offset, type, size)
        off, end = self.data_off, self.data_off + self.data_size
        while off + 8 <= end:
            t, _misc, sz = struct.unpack_from('<IHH', raw, off)
            if sz < 8:
                break
            self.records.append((off, t, sz))
            off += sz
        self.feat_table = self.data_off + self.data_size
        bits = [b for b in range(256) if self.features[b // 64] >> (b % 64) & 1]
        self.feat = {}  # bit -> (table entry offset, payload offset, payload size)
        for i, b in enumerate(bits):
            ent = self.feat_table + 16 * i
            o, s = struct.unpack_from('<QQ', raw, ent)
            self.feat[b] = (ent, o, s)

    def first(self, rtype):
        for r in self.records:
            if r[1] == rtype:
                return r
        return None  # this input has none: the kinds that need it are left out

    def sample_type(self):
        return struct.unpack_from('<Q', self.raw, self.attrs_off + 24)[0]


def put(buf, off, fmt, *vals):
    struct.pack_into('<' + fmt, buf, off, *vals)


def pipe_records(raw):
    out, off = [], 16
    while off + 8 <= len(raw):
        t, _m, sz = struct.unpack_from('<IHH', raw, off)
        if sz < 8 or off + sz > len(raw):
            break
        out.append((off, t, sz))
        off += sz
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    fraw = open(sys.argv[1], 'rb').read()
    praw = open(sys.argv[2], 'rb').read()
    zraw = open(sys.argv[3], 'rb').read()
    outdir = sys.argv[4]
    os.makedirs(outdir, exist_ok=True)
    F = File(fraw)
    Z = File(zraw)
    P = pipe_records(praw)
    manifest = []

    data_kinds = ('trunc-data', 'pipe-trunc', 'record-', 'id-index', 'thread-map', 'cpu-map',
                  'sample-', 'unknown-record', 'compressed-', 'pipe-record')

    def emit(kind, expect, what, data):
        scope = 'data' if kind.startswith(data_kinds) else 'head'
        with open(os.path.join(outdir, kind + '.data'), 'wb') as fh:
            fh.write(bytes(data))
        manifest.append('%s %s %s %s' % (kind, expect, scope, what))

    def patched(base, *edits):
        b = bytearray(base)
        for off, fmt, vals in edits:
            put(b, off, fmt, *vals)
        return b

    # --- truncation ---------------------------------------------------------------
    emit('empty', 'fail', 'zero-length file', b'')
    emit('trunc-header', 'fail', 'cut inside the file header', fraw[:50])
    emit('trunc-attrs', 'fail', 'cut inside the attrs section',
         fraw[:F.attrs_off + 40])
    mid = F.records[len(F.records) // 2]
    emit('trunc-data-mid-record', 'short', 'cut in the middle of a data record',
         fraw[:mid[0] + mid[2] // 2])
    emit('trunc-data-boundary', 'short', 'cut at a record boundary inside the data',
         fraw[:mid[0]])
    pmid = P[len(P) * 2 // 3]
    emit('pipe-trunc', 'short', 'pipe stream cut in the middle of a record',
         praw[:pmid[0] + pmid[2] // 2])

    # --- file header ----------------------------------------------------------------
    emit('wrong-magic', 'fail', 'magic is not PERFILE2', b'PERFXXXX' + fraw[8:])
    emit('header-size-wrong', 'fail', 'header.size 200 instead of 104',
         patched(fraw, (8, 'Q', (200,))))
    emit('attr-size-zero', 'fail', 'header.attr_size 0',
         patched(fraw, (16, 'Q', (0,))))
    emit('attr-size-huge', 'fail', 'header.attr_size 2^40',
         patched(fraw, (16, 'Q', (1 << 40,))))
    emit('attrs-offset-outside', 'fail', 'attrs section starts past the end of the file',
         patched(fraw, (24, 'Q', (len(fraw) + 4096,))))
    emit('attrs-size-odd', 'fail', 'attrs.size not a multiple of attr_size',
         patched(fraw, (32, 'Q', (F.attrs_size + 7,))))
    emit('attrs-size-huge', 'fail', 'attrs.size 2^62 (huge count of attrs)',
         patched(fraw, (32, 'Q', (1 << 62,))))
    emit('data-offset-outside', 'fail', 'data section starts past the end of the file',
         patched(fraw, (40, 'Q', (len(fraw) + 100,))))
    emit('data-size-wraps', 'fail', 'data.offset + data.size overflows 64 bits',
         patched(fraw, (48, 'Q', ((1 << 64) - 8,))))

    # --- attrs ----------------------------------------------------------------------
    emit('attr-inner-size-huge', 'fail', 'perf_event_attr.size 4096 (inconsistent attr)',
         patched(fraw, (F.attrs_off + 4, 'I', (4096,))))
    ids_ent = F.attrs_off + F.attr_size - 16
    emit('attr-ids-outside', 'fail', "an attr's id array points past the end of the file",
         patched(fraw, (ids_ent, 'Q', (1 << 50,))))
    emit('attr-ids-huge', 'fail', "an attr's id array is 2^60 bytes long",
         patched(fraw, (ids_ent + 8, 'Q', (1 << 60,))))

    # --- records --------------------------------------------------------------------
    r = F.records[2]
    emit('record-size-zero', 'fail', 'a data record with header.size 0',
         patched(fraw, (r[0] + 6, 'H', (0,))))
    emit('record-size-small', 'fail', 'a data record with header.size 4',
         patched(fraw, (r[0] + 6, 'H', (4,))))
    last = F.records[-1]
    emit('record-past-data-end', 'fail', 'the last record runs past the end of the data section',
         patched(fraw, (last[0] + 6, 'H', (0xfff8,))))
    r = F.first(69)
    if r:
        emit('id-index-huge-nr', 'fail', 'ID_INDEX with nr 2^60',
             patched(fraw, (r[0] + 8, 'Q', (1 << 60,))))
    r = F.first(73)
    if r:
        emit('thread-map-huge-nr', 'fail', 'THREAD_MAP with nr 2^60',
             patched(fraw, (r[0] + 8, 'Q', (1 << 60,))))
    r = F.first(74)
    if r:
        emit('cpu-map-huge-nr', 'fail', 'CPU_MAP with nr 0xffff (record holds far fewer)',
             patched(fraw, (r[0] + 10, 'H', (0xffff,))))
    # First sample: find its callchain nr.
    st = F.sample_type()
    if st & PERF_SAMPLE_CALLCHAIN and not st & PERF_SAMPLE_READ:
        off = 8
        for bit in (PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME,
                    PERF_SAMPLE_ADDR, PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
                    PERF_SAMPLE_PERIOD):
            if st & bit:
                off += 8
        r = F.first(9)
        emit('sample-callchain-huge', 'fail', 'a SAMPLE whose callchain nr is 2^40',
             patched(fraw, (r[0] + off, 'Q', (1 << 40,))))
    r = F.first(82) or F.records[-1]
    emit('unknown-record-type', 'warn', 'a record of unknown type 200 (skipped by its size)',
         patched(fraw, (r[0], 'I', (200,))))

    # --- features -------------------------------------------------------------------
    ent = F.feat[3][0]  # HOSTNAME (every perf and tally file has it)
    emit('feature-offset-outside', 'fail', 'HOSTNAME feature section points past the end',
         patched(fraw, (ent, 'Q', (1 << 40,))))
    emit('feature-size-huge', 'fail', 'HOSTNAME feature section is 2^62 bytes',
         patched(fraw, (ent + 8, 'Q', (1 << 62,))))
    emit('feature-string-len-huge', 'fail', 'HOSTNAME string length 0xfffffff0',
         patched(fraw, (F.feat[3][1], 'I', (0xfffffff0,))))
    emit('event-desc-huge-nr', 'fail', 'EVENT_DESC with nr 0x7fffffff',
         patched(fraw, (F.feat[12][1], 'I', (0x7fffffff,))))
    emit('event-desc-attr-size-huge', 'fail', 'EVENT_DESC with attr_size 0x7fffffff',
         patched(fraw, (F.feat[12][1] + 4, 'I', (0x7fffffff,))))

    # --- compressed -----------------------------------------------------------------
    r = Z.first(81)
    b = bytearray(zraw)
    b[r[0] + 8:r[0] + r[2]] = bytes([0xa5]) * (r[2] - 8)
    emit('compressed-garbage', 'fail', 'a COMPRESSED record holding garbage, not zstd', b)

    # --- pipe mode ------------------------------------------------------------------
    pa = next(x for x in P if x[1] == 64)
    emit('pipe-wrong-header-size', 'fail', 'pipe header.size 17',
         patched(praw, (8, 'Q', (17,))))
    emit('pipe-attr-record-short', 'fail', 'HEADER_ATTR record smaller than an attr',
         patched(praw, (pa[0] + 6, 'H', (16,))))
    emit('pipe-attr-inner-size-huge', 'fail', 'HEADER_ATTR attr.size 0x10000',
         patched(praw, (pa[0] + 8 + 4, 'I', (0x10000,))))
    pr = P[len(P) // 2]
    emit('pipe-record-size-zero', 'fail', 'a pipe record with header.size 0',
         patched(praw, (pr[0] + 6, 'H', (0,))))

    with open(os.path.join(outdir, 'MANIFEST'), 'w') as fh:
        fh.write('\n'.join(manifest) + '\n')


if __name__ == '__main__':
    main()
