"""The other ends of `joules run --otlp`, for tests/cli/test_otlp.py: an OTLP/HTTP collector
(plain or TLS, optionally asking for a client certificate) that records every request and can
answer with chosen statuses or hold its answers, an HTTP proxy that records what it relays, and
a test PKI made with the `openssl` command."""
import gzip
import http.server
import json
import socket
import socketserver
import ssl
import subprocess
import threading
import time
import urllib.parse
from dataclasses import dataclass


@dataclass
class Request:
    time: float  # time.monotonic() when it arrived
    path: str
    headers: dict
    body: bytes  # decompressed when it came with Content-Encoding: gzip
    client_port: int  # one port for every request: the connection was kept alive
    client_cn: str  # the client certificate's common name, if one was shown


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1.  `statuses` are answered in order, then 200: each an
    int or (status, headers, body).  `hold` keeps every answer until close().  `tls` is a Pki:
    HTTPS with its server certificate, and with `client_ca` a client certificate is required."""

    def __init__(self, statuses=(), hold=False, tls=None, client_ca=False):
        self.requests = []
        self.handshake_errors = []
        self.statuses = list(statuses)
        self.released = threading.Event()
        self.hold = hold
        self.lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as collectors do
            timeout = 10

            def setup(self):
                if tls:
                    try:
                        self.request.do_handshake()
                    except OSError as e:
                        with owner.lock:
                            owner.handshake_errors.append(str(e))
                        raise
                super().setup()

            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                gz = self.headers.get("Content-Encoding") == "gzip"
                cn = ""
                if tls and self.connection.getpeercert():
                    subject = dict(x[0] for x in self.connection.getpeercert()["subject"])
                    cn = subject.get("commonName", "")
                with owner.lock:
                    owner.requests.append(Request(time.monotonic(), self.path, dict(self.headers),
                                                  gzip.decompress(raw) if gz else raw,
                                                  self.client_address[1], cn))
                    answer = owner.statuses.pop(0) if owner.statuses else 200
                status, headers, reply = answer if isinstance(answer, tuple) else (answer, {}, None)
                if reply is None:
                    reply = b"{}" if status == 200 else b'{"code":14,"message":"try later"}'
                if owner.hold:
                    owner.released.wait(timeout=30)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:
                    pass  # the client gave up waiting: that is the point of a held answer

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def get_request(self):
                sock, addr = self.socket.accept()
                if not tls:
                    return sock, addr
                # The handshake runs on the request's thread (Handler.setup), not the accept loop.
                return context.wrap_socket(sock, server_side=True,
                                           do_handshake_on_connect=False), addr

            def handle_error(self, request, client_address):
                pass  # a refused handshake is recorded in handshake_errors

        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.server_cert, tls.server_key)
            if client_ca:
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(tls.ca)
        self.scheme = "https" if tls else "http"
        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def close(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def payloads(self):
        with self.lock:
            return [json.loads(r.body) for r in self.requests]


class Proxy:
    """An HTTP proxy on 127.0.0.1 that tunnels CONNECT and forwards absolute-form requests as
    bytes, recording the first request line of every connection."""

    def __init__(self):
        self.lines = []
        self.lock = threading.Lock()
        owner = self

        def pipe(src, dst):
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                with owner.lock:
                    owner.lines.append(line)
                method, target, _ = line.split(" ", 2)
                if method == "CONNECT":
                    host, port = target.rsplit(":", 1)
                    upstream = socket.create_connection((host, int(port)))
                    self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    head = head[head.index(b"\r\n\r\n") + 4:]
                else:
                    u = urllib.parse.urlsplit(target)
                    upstream = socket.create_connection((u.hostname, u.port))
                with upstream:
                    if head:
                        upstream.sendall(head)
                    back = threading.Thread(target=pipe, args=(upstream, self.request),
                                            daemon=True)
                    back.start()
                    pipe(self.request, upstream)
                    back.join(timeout=10)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Pki:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made in `directory`."""

    def __init__(self, directory):
        d = directory
        self.ca, ca_key = d / "ca.pem", d / "ca.key"
        self.server_cert, self.server_key = d / "server.pem", d / "server.key"
        self.client_cert, self.client_key = d / "client.pem", d / "client.key"
        self._make(d / "ca.cnf", "joules test CA", self.ca, ca_key,
                   "basicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign\n")
        leaf = ("basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature\n"
                "authorityKeyIdentifier = keyid\n")
        self._make(d / "server.cnf", "127.0.0.1", self.server_cert, self.server_key,
                   leaf + "extendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1\n",
                   (self.ca, ca_key))
        self._make(d / "client.cnf", "joules-client", self.client_cert, self.client_key,
                   leaf + "extendedKeyUsage = clientAuth\n", (self.ca, ca_key))

    @staticmethod
    def _make(cnf, cn, cert, key, extensions, issuer=None):
        cnf.write_text("[req]\ndistinguished_name = dn\nprompt = no\n"
                       f"[dn]\nCN = {cn}\n[ext]\nsubjectKeyIdentifier = hash\n{extensions}")
        cmd = ["openssl", "req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
               "ec_paramgen_curve:P-256", "-keyout", key, "-out", cert, "-days", "2",
               "-config", cnf, "-extensions", "ext"]
        if issuer:
            cmd += ["-CA", issuer[0], "-CAkey", issuer[1]]
        subprocess.run(list(map(str, cmd)), check=True, capture_output=True)
