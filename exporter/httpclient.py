"""HTTP/1.1 over TCP (and TLS) with the standard library's ``socket`` and ``ssl`` only.

The transport of ``exporter.kubeclient``: the API server speaks plain HTTP/1.1 JSON, and a
client this small costs far less than urllib3 (whose import and per-request machinery,
``http.client`` and its ``email`` header parser included, were most of the exporter's
start-up CPU). What it does:

* keep-alive connections, at most ``pool_size`` kept idle, shared by threads (a stream
  dials its own);
* a request is one ``sendall`` (head and body together); answers with ``Content-Length``
  or ``Transfer-Encoding: chunked`` (anything else is read to the end and the connection
  dropped); a status line, header line or chunk size line longer than 64 KiB is refused;
* a connection taken from the pool that turns out closed by the server before any byte
  of the answer arrives (an idle connection the server dropped) is replaced and the
  request sent once more: the server never saw it;
* a streamed answer (``stream``) hands its body out line by line (watch events) and can
  be ended from another thread with ``shutdown()``.

Failures (connection, TLS, timeout, a garbled answer) raise :class:`HttpError` or
``OSError``; HTTP error statuses are answers, not failures.
"""

from __future__ import annotations

import contextlib
import io
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import cast

MAX_LINE = 64 * 1024
#: The largest answer body read into memory (a list page of 500 big pods is a few MiB).
MAX_BODY = 256 * 1024 * 1024


class HttpError(Exception):
    """The answer could not be read as HTTP/1.1."""


class _Connection:
    def __init__(
        self, host: str, port: int, context: ssl.SSLContext | None, connect_timeout_s: float
    ) -> None:
        # an ASCII host goes to getaddrinfo and ssl as bytes: a str is encoded with the
        # idna codec (the same ASCII), whose import (stringprep, unicodedata) is start-up
        # CPU for nothing
        address = host.encode("ascii") if host.isascii() else host
        sock = socket.create_connection((address, port), timeout=connect_timeout_s)  # type: ignore[arg-type]
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if context is not None:
                sock = context.wrap_socket(sock, server_hostname=address)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.rfile = cast(io.BufferedReader, sock.makefile("rb", buffering=65536))

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    data: bytes = b""


def _line(rfile: io.BufferedReader) -> bytes:
    line = rfile.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise HttpError("answer line longer than 64 KiB")
    return line


def _head(rfile: io.BufferedReader) -> tuple[int, dict[str, str]]:
    readline = rfile.readline  # the hot loop of every request: kept tight
    status_line = readline(MAX_LINE + 1)
    if not status_line:
        raise ConnectionResetError("the server closed the connection")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise HttpError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for _ in range(256):
        line = readline(MAX_LINE + 1)
        if len(line) <= 2:  # b"\r\n", b"\n", or the end
            if line.strip():
                raise HttpError("malformed header line")
            return int(parts[1]), headers
        if len(line) > MAX_LINE:
            raise HttpError("answer line longer than 64 KiB")
        name, sep, value = line.partition(b":")
        if not sep:
            raise HttpError("malformed header line")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    raise HttpError("more than 256 header lines")


def _chunks(rfile: io.BufferedReader) -> Iterator[bytes]:
    readline, read = rfile.readline, rfile.read
    while True:
        size_line = readline(MAX_LINE + 1)
        if len(size_line) > MAX_LINE:
            raise HttpError("answer line longer than 64 KiB")
        try:
            size = int(size_line.split(b";", 1)[0], 16)  # int() ignores the CRLF
        except ValueError:
            raise HttpError(f"bad chunk size {size_line[:40]!r}") from None
        if size == 0:
            while _line(rfile) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        data = read(size)
        if len(data) < size:
            raise ConnectionResetError("the answer ended inside a chunk")
        readline(MAX_LINE + 1)  # the CRLF after the chunk
        yield data


def _reusable(headers: Mapping[str, str]) -> bool:
    return "close" not in headers.get("connection", "").lower()


class Stream:
    """A streamed answer: ``lines()`` yields the body's non-empty lines."""

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str]) -> None:
        self._conn = conn
        self.status = status
        self.headers = headers

    def read(self) -> bytes:
        """The whole body (for an error answer), then the connection is closed."""
        try:
            return b"".join(self._body())
        finally:
            self.close()

    def _body(self) -> Iterator[bytes]:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            yield from _chunks(self._conn.rfile)
        else:
            while chunk := self._conn.rfile.read1(65536):
                yield chunk

    def lines(self) -> Iterator[bytes]:
        pending = b""
        for chunk in self._body():
            pending += chunk
            if len(pending) > MAX_BODY:
                raise HttpError("a streamed line is larger than the body limit")
            *complete, pending = pending.split(b"\n")
            yield from (line for line in complete if line.strip())
        if pending.strip():
            yield pending

    def shutdown(self) -> None:
        """End the stream from another thread: a blocked read returns at once."""
        sock = self._conn.sock  # None once closed
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._conn.close()


class HttpClient:
    """Requests to one ``http(s)://host:port`` server. Thread-safe."""

    def __init__(
        self, server: str, *, ssl_context: ssl.SSLContext | None, pool_size: int = 4
    ) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"server {server!r} is not an http(s) URL")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._context = ssl_context if url.scheme == "https" else None
        self._authority = url.netloc.rpartition("@")[2]
        self._pool_size = pool_size
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self, connect_timeout_s: float, *, fresh: bool) -> tuple[_Connection, bool]:
        if not fresh:
            with self._lock:
                if self._idle:
                    return self._idle.pop(), True
        return _Connection(self.host, self.port, self._context, connect_timeout_s), False

    def _give(self, conn: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self._pool_size:
                self._idle.append(conn)
                return
        conn.close()

    def _head(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> bytes:
        lines = [f"{method} {self._prefix}{target} HTTP/1.1", f"Host: {self._authority}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def _open(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        connect_timeout_s: float,
        read_timeout_s: float,
        fresh: bool = False,
    ) -> tuple[_Connection, int, dict[str, str]]:
        payload = self._head(method, target, headers, body)
        for _ in range(2):
            conn, reused = self._take(connect_timeout_s, fresh=fresh)
            try:
                if conn.sock.gettimeout() != read_timeout_s:  # a syscall saved per request
                    conn.sock.settimeout(read_timeout_s)
                conn.sock.sendall(payload)
                status, answer = _head(conn.rfile)
            except (ConnectionError, ssl.SSLEOFError, BrokenPipeError):
                conn.close()
                if reused:
                    continue  # a kept-alive connection the server had closed: once more
                raise
            except BaseException:
                conn.close()
                raise
            return conn, status, answer
        raise ConnectionResetError("the server closed the connection")  # pragma: no cover

    def request(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        body: bytes = b"",
        connect_timeout_s: float,
        read_timeout_s: float,
    ) -> Response:
        """One request; the whole answer. ``target`` is the path and query."""
        conn, status, answer = self._open(
            method,
            target,
            headers=headers,
            body=body,
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s,
        )
        try:
            rfile = conn.rfile
            reuse = _reusable(answer)
            if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
                data = b""
            elif "chunked" in answer.get("transfer-encoding", "").lower():
                parts, total = [], 0
                for chunk in _chunks(rfile):
                    total += len(chunk)
                    if total > MAX_BODY:
                        raise HttpError("answer larger than the body limit")
                    parts.append(chunk)
                data = b"".join(parts)
            elif "content-length" in answer:
                length = int(answer["content-length"])
                if not 0 <= length <= MAX_BODY:
                    raise HttpError(f"answer length {length} out of bounds")
                data = rfile.read(length)
                if len(data) < length:
                    raise ConnectionResetError("the answer ended early")
            else:
                data, reuse = rfile.read(MAX_BODY + 1), False
                if len(data) > MAX_BODY:
                    raise HttpError("answer larger than the body limit")
        except BaseException:
            conn.close()
            raise
        if reuse:
            self._give(conn)
        else:
            conn.close()
        return Response(status, answer, data)

    def stream(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        connect_timeout_s: float,
        read_timeout_s: float,
    ) -> Stream:
        """A request whose answer body is read as it arrives, on a connection of its own
        (a stream holds it for minutes and closes it: a kept-alive one stays for the next
        requests, which saves a TLS handshake where it counts, e.g. the first writes after
        the list that started a watch); close the stream after."""
        conn, status, answer = self._open(
            method,
            target,
            headers=headers,
            body=b"",
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s,
            fresh=True,
        )
        return Stream(conn, status, answer)
