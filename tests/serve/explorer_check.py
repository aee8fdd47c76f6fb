#!/usr/bin/env python3
"""The explorer page of sg2 serve in a real browser (ctest Serve.Explorer): headless Chromium driven
over the DevTools protocol by a small WebSocket client (standard library only).

    python3 tests/serve/explorer_check.py build/sg2 [--screenshot docs/images/explorer.png] [--chromium PATH]

Checks: the page loads and shows an image; the next-seed button, a typed seed, style mixing, the
noise mode and the latent walk each show new images made by the API, and changing the seed changes
the pixels; no console error, no uncaught exception, no failed load. Exit 0 when all hold, 1 when one
fails, 77 (ctest: skipped) when no Chromium is installed. Every step has a timeout, and the browser and
the server are stopped however the check ends.
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Server  # noqa: E402


class WebSocket:
    """The client side of RFC 6455, enough for the DevTools protocol: text frames, masked."""

    def __init__(self, url, timeout):
        m = re.match(r'ws://([^:/]+):(\d+)(/.*)', url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f'GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\n'
                           f'Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n').encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise OSError('the DevTools socket closed during the handshake')
            head += chunk
        if b' 101 ' not in head.split(b'\r\n')[0]:
            raise OSError('DevTools handshake refused: ' + head.split(b'\r\n')[0].decode(errors='replace'))
        self.buf = head.split(b'\r\n\r\n', 1)[1]

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError('the DevTools socket closed')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack('>H', n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack('>Q', n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = b''
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack('>H', self._exact(2))[0]
            elif n == 127:
                n = struct.unpack('>Q', self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0f
            if opcode == 8:
                raise OSError('the browser closed the DevTools connection')
            if opcode in (0, 1, 2):
                message += payload
                if b0 & 0x80:
                    return message.decode()


class DevTools:
    def __init__(self, ws_url, timeout):
        self.ws = WebSocket(ws_url, timeout)
        self.next_id = 0
        self.events = []

    def call(self, method, timeout=30, **params):
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({'id': mine, 'method': method, 'params': params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get('id') == mine:
                if 'error' in msg:
                    raise RuntimeError(f'{method}: {msg["error"]}')
                return msg.get('result', {})
            if 'method' in msg:
                self.events.append(msg)
        raise TimeoutError(method)

    def eval(self, expr, timeout=30):
        r = self.call('Runtime.evaluate', timeout=timeout, expression=expr, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in r:
            raise RuntimeError(f'{expr}: {r["exceptionDetails"]}')
        return r['result'].get('value')

    def wait(self, expr, timeout=30, what=''):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.eval(expr):
                return
            time.sleep(0.1)
        raise TimeoutError(f'waited {timeout} s for {what or expr}; page state: {self.eval("JSON.stringify(window.sg2Explorer)")}')

    def problems(self):
        """Console errors, uncaught exceptions and failed loads seen so far."""
        out = []
        for e in self.events:
            m, p = e['method'], e.get('params', {})
            if m == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'assert'):
                out.append('console.' + p['type'] + ': ' + ' '.join(str(a.get('value', a.get('description'))) for a in p['args']))
            elif m == 'Runtime.exceptionThrown':
                out.append('exception: ' + json.dumps(p.get('exceptionDetails', {}))[:500])
            elif m == 'Log.entryAdded' and p.get('entry', {}).get('level') == 'error':
                out.append('log: ' + p['entry'].get('text', '') + ' ' + p['entry'].get('url', ''))
        return out


PIXELS = """(() => { const i = document.getElementById('view'); const c = document.createElement('canvas');
  c.width = i.naturalWidth; c.height = i.naturalHeight; c.getContext('2d').drawImage(i, 0, 0);
  return [i.naturalWidth, c.toDataURL('image/png')]; })()"""


def find_chromium(given):
    for name in ([given] if given else []) + ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def check(sg2, chromium, screenshot):
    profile = tempfile.mkdtemp(prefix='sg2_chromium_')
    try:
        with Server(sg2, '--jobs', '2') as srv:
            run_browser(chromium, srv, profile, screenshot)
    finally:
        remove_profile(profile)


def stop_browser(browser):
    """Ends chromium and every helper process it started (they share the session it was started in)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(browser.pid, sig)
        except ProcessLookupError:
            return
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue
        # the main process has ended; its helpers may still be flushing the profile
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(browser.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def remove_profile(profile):
    """Removes chromium's profile; a helper still writing into it makes rmtree race, so it retries."""
    for _ in range(50):
        try:
            shutil.rmtree(profile)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    shutil.rmtree(profile, ignore_errors=True)


def run_browser(chromium, srv, profile, screenshot):
    browser = subprocess.Popen([chromium, '--headless', '--disable-gpu', '--no-sandbox', '--no-first-run',
                                '--no-default-browser-check', '--disable-extensions', '--disable-dev-shm-usage',
                                '--remote-debugging-port=0', '--remote-debugging-address=127.0.0.1',
                                f'--user-data-dir={profile}', '--window-size=1200,800', 'about:blank'],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        os.set_blocking(browser.stderr.fileno(), False)
        deadline, err, ws_url = time.monotonic() + 60, b'', None
        while time.monotonic() < deadline and ws_url is None:
            chunk = browser.stderr.read() or b''
            err += chunk
            m = re.search(rb'DevTools listening on (ws://\S+)', err)
            if m:
                ws_url = m.group(1).decode()
            elif browser.poll() is not None:
                raise RuntimeError('chromium ended: ' + err.decode(errors='replace')[-1500:])
            else:
                time.sleep(0.1)
        if ws_url is None:
            raise TimeoutError('chromium did not open its DevTools port in 60 s: ' + err.decode(errors='replace')[-1500:])
        port = int(re.match(r'ws://[^:]+:(\d+)/', ws_url).group(1))
        with urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=20) as r:
            pages = [t for t in json.load(r) if t.get('type') == 'page']
        dt = DevTools(pages[0]['webSocketDebuggerUrl'], timeout=30)
        for domain in ('Runtime.enable', 'Log.enable', 'Page.enable'):
            dt.call(domain)
        dt.call('Emulation.setDeviceMetricsOverride', width=1200, height=800, deviceScaleFactor=1, mobile=False)
        dt.call('Page.navigate', url=f'http://127.0.0.1:{srv.port}/')
        dt.wait('window.sg2Explorer && window.sg2Explorer.loads >= 1', what='the first image')
        width, first = dt.eval(PIXELS)
        assert width == 32, f'the image is {width} px wide, expected 32'
        steps = [  # (what, JavaScript that changes a control, expected in the query)
            ('next seed button', "document.getElementById('next').click()", 'seed=1&'),
            ('typed seed', "(() => { const s = document.getElementById('seed'); s.value = '42';"
                           " s.dispatchEvent(new Event('change')); })()", 'seed=42&'),
            ('class', "(() => { const c = document.getElementById('class'); c.value = '7';"
                      " c.dispatchEvent(new Event('change')); })()", 'class=7'),
            ('style mixing', "document.getElementById('mix').click()", 'row-seed=42&col-seed=1&styles=0-6'),
            ('noise mode', "(() => { const n = document.getElementById('noise-mode'); n.value = 'random';"
                           " n.dispatchEvent(new Event('change')); })()", 'noise-mode=random'),
        ]
        seen = [first]
        for what, js, expected in steps:
            before = dt.eval('window.sg2Explorer.loads')
            dt.eval(js)
            dt.wait(f'window.sg2Explorer.loads > {before}', what=what)
            query = dt.eval('window.sg2Explorer.lastQuery')
            assert expected in query, f'{what}: the request was {query!r}, expected {expected!r} in it'
            seen.append(dt.eval(PIXELS)[1])
        assert seen[1] != seen[0], 'the next seed showed the same pixels'
        assert seen[2] not in seen[:2], 'a typed seed showed the same pixels as an earlier one'
        before = dt.eval('window.sg2Explorer.loads')
        dt.eval("document.getElementById('mix').click(); document.getElementById('walk-frames').value = '6';"
                " document.getElementById('walk').click()")
        dt.wait(f'window.sg2Explorer.loads >= {before} + 7 && !window.sg2Explorer.walking', timeout=60,
                what='the latent walk (7 frames)')
        state = dt.eval('JSON.stringify(window.sg2Explorer)')
        assert json.loads(state)['errors'] == 0, 'the page reported an error: ' + state
        if screenshot:
            dt.eval("(() => { const m = document.getElementById('mix'); if (m.checked) m.click();"
                    " const n = document.getElementById('noise-mode'); n.value = 'const';"
                    " n.dispatchEvent(new Event('change')); const s = document.getElementById('seed');"
                    " s.value = '7'; s.dispatchEvent(new Event('change')); })()")
            dt.wait(f'window.sg2Explorer.loads > {before} + 7', what='the screenshot image')
            time.sleep(0.3)
            shot = dt.call('Page.captureScreenshot', format='png')
            with open(screenshot, 'wb') as f:
                f.write(base64.b64decode(shot['data']))
        dt.call('Runtime.evaluate', expression='1')  # collect the last events
        problems = dt.problems()
        assert not problems, 'browser problems:\n  ' + '\n  '.join(problems)
        log = srv.stderr()
        n_walk = len(re.findall(r'"POST /v1/generate', log))
        print(f'explorer: {dt.eval("window.sg2Explorer.loads")} images shown in headless Chromium '
              f'({n_walk} walk frames POSTed), seed changes changed the pixels, no console errors'
              + (f'; screenshot {screenshot}' if screenshot else ''))
    finally:
        stop_browser(browser)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('sg2')
    p.add_argument('--screenshot')
    p.add_argument('--chromium')
    a = p.parse_args()
    chromium = find_chromium(a.chromium)
    if chromium is None:
        print('explorer_check: skipped: no chromium on PATH (Debian: apt-get install chromium; scripts/setup.sh does)')
        sys.exit(77)
    try:
        check(os.path.abspath(a.sg2), chromium, a.screenshot)
    except (AssertionError, RuntimeError, TimeoutError, OSError) as e:
        print(f'explorer_check: FAILED: {e}', file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
