"""The /metrics HTTP server, black-box: a test program (tests/fixtures/http_server_fixture.cpp)
serves 8 fake GPUs on 127.0.0.1:0 and reports its port; these tests are the clients, polite
and otherwise."""
import http.client
import re
import shutil
import socket
import subprocess
import threading
import time

import pytest

from conftest import BUILD, SANITIZED

FIXTURE = BUILD / "tests" / "joules_http_fixture"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Sanitized builds run several times slower; timing bounds stretch with them.
SLOW = 3.0 if SANITIZED else 1.0


class Server:
    def __init__(self, *args):
        self.proc = subprocess.Popen([str(FIXTURE), *map(str, args)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.fullmatch(r"listening (\S+) (\d+)\n", line)
        assert m, (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.host, self.port = m.group(1), int(m.group(2))
        self.family = socket.AF_INET6 if ":" in self.host else socket.AF_INET

    def stats(self):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return self._parse_stats(self.proc.stdout.readline())

    @staticmethod
    def _parse_stats(line):
        assert line.startswith("stats "), line
        return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}

    def stop(self, timeout=10):
        """Ends the server (stdin EOF) and returns its final stats."""
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, err
        return self._parse_stats(out.splitlines()[-1])

    def connect(self, timeout=10):
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect((self.host, self.port))
        return s

    def raw(self, data, timeout=10):
        """Sends `data` and returns everything received until the server closes."""
        with self.connect(timeout) as s:
            s.sendall(data)
            return read_all(s)

    def get(self, path="/metrics", method="GET", headers=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()


def read_all(s):
    chunks = []
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def status_of(response):
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", response)
    assert m, response[:200]
    return int(m.group(1))


def split_responses(data):
    """Responses read back to back from one connection, as (status, headers, body)."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        n = int(headers["Content-Length"])
        out.append((int(lines[0].split()[1]), headers, rest[:n]))
        data = rest[n:]
    return out


@pytest.fixture
def server():
    started = []

    def start(*args):
        s = Server(*args)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_metrics_index_and_head(server):
    srv = server()
    status, headers, body = srv.get("/metrics")
    assert status == 200
    assert headers["Content-Type"] == CONTENT_TYPE
    assert int(headers["Content-Length"]) == len(body) > 10000
    assert body.startswith(b"# HELP joules_up ") and body.endswith(b"\n")
    assert re.match(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$", headers["Date"])
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
        assert r.returncode == 0 and not r.stdout and not r.stderr, r

    status, headers, body = srv.get("/metrics", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 10000

    status, headers, body = srv.get("/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'href="/metrics"' in body

    stats = srv.stop()
    assert stats["scrapes"] == 1 and stats["errors"] == 0  # HEAD is not a scrape
    assert stats["last_scrape_ns"] > 0


def test_unknown_paths_404_other_methods_405_and_nothing_is_reflected(server):
    srv = server()
    marker = "XSS<script>alert(1)</script>"
    for path in ["/nope", "/metrics/", "/../../etc/passwd", "/" + marker, "/metrics%2f"]:
        status, headers, body = srv.get(path)
        assert status == 404, path
        assert body == b"Not Found\n" and headers["Connection"] == "close"
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "get"]:
        status, headers, body = srv.get("/metrics", method=method, headers={"X-Echo": marker})
        assert status == 405, method
        assert headers["Allow"] == "GET, HEAD" and body == b"Method Not Allowed\n"
    response = srv.raw(f"GET /{marker} HTTP/1.1\r\nHost: {marker}\r\n\r\n".encode())
    assert status_of(response) == 404 and marker.encode() not in response
    assert srv.stop()["errors"] == 5 + 7 + 1


def test_keep_alive_connection_close_and_http_1_0(server):
    srv = server()
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    for _ in range(5):
        c.request("GET", "/metrics")
        r = c.getresponse()
        assert r.status == 200 and r.getheader("Connection") is None
        r.read()
    c.close()
    assert srv.stats()["accepted"] == 1

    response = srv.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status_of(response) == 200 and b"\r\nConnection: close\r\n" in response
    response = srv.raw(b"GET / HTTP/1.0\r\n\r\n")  # 1.0: closes unless asked otherwise
    assert status_of(response) == 200 and b"\r\nConnection: close\r\n" in response
    with srv.connect() as s:
        s.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        head = s.recv(65536)
        assert b"\r\nConnection: keep-alive\r\n" in head
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        rest = read_all(s)
        assert status_of(rest) == 200


def test_pipelined_requests_are_answered_in_order(server):
    srv = server()
    reqs = (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            b"\r\n"  # an empty line between requests is allowed
            b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")  # after close: never answered
    responses = split_responses(srv.raw(reqs))
    assert [r[0] for r in responses] == [200, 200, 200, 200]
    assert responses[0][2].startswith(b"# HELP") and responses[1][2].startswith(b"<html>")
    assert responses[2][2].startswith(b"# HELP") and responses[3][1]["Connection"] == "close"
    assert srv.stop()["scrapes"] == 2


@pytest.mark.parametrize("request_bytes,status", [
    (b"garbage\r\n\r\n", 400),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),  # a TLS hello
    (b"GET /metrics\r\n\r\n", 400),  # HTTP/0.9
    (b"GET /metrics HTTP/1.1\r\n\r\n", 400),  # no Host
    (b"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    (b"GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: a\r\n  folded\r\n\r\n", 400),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400),
    (b"GET /metrics HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", 400),
    (b"GET /me\x00trics HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 413),
    (b"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
     413),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
])
def test_malformed_requests_get_an_error_and_the_connection_is_closed(server, request_bytes, status):
    srv = server()
    response = srv.raw(request_bytes)  # returns only once the server has closed
    assert status_of(response) == status
    assert b"\r\nConnection: close\r\n" in response
    stats = srv.stop()
    assert stats["errors"] == 1 and stats["scrapes"] == 0


def test_huge_heads_are_refused_without_reading_them_whole(server):
    srv = server()
    big_field = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"x" * 9000 + b"\r\n\r\n"
    assert status_of(srv.raw(big_field)) == 431
    many = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(
        b"X-%d: v\r\n" % i for i in range(200)) + b"\r\n"
    assert status_of(srv.raw(many)) == 431
    assert status_of(srv.raw(b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")) == 414
    # A request line with no end: answered once 8 KiB have come, the rest read and dropped.
    with srv.connect() as s:
        s.sendall(b"GET /" + b"a" * 48 * 1024)
        assert status_of(read_all(s)) == 414
    assert srv.get()[0] == 200


def test_slowloris_is_dropped_after_the_request_timeout_and_blocks_no_one(server):
    srv = server()  # the default request timeout: 5 s
    s = srv.connect(timeout=30)
    start = time.monotonic()
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 40
    closed_at = None
    for byte in request:
        try:
            s.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            closed_at = time.monotonic()
            break
        # Others are served meanwhile.
        assert srv.get()[0] == 200
        s.settimeout(1.0)
        try:
            if s.recv(1) == b"":
                closed_at = time.monotonic()
                break
        except socket.timeout:
            pass
    s.close()
    assert closed_at is not None, "the slow client was never dropped"
    assert 4.5 <= closed_at - start <= 5 + 2.5 * SLOW
    assert srv.stop()["errors"] == 1


def test_a_silent_connection_is_dropped_too(server):
    srv = server("--request-timeout-ms", 500)
    with srv.connect() as s:
        start = time.monotonic()
        assert read_all(s) == b""
        assert 0.4 <= time.monotonic() - start <= 0.5 + 2 * SLOW


def test_idle_keep_alive_connections_end_after_the_idle_timeout(server):
    srv = server("--idle-timeout-ms", 300)
    with srv.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while b"</html>" not in data:
            data += s.recv(65536)
        start = time.monotonic()
        assert read_all(s) == b""
        assert 0.25 <= time.monotonic() - start <= 0.3 + 2 * SLOW
    assert srv.stop()["errors"] == 0  # an idle connection ending is no error


def test_200_concurrent_connections(server):
    srv = server()
    n = 200
    results = [None] * n
    barrier = threading.Barrier(n)

    def client(i):
        try:
            s = srv.connect(timeout=20)
        except OSError as e:
            results[i] = ("connect", repr(e))
            return
        with s:
            barrier.wait()
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            except OSError:
                pass  # refused: the server closed first
            data = read_all(s)
            results[i] = ("reply", status_of(data) if data else None)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    replies = [r[1] for r in results if r and r[0] == "reply"]
    assert len(replies) == n, results
    ok, busy, closed = replies.count(200), replies.count(503), replies.count(None)
    assert ok + busy + closed == n
    assert ok >= 64
    stats = srv.stats()
    assert stats["accepted"] == n
    assert stats["scrapes"] == ok
    assert stats["refused"] == n - ok
    assert srv.get()[0] == 200  # and it goes on


def test_the_connection_cap_recycles_slow_clients_for_new_ones(server):
    srv = server("--max-connections", 8)
    silent = [srv.connect() for _ in range(8)]
    time.sleep(0.2 * SLOW)
    # All 8 slots are taken by connections younger than a second: a new one gets 503.
    assert status_of(srv.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) == 503
    time.sleep(1.2)
    # Now the oldest silent one makes room.
    assert srv.get()[0] == 200
    closed = 0
    for s in silent:
        s.settimeout(0.2)
        try:
            closed += s.recv(1) == b""
        except socket.timeout:
            pass
        s.close()
    assert closed >= 1
    stats = srv.stop()
    assert stats["refused"] == 1 and stats["scrapes"] == 1


def test_clients_that_never_read_stall_no_one_and_are_dropped(server):
    srv = server("--write-timeout-ms", 1500)
    hogs = []
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    for _ in range(10):
        s = socket.socket(srv.family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        s.connect((srv.host, srv.port))
        s.setblocking(False)
        try:
            for _ in range(200):  # ~13 MB of responses asked for, none read
                s.send(request)
        except BlockingIOError:
            pass
        hogs.append(s)
    start = time.monotonic()
    for _ in range(20):
        assert srv.get()[0] == 200
    assert time.monotonic() - start < 2.0 * SLOW
    rss_kb = int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{srv.proc.pid}/status").read())[1])
    assert rss_kb < 200_000, rss_kb  # one response per connection is buffered, not 200
    time.sleep(1.5 + 1.0 * SLOW)
    dropped = 0
    for s in hogs:
        s.setblocking(True)
        s.settimeout(5)
        try:
            while s.recv(1 << 20):
                pass
            dropped += 1  # EOF: the server closed it
        except ConnectionResetError:
            dropped += 1
        except socket.timeout:
            pass  # still open: the server would have gone on writing
        s.close()
    assert dropped == 10
    assert srv.stop()["errors"] >= 10


def test_a_failing_writer_is_a_500_without_details(server):
    srv = server("--writer-throws")
    status, headers, body = srv.get()
    assert status == 500 and body == b"Internal Server Error\n"
    assert srv.get("/")[0] == 200
    stats = srv.stop()
    assert stats["errors"] == 1 and stats["scrapes"] == 0


def ipv6_loopback():
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback here")
def test_ipv6_loopback(server):
    srv = server("--listen", "[::1]:0")
    assert srv.host == "::1"
    assert srv.get()[0] == 200


def test_listen_errors_are_one_line(server):
    srv = server()
    r = subprocess.run([str(FIXTURE), "--listen", f"127.0.0.1:{srv.port}"], capture_output=True,
                       text=True, input="", timeout=30)
    assert r.returncode == 2
    assert r.stderr == (f"http_server_fixture: cannot listen on 127.0.0.1:{srv.port}: Address "
                        "already in use; choose another port, or 0 for a free one\n")
    r = subprocess.run([str(FIXTURE), "--listen", ":9400"], capture_output=True, text=True,
                       input="", timeout=30)
    assert r.returncode == 2 and "0.0.0.0:PORT" in r.stderr
    r = subprocess.run([str(FIXTURE), "--listen", "no-such-host.invalid:0"], capture_output=True,
                       text=True, input="", timeout=30)
    assert r.returncode == 2
    assert r.stderr.startswith("http_server_fixture: cannot listen on no-such-host.invalid:0: ")


def test_stop_is_prompt_with_clients_attached(server):
    srv = server()
    slow = srv.connect()
    slow.sendall(b"GET /metrics HTTP/1.1\r\n")
    keep = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    keep.request("GET", "/metrics")
    keep.getresponse().read()
    start = time.monotonic()
    stats = srv.stop()
    assert time.monotonic() - start < 2 * SLOW
    assert stats["scrapes"] == 1
    assert read_all(slow) == b""
    slow.close()
    with pytest.raises(OSError):
        socket.create_connection((srv.host, srv.port), timeout=2).close()
