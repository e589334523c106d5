"""The metrics/probe HTTP server, spoken to over real TCP sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from exporter.httpserver import Answer, HttpServer, _BadRequest, parse_head


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def _boom() -> Answer:
    raise RuntimeError("endpoint bug")


@pytest.fixture
def server() -> Iterator[tuple[HttpServer, int]]:
    sock = _listening()
    port = sock.getsockname()[1]
    srv = HttpServer(
        sock,
        {"/ok": lambda: (200, b"fine\n", "text/plain"), "/boom": _boom},
        max_connections=2,
        idle_timeout_s=0.5,
    )
    srv.start()
    yield srv, port
    srv.stop()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _answer(conn: socket.socket, *, head: bool = False) -> tuple[int, dict[str, str], bytes]:
    """One answer read off ``conn`` (Content-Length framed; no body after a HEAD)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = top.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}
    length = 0 if head else int(headers["content-length"])
    while len(rest) < length:
        rest += conn.recv(4096)
    return int(status_line.split()[1]), headers, rest


def _closed(conn: socket.socket) -> bool:
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True


def test_keep_alive_serves_several_requests_on_one_connection(
    server: tuple[HttpServer, int],
) -> None:
    _, port = server
    with _connect(port) as conn:
        for _ in range(3):
            conn.sendall(b"GET /ok?x=1 HTTP/1.1\r\nHost: a\r\n\r\n")
            status, headers, body = _answer(conn)
            assert (status, body, headers["content-type"]) == (200, b"fine\n", "text/plain")
            assert "connection" not in headers


@pytest.mark.parametrize(
    "request_,expected",
    [
        pytest.param(b"GET /nope HTTP/1.1\r\n\r\n", (404, b"not found\n"), id="unknown-path"),
        pytest.param(b"POST /ok HTTP/1.1\r\n\r\n", (405, b"only GET and HEAD\n"), id="post"),
        pytest.param(b"HEAD /ok HTTP/1.1\r\n\r\n", (200, b""), id="head-no-body"),
        pytest.param(b"GET /boom HTTP/1.1\r\n\r\n", (500, b"internal error\n"), id="endpoint-bug"),
    ],
)  # fmt: skip
def test_answers_and_keeps_the_connection(
    server: tuple[HttpServer, int], request_: bytes, expected: tuple[int, bytes]
) -> None:
    _, port = server
    with _connect(port) as conn:
        conn.sendall(request_)
        status, headers, body = _answer(conn, head=request_.startswith(b"HEAD"))
        assert (status, body) == expected
        if status == 405:
            assert headers["allow"] == "GET, HEAD"
        if request_.startswith(b"HEAD"):
            assert headers["content-length"] == "5"  # the GET's length, no body
        conn.sendall(b"GET /ok HTTP/1.1\r\n\r\n")  # still served on the same connection
        assert _answer(conn)[0] == 200


@pytest.mark.parametrize(
    "request_,status",
    [
        pytest.param(b"GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n", 200, id="connection-close"),
        pytest.param(b"GET /ok HTTP/1.0\r\n\r\n", 200, id="http-1.0"),
        pytest.param(b"GARBAGE\r\n\r\n", 400, id="malformed-request-line"),
        pytest.param(b"GET /ok HTTP/1.1\r\nno colon\r\n\r\n", 400, id="malformed-header"),
        pytest.param(b"GET /ok HTTP/1.1\r\nX: " + b"y" * 9000 + b"\r\n\r\n", 431, id="huge-head"),
        pytest.param(b"GET /ok HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 400, id="body"),
        pytest.param(b"GET /ok HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
                     id="chunked-body"),
    ],
)  # fmt: skip
def test_answers_then_closes(server: tuple[HttpServer, int], request_: bytes, status: int) -> None:
    _, port = server
    with _connect(port) as conn:
        conn.sendall(request_)
        got, headers, _ = _answer(conn)
        assert got == status
        assert headers["connection"] == "close"
        assert _closed(conn)


def test_an_idle_connection_is_closed_and_frees_its_slot(server: tuple[HttpServer, int]) -> None:
    _, port = server
    idle = [_connect(port), _connect(port)]  # both slots taken (max_connections=2)
    time.sleep(0.1)
    with _connect(port) as refused:
        assert _closed(refused)
    for conn in idle:
        assert _closed(conn)  # after the idle timeout (0.5 s)
        conn.close()
    with _connect(port) as conn:
        conn.sendall(b"GET /ok HTTP/1.1\r\n\r\n")
        assert _answer(conn)[0] == 200


def test_stop_ends_the_accept_loop_and_open_connections() -> None:
    sock = _listening()
    port = sock.getsockname()[1]
    srv = HttpServer(sock, {"/ok": lambda: (200, b"", "text/plain")}, idle_timeout_s=60)
    srv.start()
    conn = _connect(port)
    conn.sendall(b"GET /ok HTTP/1.1\r\n\r\n")
    assert _answer(conn)[0] == 200
    before = {t.name for t in threading.enumerate()}
    assert "http" in before
    srv.stop()
    assert _closed(conn)  # not left waiting for its 60 s idle timeout
    conn.close()
    assert srv._thread is not None and not srv._thread.is_alive()
    with pytest.raises(OSError):
        _connect(port)


@pytest.mark.parametrize(
    "lines,expected",
    [
        pytest.param([b"GET /metrics?a=b HTTP/1.1", b"Accept: text/plain", b"X-Y:  z "],
                     ("GET", "/metrics", "HTTP/1.1", {"accept": "text/plain", "x-y": "z"}),
                     id="query-dropped-headers-lowered"),
        pytest.param([b"HEAD / HTTP/1.0"], ("HEAD", "/", "HTTP/1.0", {}), id="http-1.0"),
    ],
)  # fmt: skip
def test_parse_head(lines: list[bytes], expected: tuple[str, str, str, dict[str, str]]) -> None:
    assert parse_head(lines) == expected


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([b"GET /"], id="no-version"),
        pytest.param([b"GET / HTTP/2"], id="not-http-1"),
        pytest.param([b"GET / HTTP/1.1", b"Name : value"], id="space-before-colon"),
        pytest.param([b"GET / HTTP/1.1", b": value"], id="empty-name"),
    ],
)
def test_parse_head_refuses(lines: list[bytes]) -> None:
    with pytest.raises(_BadRequest):
        parse_head(lines)
