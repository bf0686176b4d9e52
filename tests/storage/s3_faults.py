"""A fault-injecting HTTP proxy in front of an S3 server (moto on 127.0.0.1).

:class:`FaultProxy` listens on a free port of 127.0.0.1 (never any other
address) and forwards every request to the S3 endpoint it is given, byte for
byte: the request line, every header in its order and spelling (``Host``
included, so the client signs for the proxy's ``host:port`` and the signature
still matches what the server receives), and the body in the framing the
client chose (``Content-Length``, or ``Transfer-Encoding: chunked`` forwarded
raw, chunk sizes and trailers included; an ``aws-chunked`` body is just bytes
to it).  A client's ``Expect: 100-continue`` is answered with
``100 Continue`` and forwarded too (the server's own interim answer is
skipped).  Each request goes upstream on a connection of its own, so a
forwarded request is never sent twice by accident; the client's connection is
kept alive.

Per request, and seeded, the proxy may inject one fault:

``fail`` (any method)
    The request is not forwarded: the client gets ``500 InternalError`` (an
    S3 error document), or, half of the time, its connection is reset.
``lost`` (PUT, POST, DELETE only)
    The request is forwarded and the server performs it, then the client's
    connection is closed without an answer: the client retries a request
    that already took effect (a retried ``If-None-Match: *`` PUT answers 412
    although the first one created the object).
``dup`` (PUT, POST, DELETE only)
    The request is forwarded twice, one after the other, and the client gets
    the second answer.

botocore retries 5xx answers and broken connections by itself (see
:meth:`FaultProxy.storage_options` for enough retries), so most faults are
absorbed below the library; what reaches it are the answers of requests
repeated after they took effect.  :attr:`FaultProxy.counts` counts the faults
injected, by kind.  Standard library only.
"""

from __future__ import annotations

import copy
import http.client
import random
import re
import socket
import struct
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FAULT_KINDS", "FaultProxy", "STATE_CHANGING"]

#: The kinds of fault, in the order a draw tests them.
FAULT_KINDS = ("fail", "lost", "dup")
#: Methods whose requests change state: the only ones ``lost`` and ``dup`` hit.
STATE_CHANGING = frozenset({"PUT", "POST", "DELETE"})
# Headers that belong to one connection, not to the request (RFC 9110, 7.6.1).
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer",
                         "transfer-encoding", "upgrade"})
_INTERNAL_ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
                   b'<Message>We encountered an internal error. Please try again.</Message>'
                   b'<RequestId>fault-proxy</RequestId></Error>')


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"       # keep-alive, and 100-continue answered
    server: "_Server"

    def log_message(self, format, *args):     # noqa: A002 - quiet
        pass

    def setup(self):
        super().setup()
        self.server.proxy._opened(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.proxy._closed(self.connection)

    def _body(self) -> bytes:
        """The request body exactly as the client framed it."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raw = bytearray()
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionError("the client closed the connection mid-body")
                raw += line
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while True:                 # trailers, up to the empty line
                        line = self.rfile.readline(65537)
                        if not line:
                            raise ConnectionError("the client closed the connection mid-body")
                        raw += line
                        if line in (b"\r\n", b"\n"):
                            return bytes(raw)
                raw += self.rfile.read(size + 2)    # the data and its CRLF
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self, body: bytes):
        """Send the request upstream once: ``(status, reason, headers, data)``."""
        proxy = self.server.proxy
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port,
                                          timeout=proxy.timeout)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() in ("connection", "keep-alive", "proxy-connection"):
                    continue
                conn.putheader(name, value)
            conn.putheader("Connection", "close")
            conn.endheaders()
            if body:
                conn.send(body)
            response = conn.getresponse()       # skips a 100 Continue
            data = response.read()
            return response.status, response.reason, response.getheaders(), data
        finally:
            conn.close()

    def _answer(self, status: int, reason: str, headers, data: bytes) -> None:
        self.send_response_only(status, reason)
        bodiless = self.command == "HEAD" or status in (204, 304) or status < 200
        for name, value in headers:
            lower = name.lower()
            if lower in _HOP_BY_HOP or (lower == "content-length" and not bodiless):
                continue
            self.send_header(name, value)
        if not bodiless:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not bodiless and data:
            self.wfile.write(data)
        self.wfile.flush()

    def _drop(self, reset: bool) -> None:
        """Close the client's connection without an answer (RST with ``reset``)."""
        self.close_connection = True
        if reset:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()

    def _handle(self) -> None:
        proxy = self.server.proxy
        try:
            body = self._body()
        except (ConnectionError, ValueError):
            self.close_connection = True
            return
        kind, reset = proxy._draw(self.command, self.path)
        if proxy.history is not None:
            proxy.history.append((self.command, self.path, dict(self.headers.items()), kind))
        if kind == "fail":
            if reset:
                return self._drop(reset=True)
            return self._answer(500, "Internal Server Error",
                                [("Content-Type", "application/xml")], _INTERNAL_ERROR)
        try:
            answer = self._forward(body)
            if kind == "dup":
                answer = self._forward(body)
        except OSError:
            # The server is unreachable (stopping): the client sees a broken connection.
            return self._drop(reset=True)
        if kind == "lost":
            return self._drop(reset=reset)
        self._answer(*answer)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_OPTIONS = do_PATCH = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    proxy: "FaultProxy"

    def handle_error(self, request, client_address):
        """A client that went away (a killed writer, a reset): nothing to say."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class FaultProxy:
    """A proxy in front of an S3 endpoint that injects faults (module docstring).

    Parameters
    ----------
    upstream : str
        The S3 endpoint, ``http://127.0.0.1:<port>`` (moto's).
    fail, lost, dup : float, default 0
        The probability of each fault per request (``lost`` and ``dup``: per
        request that changes state); a draw gives at most one fault.
    seed : int, default 0
        Seeds the draws (threads serve requests as they come, so the sequence
        of faults is reproducible only as far as the order of requests is).
    timeout : float, default 60
        Seconds the proxy waits on the server.
    keep_history : bool, default False
        Keep :attr:`history`.

    Attributes
    ----------
    counts : dict
        Faults injected so far: ``{"fail": n, "lost": n, "dup": n}``.
    requests : int
        Requests received (a request answered by a fault included).
    enabled : bool
        False: forward everything, inject nothing but what :meth:`force`
        asks for (the draws stop too).
    history : list or None
        With ``keep_history``, ``(method, path, headers, fault)`` of every
        request, in the order they came.

    Examples
    --------
    >>> with FaultProxy(moto_endpoint, fail=0.05, lost=0.05, seed=1) as proxy:  # doctest: +SKIP
    ...     options = proxy.storage_options(moto_options)
    ...     bcolz_store.open("s3://bucket/a.bcolz", storage_options=options)
    """

    def __init__(self, upstream: str, fail: float = 0.0, lost: float = 0.0, dup: float = 0.0,
                 seed: int = 0, timeout: float = 60.0, keep_history: bool = False):
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != "http" or parsed.hostname != "127.0.0.1":
            raise ValueError(f"{upstream}: the proxy forwards to http://127.0.0.1 only")
        if min(fail, lost, dup) < 0 or fail + lost + dup > 1:
            raise ValueError("fault rates must be >= 0 and add up to at most 1")
        self.upstream = upstream
        self.upstream_host = parsed.hostname
        self.upstream_port = parsed.port or 80
        self.rates = {"fail": float(fail), "lost": float(lost), "dup": float(dup)}
        self.timeout = float(timeout)
        self.counts = dict.fromkeys(FAULT_KINDS, 0)
        self.requests = 0
        self.enabled = True
        self.history = [] if keep_history else None
        self._rng = random.Random(seed)
        self._forced = []
        self._lock = threading.Lock()
        self._connections = set()
        self._server = None
        self._thread = None

    @classmethod
    def split(cls, upstream: str, rate: float, seed: int = 0, **kwargs) -> "FaultProxy":
        """A proxy whose fault ``rate`` is split evenly among fail, lost and dup."""
        return cls(upstream, fail=rate / 3, lost=rate / 3, dup=rate / 3, seed=seed, **kwargs)

    # ------------------------------------------------------------ lifetime

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``, where clients send their requests."""
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "FaultProxy":
        """Listen on a free port of 127.0.0.1 and serve from a thread."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="s3-fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every client connection."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=10)
        self._server = None

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _opened(self, conn) -> None:
        with self._lock:
            self._connections.add(conn)

    def _closed(self, conn) -> None:
        with self._lock:
            self._connections.discard(conn)

    # ------------------------------------------------------------ faults

    def force(self, kind: str, method: str = None, path: str = None, reset: bool = False):
        """Give the next request of ``method`` whose path (query included)
        matches the regular expression ``path`` the fault ``kind`` (whatever
        the rates and :attr:`enabled` say); ``reset``: a ``fail`` or ``lost``
        resets the connection instead of answering 500 or closing it."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"{kind!r}: not one of {FAULT_KINDS}")
        with self._lock:
            self._forced.append((kind, method, re.compile(path or ""), reset))

    @property
    def forced_pending(self) -> int:
        """Faults :meth:`force` asked for that no request met yet."""
        with self._lock:
            return len(self._forced)

    def _draw(self, method: str, path: str):
        """The fault for one request: ``(kind or None, reset)``, counted."""
        with self._lock:
            self.requests += 1
            for i, (kind, wanted, pattern, reset) in enumerate(self._forced):
                if (wanted is None or wanted == method) and pattern.search(path):
                    del self._forced[i]
                    self.counts[kind] += 1
                    return kind, reset
            if not self.enabled:
                return None, False
            u = self._rng.random()
            reset = self._rng.random() < 0.5
            edge = 0.0
            for kind in FAULT_KINDS:
                if kind != "fail" and method not in STATE_CHANGING:
                    continue
                edge += self.rates[kind]
                if u < edge:
                    self.counts[kind] += 1
                    return kind, reset
            return None, False

    @property
    def total(self) -> int:
        """Faults injected so far, all kinds."""
        with self._lock:
            return sum(self.counts.values())

    def storage_options(self, options: dict, max_attempts: int = 12) -> dict:
        """``options`` (s3fs storage options) with this proxy as the endpoint and
        botocore allowed ``max_attempts`` tries per request (legacy mode, which
        retries 5xx answers and broken connections, with no retry quota).
        """
        out = copy.deepcopy(options)
        out.setdefault("client_kwargs", {})["endpoint_url"] = self.endpoint
        config = out.setdefault("config_kwargs", {})
        config["retries"] = {"max_attempts": max_attempts, "mode": "legacy"}
        return out
