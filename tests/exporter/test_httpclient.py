"""``exporter.httpclient`` against a scripted server on a real TCP socket: the answers
the API server never sends in the suite (an idle connection dropped, bodies without a
length, chunk extensions and trailers, oversized lines), and streams ended by
``shutdown()``. The common paths run against the real API server in tests/kubeclient/."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from exporter.httpclient import MAX_LINE, HttpClient, HttpError

Handler = Callable[[socket.socket, bytes], bool]  # (connection, request) -> keep open


class ScriptedServer:
    """Answers each request with the next handler; counts connections."""

    def __init__(self, handlers: list[Handler]) -> None:
        self.handlers = handlers
        self.connections = 0
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while self.handlers:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                self.requests.append(head)
                if not self.handlers.pop(0)(conn, head):
                    return

    def close(self) -> None:
        self.listener.close()


def answer(body: bytes, *, keep: bool = True, extra: bytes = b"") -> Handler:
    def handle(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)
        )
        return keep

    return handle


@pytest.fixture
def serve() -> Iterator[Callable[[list[Handler]], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(handlers: list[Handler]) -> ScriptedServer:
        servers.append(ScriptedServer(handlers))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def client(server: ScriptedServer) -> HttpClient:
    return HttpClient(f"http://127.0.0.1:{server.port}", ssl_context=None)


def get(http: HttpClient, target: str = "/x") -> tuple[int, bytes]:
    response = http.request(
        "GET", target, headers={"Accept": "x"}, connect_timeout_s=5, read_timeout_s=5
    )
    return response.status, response.data


def test_a_kept_alive_connection_is_reused(serve: Callable[..., ScriptedServer]) -> None:
    server = serve([answer(b"one"), answer(b"two")])
    http = client(server)
    assert get(http) == (200, b"one")
    assert get(http) == (200, b"two")
    assert server.connections == 1
    assert server.requests[0].startswith(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:")


def test_a_connection_the_server_dropped_while_idle_is_replaced(
    serve: Callable[..., ScriptedServer],
) -> None:
    def drop(conn: socket.socket, _: bytes) -> bool:
        return False  # closes without answering: the request never reached a handler

    server = serve([answer(b"one"), drop, answer(b"two")])
    http = client(server)
    assert get(http) == (200, b"one")
    assert get(http) == (200, b"two")  # sent once more, on a new connection
    assert server.connections == 2


def test_a_fresh_connection_closed_without_an_answer_fails(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve([lambda conn, _: False])
    with pytest.raises(ConnectionError):
        get(client(server))


def test_chunked_answer_with_extensions_and_trailers(serve: Callable[..., ScriptedServer]) -> None:
    def chunked(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n"
        )
        return True

    server = serve([chunked, answer(b"next")])
    http = client(server)
    assert get(http) == (200, b"abcde")
    assert get(http) == (200, b"next")
    assert server.connections == 1


def test_an_answer_without_length_is_read_to_the_end_and_not_reused(
    serve: Callable[..., ScriptedServer],
) -> None:
    def until_close(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\n\r\nall of it")
        return False

    server = serve([until_close, answer(b"again")])
    http = client(server)
    assert get(http) == (200, b"all of it")
    assert get(http) == (200, b"again")
    assert server.connections == 2


def test_connection_close_is_honoured(serve: Callable[..., ScriptedServer]) -> None:
    server = serve([answer(b"a", extra=b"Connection: close\r\n", keep=False), answer(b"b")])
    http = client(server)
    assert get(http) == (200, b"a")
    assert get(http) == (200, b"b")
    assert server.connections == 2


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"SMTP nonsense\r\n\r\n", id="not-http"),
        pytest.param(b"HTTP/1.1 200 OK\r\nNo-Colon-Here\r\n\r\n", id="bad-header"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nX: " + b"a" * MAX_LINE + b"\r\n\r\n", id="header-too-long"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", id="bad-chunk-size"
        ),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", id="negative-length"),
    ],
)
def test_garbled_answers_are_errors(serve: Callable[..., ScriptedServer], raw: bytes) -> None:
    def garbled(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(raw)
        return False

    server = serve([garbled])
    with pytest.raises(HttpError):
        get(client(server))


def test_error_statuses_are_answers(serve: Callable[..., ScriptedServer]) -> None:
    def not_found(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")
        return True

    server = serve([not_found])
    assert get(client(server)) == (404, b"{}")


def test_a_stream_dials_its_own_connection_and_leaves_the_kept_alive_one(
    serve: Callable[..., ScriptedServer],
) -> None:
    def events(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{}\n\r\n0\r\n\r\n")
        return False

    server = serve([answer(b"one"), events, answer(b"two")])
    http = client(server)
    assert get(http) == (200, b"one")
    stream = http.stream("GET", "/watch", headers={}, connect_timeout_s=5, read_timeout_s=10)
    assert server.connections == 2  # not the idle kept-alive connection
    assert list(stream.lines()) == [b"{}"]
    stream.close()
    assert get(http) == (200, b"two")  # on the kept-alive connection
    assert server.connections == 2


def test_a_stream_yields_lines_across_chunks_and_ends_on_shutdown(
    serve: Callable[..., ScriptedServer],
) -> None:
    release = threading.Event()

    def events(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(
            b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n6\r\n:1}\n{"\r\n'
        )
        release.wait(10)
        return False

    server = serve([events])
    stream = client(server).stream(
        "GET", "/watch", headers={}, connect_timeout_s=5, read_timeout_s=10
    )
    lines = stream.lines()
    assert next(lines) == b'{"a":1}'
    ended = threading.Event()

    def drain() -> None:
        try:
            for _ in lines:
                pass
        except (HttpError, OSError):
            pass
        ended.set()

    threading.Thread(target=drain, daemon=True).start()
    stream.shutdown()
    assert ended.wait(5)
    stream.close()
    release.set()
