"""Unary gRPC calls over HTTP/2 on a unix socket, with the standard library only.

The exporter makes one kind of call (a unary podresources call to the kubelet on the
node's unix socket), so it speaks just that much of gRPC itself instead of loading
``grpcio`` (whose import alone costs ~25 MiB of resident memory and ~80 ms of start-up
CPU on every node). What it does, per the HTTP/2 (RFC 9113) and gRPC-over-HTTP/2
specifications:

* one connection, kept open and reused; stream ids 1, 3, 5...; the connection preface
  with SETTINGS (no server push, a receive window as large as the message limit, so a
  whole answer arrives without waiting for window updates), the connection window
  replenished after every call; server SETTINGS acknowledged, PINGs answered;
* the request: HEADERS (``:method POST``, ``:path /<service>/<method>``,
  ``content-type application/grpc``, ``te trailers``, ``grpc-timeout``) and one DATA
  frame carrying the length-prefixed message;
* the answer: response headers, DATA frames, trailers with ``grpc-status`` and
  ``grpc-message`` (or a trailers-only answer), HPACK-decoded (``exporter.hpack``);
  CONTINUATION, padding, priority, RST_STREAM and GOAWAY are handled;
* a deadline per call (socket timeouts, and ``grpc-timeout`` for the server); an
  answer larger than the limit fails with RESOURCE_EXHAUSTED, as grpc does;
* a connection found dead when a call starts (the server closed an idle connection, or
  refused the stream) is replaced and the call sent once more: it never reached the
  server, so this is safe, as gRPC's transparent retry.

Failures raise :class:`CallError` with the gRPC status code name.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
import urllib.parse
from pathlib import Path

from exporter import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = range(8)
WINDOW_UPDATE, CONTINUATION = 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_HEADER_TABLE_SIZE, SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE = 1, 2, 4
SETTINGS_MAX_FRAME_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE = 5, 6
DEFAULT_WINDOW = 65535
MAX_FRAME = 1 << 20
MAX_HEADER_BLOCK = 64 * 1024
_HEADER = struct.Struct(">IBI")  # (24-bit length << 8 | type), flags, stream id

# gRPC status codes (grpc/doc/statuscodes.md)
CODES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
)  # fmt: skip
# HTTP status -> gRPC code when the answer is not gRPC (grpc/doc/http-grpc-status-mapping.md)
_HTTP_CODES = {
    400: "INTERNAL", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "UNIMPLEMENTED",
    429: "UNAVAILABLE", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "UNAVAILABLE",
}  # fmt: skip
# RST_STREAM / GOAWAY error code -> gRPC code (the same document)
_RESET_CODES = {7: "UNAVAILABLE", 8: "CANCELLED", 11: "RESOURCE_EXHAUSTED", 12: "PERMISSION_DENIED"}


class CallError(Exception):
    """A failed call: ``code`` is a gRPC status code name, ``detail`` says why."""

    def __init__(self, code: str, detail: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        #: the server never saw the request (a dead idle connection, a refused stream)
        self.retryable = retryable


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return _HEADER.pack(len(payload) << 8 | kind, flags, stream) + payload


def _settings(*pairs: tuple[int, int]) -> bytes:
    return _frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def _window_update(stream: int, increment: int) -> bytes:
    return _frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment))


def _timeout_header(seconds: float) -> str:
    """The deadline left, in 100 ms steps (so the encoded headers can be reused)."""
    return f"{max(1, round(seconds * 10)) * 100}m"  # at most 8 digits: below 27 hours


class _Connection:
    def __init__(self, path: Path, deadline: float, max_message: int) -> None:
        self.inode = os.stat(path).st_ino
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._window = max_message + MAX_FRAME  # room for the 5-byte prefix and padding
        try:
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            self.sock.connect(str(path))
        except BaseException:
            self.sock.close()
            raise
        self.decoder = hpack.Decoder()
        self.next_stream = 1
        self.goaway: int | None = None
        self.buffer = bytearray()
        self.pending = (
            PREFACE
            + _settings(
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, self._window),
                (SETTINGS_MAX_FRAME_SIZE, MAX_FRAME),
                (SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BLOCK),
            )
            + _window_update(0, self._window - DEFAULT_WINDOW)
        )
        self.received = 0  # connection-window bytes used since the last update

    def close(self) -> None:
        self.sock.close()

    def read_frame(self, deadline: float) -> tuple[int, int, int, bytes]:
        header = self._read(9, deadline)
        word, flags, stream = _HEADER.unpack(header)
        length, kind = word >> 8, word & 0xFF
        if length > MAX_FRAME:
            raise CallError("INTERNAL", f"frame of {length} bytes above the announced maximum")
        return kind, flags, stream & 0x7FFFFFFF, self._read(length, deadline)

    def _read(self, n: int, deadline: float) -> bytes:
        buffer = self.buffer
        while len(buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            chunk = self.sock.recv(max(65536, n - len(buffer)))
            if not chunk:
                raise ConnectionResetError("the server closed the connection")
            buffer += chunk
        data = bytes(buffer[:n])
        del buffer[:n]
        return data

    def send(self, data: bytes, deadline: float) -> None:
        self.sock.settimeout(max(0.001, deadline - time.monotonic()))
        self.sock.sendall(self.pending + data)
        self.pending = b""


class _Stream:
    """What one call has received so far."""

    def __init__(self) -> None:
        self.headers: list[hpack.Header] | None = None
        self.trailers: list[hpack.Header] | None = None
        self.body = bytearray()
        self.seen = False  # a frame of this stream arrived (the server has the request)
        self.ended = False


def _strip_padding(flags: int, payload: bytes) -> bytes:
    if not flags & PADDED:
        return payload
    if not payload or payload[0] >= len(payload):
        raise CallError("INTERNAL", "invalid padding")
    return payload[1 : len(payload) - payload[0]]


class UnaryChannel:
    """Unary calls to one unix socket. Thread-safe (calls are serialized)."""

    def __init__(self, socket_path: Path, *, max_receive_bytes: int) -> None:
        self.socket_path = Path(socket_path)
        self.max_receive_bytes = max_receive_bytes
        #: incremented whenever a new connection is made (a new kubelet may answer)
        self.connections = 0
        self._lock = threading.Lock()
        self._conn: _Connection | None = None
        self._blocks: dict[tuple[str, str], bytes] = {}

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self, deadline: float) -> _Connection:
        if self._conn is not None:
            try:
                same = os.stat(self.socket_path).st_ino == self._conn.inode
            except OSError:
                same = False
            if not same or self._conn.goaway is not None:  # a new kubelet, or closing
                self._drop()
        if self._conn is None:
            try:
                self._conn = _Connection(self.socket_path, deadline, self.max_receive_bytes)
            except TimeoutError as exc:
                raise CallError("DEADLINE_EXCEEDED", "connecting timed out") from exc
            except OSError as exc:
                raise CallError("UNAVAILABLE", f"cannot connect: {exc}") from exc
            self.connections += 1
        return self._conn

    def call(self, method: str, request: bytes, *, timeout_s: float) -> bytes:
        """Call ``/<service>/<method>`` with an encoded request; the encoded answer."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            reused = self._conn is not None
            try:
                return self._call(method, request, deadline)
            except CallError as exc:
                if not (exc.retryable and reused):
                    raise
            return self._call(method, request, deadline)  # once, on a new connection

    def _call(self, method: str, request: bytes, deadline: float) -> bytes:
        conn = self._connection(deadline)
        stream = _Stream()
        try:
            return self._exchange(conn, stream, method, request, deadline)
        except CallError:
            if not stream.ended:  # the connection is in an unknown state
                self._drop()
            raise
        except TimeoutError as exc:
            self._drop()
            raise CallError("DEADLINE_EXCEEDED", "deadline exceeded") from exc
        except OSError as exc:
            self._drop()
            raise CallError(
                "UNAVAILABLE", f"connection lost: {exc}", retryable=not stream.seen
            ) from exc

    def _request_headers(self, method: str, timeout: str) -> bytes:
        key = (method, timeout)
        block = self._blocks.get(key)
        if block is None:
            if len(self._blocks) > 64:
                self._blocks.clear()
            block = self._blocks[key] = hpack.encode(
                [
                    (":method", "POST"),
                    (":scheme", "http"),
                    (":path", method),
                    (":authority", "localhost"),
                    ("content-type", "application/grpc"),
                    ("te", "trailers"),
                    ("grpc-timeout", timeout),
                ]
            )
        return block

    def _exchange(
        self, conn: _Connection, stream: _Stream, method: str, request: bytes, deadline: float
    ) -> bytes:
        stream_id = conn.next_stream
        conn.next_stream += 2
        block = self._request_headers(method, _timeout_header(deadline - time.monotonic()))
        message = b"\0" + struct.pack(">I", len(request)) + request
        conn.send(
            _frame(HEADERS, END_HEADERS, stream_id, block)
            + _frame(DATA, END_STREAM, stream_id, message),
            deadline,
        )
        while not stream.ended:
            self._receive(conn, stream, stream_id, deadline)
        if conn.received:
            conn.pending += _window_update(0, conn.received)
            conn.received = 0
        return self._result(stream)

    def _receive(self, conn: _Connection, stream: _Stream, stream_id: int, deadline: float) -> None:
        kind, flags, sid, payload = conn.read_frame(deadline)
        if kind == DATA:
            conn.received += len(payload)
            if sid != stream_id:
                return
            stream.seen = True
            stream.body += _strip_padding(flags, payload)
            if len(stream.body) > self.max_receive_bytes + 5:
                raise CallError(
                    "RESOURCE_EXHAUSTED",
                    f"answer larger than the limit of {self.max_receive_bytes} bytes",
                )
            stream.ended = bool(flags & END_STREAM)
        elif kind == HEADERS:
            block = _strip_padding(flags, payload)
            if flags & PRIORITY_FLAG:
                block = block[5:]
            end_stream, end_headers = flags & END_STREAM, flags & END_HEADERS
            while not end_headers:
                kind, more_flags, _, more = conn.read_frame(deadline)
                end_headers = more_flags & END_HEADERS
                if kind != CONTINUATION:
                    raise CallError("INTERNAL", "header block interrupted")
                block += more
                if len(block) > MAX_HEADER_BLOCK:
                    raise CallError("INTERNAL", "header block too large")
            try:
                headers = conn.decoder.decode(block)  # every block: keeps the table in sync
            except hpack.HpackError as exc:
                raise CallError("INTERNAL", f"bad header block: {exc}") from exc
            if sid != stream_id:
                return
            stream.seen = True
            if stream.headers is None and not end_stream:
                stream.headers = headers
            else:
                stream.trailers = headers
                stream.ended = True
        elif kind == RST_STREAM and sid == stream_id:
            code = struct.unpack(">I", payload[:4])[0] if len(payload) >= 4 else 2
            raise CallError(
                _RESET_CODES.get(code, "INTERNAL"),
                f"stream reset by the server (HTTP/2 error {code})",
                retryable=code == 7 and not stream.seen,  # REFUSED_STREAM
            )
        elif kind == SETTINGS and not flags & ACK:
            conn.send(_frame(SETTINGS, ACK, 0), deadline)
        elif kind == PING and not flags & ACK:
            conn.send(_frame(PING, ACK, 0, payload[:8]), deadline)
        elif kind == GOAWAY:
            last = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF if len(payload) >= 4 else 0
            conn.goaway = last
            if stream_id > last:
                raise CallError(
                    "UNAVAILABLE", "the server is closing the connection", retryable=True
                )
        elif kind == PUSH_PROMISE:
            raise CallError("INTERNAL", "server push was disabled")

    def _result(self, stream: _Stream) -> bytes:
        headers = dict(stream.headers or [])
        trailers = dict(stream.trailers or [])
        status = headers.get(":status") or trailers.get(":status")
        if status != "200":
            http = int(status) if status and status.isdigit() else 0
            raise CallError(_HTTP_CODES.get(http, "UNKNOWN"), f"HTTP status {status}")
        raw_code = trailers.get("grpc-status")
        if raw_code is None:
            raise CallError("INTERNAL", "the answer ended without grpc-status")
        code = CODES[int(raw_code)] if raw_code.isdigit() and int(raw_code) < 17 else "UNKNOWN"
        if code != "OK":
            raise CallError(code, urllib.parse.unquote(trailers.get("grpc-message", "")))
        body = stream.body
        if len(body) < 5:
            raise CallError("INTERNAL", "the answer carries no message")
        if body[0] != 0:
            raise CallError("INTERNAL", "compressed answer (no compression was offered)")
        length = int.from_bytes(body[1:5], "big")
        if length != len(body) - 5:
            raise CallError("INTERNAL", "the answer is not exactly one message")
        return bytes(body[5:])
