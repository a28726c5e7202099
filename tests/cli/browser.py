#!/usr/bin/env python3
"""Drive a page in headless Chromium over the DevTools protocol, for tests of pages
tally writes (tests/cli/test-flamegraph.sh) and the flame graph bench.

The browser is Debian's chromium, started with a fresh profile directory and every
network-facing feature off, and spoken to over --remote-debugging-pipe (file
descriptors 3 and 4, NUL-separated JSON): no port, no WebSocket library, nothing
outside this machine. Clicks and key strokes are real input events
(Input.dispatchMouseEvent / Input.dispatchKeyEvent), so the page sees a user typing
into its own search box, not a script setting its value.

Usage: browser.py PAGE OUTDIR STEP...
Steps, run in order after the page has loaded (its <html> got data-render-ms):
  eval:JS            print the value of JS
  wait:JS            wait until JS is true (print true)
  shot:NAME          screenshot to OUTDIR/NAME.png; print its size, the share of
                     pixels unlike the most common colour and how many colours it has
  click:SEL          click the centre of the first element matching CSS selector SEL,
                     or of the widest flame graph frame of function NAME for SEL = frame=NAME
                     (found through the page's tallyFlame.nameOf)
  hover:SEL          move the mouse there
  type:SEL:TEXT      click SEL, then type TEXT one key at a time
  key:KEY            press a key ("Escape")
Each step prints one line: STEP-NUMBER TAB JSON. Exit status 0, or 1 with a message
on stderr (the browser failed, a step's element was missing, a timeout).
"""
import base64
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

CHROMIUM = os.environ.get('TALLY_CHROMIUM', 'chromium')
TIMEOUT = 60.0
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-extensions', '--disable-default-apps', '--mute-audio',
         '--hide-scrollbars', '--window-size=1280,800', '--remote-debugging-pipe']


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix='tally-chromium.')
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        a, b = os.dup(to_r), os.dup(from_w)

        def fds():
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [CHROMIUM] + FLAGS + ['--user-data-dir=' + self.profile, 'about:blank'],
            preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_r, from_w, a, b):
            os.close(fd)
        self.buf = b''
        self.id = 0
        self.session = None
        self.events = []

    def close(self):
        try:
            self.send('Browser.close', session=False)
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)
        shutil.rmtree(self.profile, ignore_errors=True)

    def read_message(self, deadline):
        while b'\0' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise SystemExit('browser.py: chromium did not answer in time')
            chunk = os.read(self.from_r, 1 << 16)
            if not chunk:
                raise SystemExit('browser.py: chromium went away')
            self.buf += chunk
        msg, self.buf = self.buf.split(b'\0', 1)
        return json.loads(msg)

    def send(self, method, params=None, session=True):
        self.id += 1
        msg = {'id': self.id, 'method': method, 'params': params or {}}
        if session and self.session:
            msg['sessionId'] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b'\0')
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = self.read_message(deadline)
            if m.get('id') == self.id:
                if 'error' in m:
                    raise SystemExit('browser.py: %s: %s' % (method, m['error']))
                return m.get('result', {})
            self.events.append(m)

    def attach(self):
        targets = self.send('Target.getTargets', session=False)['targetInfos']
        page = [t for t in targets if t['type'] == 'page'][0]
        self.session = self.send('Target.attachToTarget',
                                 {'targetId': page['targetId'], 'flatten': True},
                                 session=False)['sessionId']
        self.send('Page.enable')
        self.send('Runtime.enable')

    def eval(self, js):
        r = self.send('Runtime.evaluate', {'expression': js, 'returnByValue': True,
                                           'awaitPromise': True})
        if 'exceptionDetails' in r:
            raise SystemExit('browser.py: script failed: %s: %s' % (
                js, r['exceptionDetails'].get('exception', {}).get('description', '?')))
        return r['result'].get('value')

    def wait(self, js, what):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if self.eval(js):
                return
            time.sleep(0.05)
        raise SystemExit('browser.py: timed out waiting for ' + what)

    def centre(self, sel):
        if sel.startswith('frame='):
            # the widest frame of that name: a stack cut short (a sample in a
            # prologue) may draw a narrow one of the same name first
            js = ('(function(){var g=null,w=-1;[...document.querySelectorAll("#svg g")]'
                  '.forEach(function(x){var v=+x.querySelector("rect").getAttribute("width");'
                  'if(tallyFlame.nameOf(x)===%s&&v>w){g=x;w=v}});if(!g)return null;'
                  'g.scrollIntoView({block:"center"});'
                  'var r=g.querySelector("rect").getBoundingClientRect();'
                  'return [r.left+Math.min(r.width/2,20),r.top+r.height/2];})()'
                  % json.dumps(sel[6:]))
        else:
            js = ('(function(){var e=document.querySelector(%s);if(!e)return null;'
                  'e.scrollIntoView({block:"center"});var r=e.getBoundingClientRect();'
                  'return [r.left+r.width/2,r.top+r.height/2];})()' % json.dumps(sel))
        xy = self.eval(js)
        if not xy:
            raise SystemExit('browser.py: no element ' + sel)
        return xy

    def mouse(self, kind, xy, **extra):
        p = {'type': kind, 'x': xy[0], 'y': xy[1]}
        p.update(extra)
        self.send('Input.dispatchMouseEvent', p)

    def click(self, sel):
        xy = self.centre(sel)
        self.mouse('mouseMoved', xy)
        self.mouse('mousePressed', xy, button='left', clickCount=1)
        self.mouse('mouseReleased', xy, button='left', clickCount=1)

    def key(self, key, text=None):
        down = {'type': 'keyDown', 'key': key}
        if text is not None:
            down.update(text=text, unmodifiedText=text)
        if key == 'Escape':
            down.update(code='Escape', windowsVirtualKeyCode=27)
        self.send('Input.dispatchKeyEvent', down)
        self.send('Input.dispatchKeyEvent', {'type': 'keyUp', 'key': key})


def png_stats(data):
    """Size, share of pixels unlike the most common colour, and distinct colours of
    an 8-bit RGB(A) PNG (what Chromium writes)."""
    pos, idat, w = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise SystemExit('browser.py: unexpected PNG type %d/%d' % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    counts = {}
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            px = bytes(line[x:x + 3])
            counts[px] = counts.get(px, 0) + 1
        prev = line
    total = w * h
    common = max(counts.values())
    return {'width': w, 'height': h, 'unlike_background': round(1 - common / total, 4),
            'colours': len(counts)}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    page, outdir, steps = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
    b = Browser()
    try:
        b.attach()
        b.send('Page.navigate', {'url': 'file://' + page})
        b.wait('!!(document.documentElement && document.documentElement.dataset.renderMs)',
               'the page to draw itself')
        for i, step in enumerate(steps, 1):
            kind, _, arg = step.partition(':')
            if kind == 'eval':
                out = b.eval(arg)
            elif kind == 'wait':
                b.wait(arg, arg)
                out = True
            elif kind == 'shot':
                png = base64.b64decode(b.send('Page.captureScreenshot', {'format': 'png'})['data'])
                with open(os.path.join(outdir, arg + '.png'), 'wb') as f:
                    f.write(png)
                out = png_stats(png)
            elif kind == 'click':
                b.click(arg)
                out = True
            elif kind == 'hover':
                b.mouse('mouseMoved', b.centre(arg))
                out = True
            elif kind == 'type':
                sel, _, text = arg.partition(':')
                b.click(sel)
                for ch in text:
                    b.key(ch, ch)
                out = b.eval('document.activeElement === document.querySelector(%s)'
                             % json.dumps(sel))
            elif kind == 'key':
                b.key(arg)
                out = True
            else:
                raise SystemExit('browser.py: unknown step ' + step)
            print('%d\t%s' % (i, json.dumps(out)), flush=True)
    finally:
        b.close()


if __name__ == '__main__':
    main()
