"""Open an HTML file in headless Chromium and report what it rendered (standard library only).

The release report (:mod:`redactopt.interface.html`) is meant to be read in a browser, so its
tests, its benchmark and the README's screenshot load it in a real one: Debian's ``chromium``
(``apt-get install chromium``), or the program named by ``REDACTOPT_CHROMIUM``.  The browser is
driven through the DevTools protocol over a WebSocket written out here (a few dozen lines of
RFC 6455: one client, text frames, no extensions), so nothing beyond the standard library and the
browser itself is needed.

:func:`render` loads a page and returns a :class:`Rendered`: the seconds from navigation until the
page has loaded and painted, every console message, uncaught exception and log entry at error
level, every request for something other than the page itself and ``data:`` URLs, the size of
every image, and the text of every element carrying a ``data-key`` attribute.  :func:`screenshot`
writes a PNG of the top of the page.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redactopt import _tempfiles

__all__ = ["BrowserError", "Rendered", "find_browser", "render", "screenshot", "CHROMIUM_FLAGS"]

#: Flags that make headless Chromium work in a container and keep it off the network.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars")

#: What :func:`render` reads from the page once it has painted.
_PROBE = """(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  return JSON.stringify({
    title: document.title,
    images: Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete,
      natural: [i.naturalWidth, i.naturalHeight], shown: box(i)})),
    svgs: Array.from(document.querySelectorAll('svg')).map(box),
    keys: Array.from(document.querySelectorAll('[data-key]')).map(e => [e.dataset.key, e.innerText]),
    text_length: document.body ? document.body.innerText.length : 0,
    height: document.documentElement.scrollHeight,
  });
})()"""


class BrowserError(RuntimeError):
    """No browser was found, or it did not load the page (the message says which)."""


@dataclass
class Rendered:
    """What :func:`render` saw.

    Attributes
    ----------
    seconds : float
        From the navigation until the load event fired and two frames were painted.
    errors : list of str
        Console messages of level error or warning, uncaught exceptions, log entries of level error.
    requests : list of str
        URLs requested other than the page itself and ``data:`` URLs (a self-contained page: none).
    images : list of dict
        Per ``<img>``: ``alt``, ``complete``, ``natural`` (intrinsic size) and ``shown`` (laid-out size).
    svgs : list of list of float
        Laid-out ``[width, height]`` of every inline ``<svg>``.
    keys : list of tuple of str
        ``(data-key, innerText)`` of every element with a ``data-key`` attribute, in document order.
    title : str
        The document title.
    text_length : int
        Characters of the body's rendered text.
    height : int
        The page's scroll height in CSS pixels (at a 1280-pixel-wide viewport).
    """

    seconds: float
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    svgs: list[list[float]] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)
    title: str = ""
    text_length: int = 0
    height: int = 0


def find_browser() -> str:
    """The Chromium executable: ``REDACTOPT_CHROMIUM``, else the first of chromium, chromium-browser,
    google-chrome on the PATH; :class:`BrowserError` (with the install command) when there is none."""
    named = os.environ.get("REDACTOPT_CHROMIUM")
    if named:
        found = shutil.which(named)
        if found is None:
            raise BrowserError(f"REDACTOPT_CHROMIUM={named!r}: no such program")
        return found
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError("no headless browser found: install Chromium (Debian: apt-get install -y chromium) "
                       "or set REDACTOPT_CHROMIUM to its executable")


class _Socket:
    """A minimal WebSocket client (RFC 6455) for the DevTools protocol: masked text frames out,
    unmasked (possibly fragmented) frames in, pings answered."""

    def __init__(self, url: str, timeout: float) -> None:
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BrowserError("the browser closed the DevTools connection during the handshake")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" ":
            raise BrowserError(f"DevTools handshake refused: {status.decode(errors='replace')}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise BrowserError("the browser closed the DevTools connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str, opcode: int = 0x1) -> None:
        data = text.encode()
        n = len(data)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise BrowserError("the browser closed the DevTools connection")
            if opcode == 0x9:
                self.send(data.decode(errors="replace"), opcode=0xA)
                continue
            if opcode in (0x0, 0x1, 0x2):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _Session:
    """One page of a headless Chromium, driven over the DevTools protocol (flattened session)."""

    def __init__(self, timeout: float, width: int, height: int) -> None:
        self.timeout = timeout
        self.dir = _tempfiles.temp_dir(prefix="redactopt-chromium.")
        self.proc = subprocess.Popen([find_browser(), *CHROMIUM_FLAGS, f"--user-data-dir={self.dir}",
                                      "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.ws: _Socket | None = None
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        try:
            self.ws = _Socket(self._endpoint(), timeout)
            target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
            self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                     session=False)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.call(f"{domain}.enable")
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.close()
            raise

    def _endpoint(self) -> str:
        """The browser's DevTools WebSocket URL, from the file it writes into its profile folder."""
        port_file = Path(self.dir) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise BrowserError(f"the browser exited with status {self.proc.returncode}: {err.strip()[-300:]}")
            lines = port_file.read_text().split("\n") if port_file.exists() else []
            if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                return f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}"
            time.sleep(0.02)
        raise BrowserError(f"the browser did not open its DevTools port within {self.timeout:g} s")

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        """Send one command and wait for its answer (events meanwhile are kept in ``events``)."""
        assert self.ws is not None
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message', reply['error'])}")
                return reply.get("result", {})

    def _message(self) -> dict[str, Any]:
        assert self.ws is not None
        try:
            msg = json.loads(self.ws.recv())
        except TimeoutError:
            raise BrowserError(f"the browser did not answer within {self.timeout:g} s") from None
        if "method" in msg:
            self.events.append(msg)
        return msg

    def wait_for(self, method: str) -> None:
        """Wait until the event ``method`` has arrived (it may have arrived already)."""
        while not any(e["method"] == method for e in self.events):
            self._message()

    def close(self) -> None:
        if self.ws is not None:
            try:
                self.ws.send(json.dumps({"id": self.next_id + 1, "method": "Browser.close"}))
            except OSError:
                pass
            self.ws.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:                                   # the browser and any helper left: its own process group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        _tempfiles.settled(self.dir)

    def load(self, path: Path) -> float:
        """Navigate to ``path``; the seconds until it has loaded and painted two frames."""
        t0 = time.perf_counter()
        nav = self.call("Page.navigate", {"url": path.resolve().as_uri()})
        if nav.get("errorText"):
            raise BrowserError(f"{path}: the browser could not open it: {nav['errorText']}")
        self.wait_for("Page.loadEventFired")
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))")
        return time.perf_counter() - t0

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in res:
            raise BrowserError(f"script failed in the page: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")


def _problems(events: list[dict[str, Any]], page: str) -> tuple[list[str], list[str]]:
    """Console errors and warnings, exceptions and error log entries; requests beyond the page and data: URLs."""
    errors, requests = [], []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            errors.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description", "")))
                                                              for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            errors.append(f"log {p['entry'].get('source')}: {p['entry'].get('text')}")
        elif m == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if url != page and not url.startswith("data:"):
                requests.append(url)
    return errors, requests


def render(path: str | os.PathLike[str], *, timeout: float = 60.0, width: int = 1280,
           height: int = 900) -> Rendered:
    """Load the HTML file ``path`` in headless Chromium and report what it rendered (:class:`Rendered`).

    Parameters
    ----------
    path : str or path-like
        An HTML file.
    timeout : float
        Seconds to wait for the browser at each step (:class:`BrowserError` beyond).
    width, height : int
        The viewport in CSS pixels.
    """
    page = Path(path)
    if not page.is_file():
        raise BrowserError(f"{page}: no such file")
    s = _Session(timeout, width, height)
    try:
        seconds = s.load(page)
        probe = json.loads(s.evaluate(_PROBE))
        errors, requests = _problems(s.events, page.resolve().as_uri())
    finally:
        s.close()
    return Rendered(seconds=seconds, errors=errors, requests=requests, images=probe["images"], svgs=probe["svgs"],
                    keys=[tuple(k) for k in probe["keys"]], title=probe["title"],
                    text_length=int(probe["text_length"]), height=int(probe["height"]))


def screenshot(path: str | os.PathLike[str], png: str | os.PathLike[str], *, width: int = 1100,
               height: int = 1400, timeout: float = 60.0) -> Path:
    """Write a PNG of the top ``width`` x ``height`` CSS pixels of the HTML file ``path`` to ``png``.

    ``png`` is written through a temporary file and a rename (:func:`redactopt.io.atomic_path`),
    replacing an existing file.
    """
    from redactopt.io import atomic_path

    s = _Session(timeout, width, height)
    try:
        s.load(Path(path))
        shot = s.call("Page.captureScreenshot", {"format": "png", "clip": {"x": 0, "y": 0, "width": width,
                                                                           "height": height, "scale": 1}})
    finally:
        s.close()
    with atomic_path(png, force=True) as tmp:
        tmp.write_bytes(base64.b64decode(shot["data"]))
    return Path(png)
