"""`joules serve --web-config-file`: TLS, client certificates, basic auth and headers of /metrics
(docs/web-config.md), scraped with curl and with a real Prometheus; hostile TLS clients; and every
kind of bad file, each one error line and exit status 2.  The CA and certificates are made with the
`openssl` command in the test's own directory."""
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import JOULES, joules, wait_for
from exporter_util import Process, clean_env

OPENSSL = shutil.which("openssl")
CURL = shutil.which("curl")
PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(OPENSSL is None or CURL is None,
                                reason="openssl and curl needed (scripts/install-deps test)")

PASSWORD = "correct horse"
# bcrypt of PASSWORD, cost 10 (made with Python's crypt over libxcrypt; htpasswd -nBC 10 makes the
# same kind).
HASH = "$2b$10$ozEdbvf1ND0j/qXKpjIPs.e/fdlxKd9EPI.D7FVTp.dnHTshRgfaq"


def openssl(*args, cwd):
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True)


def make_key_and_cert(d, name, subject, ca=None, san=None):
    """An EC P-256 key `name`.key and its certificate `name`.pem, signed by `ca` (a name) or self."""
    if ca is None:
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj",
                f"/CN={subject}", cwd=d)
        return
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={subject}", cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", ext.name, cwd=d)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """ca: the scrapers' and server's CA; server (127.0.0.1, localhost); client (signed by ca);
    rogue: a client certificate of another CA; other: a key that belongs to no certificate here."""
    d = tmp_path_factory.mktemp("pki")
    make_key_and_cert(d, "ca", "joules test CA")
    make_key_and_cert(d, "server", "localhost", ca="ca", san="DNS:localhost,IP:127.0.0.1")
    make_key_and_cert(d, "client", "prometheus", ca="ca")
    make_key_and_cert(d, "rogue-ca", "rogue CA")
    make_key_and_cert(d, "rogue", "prometheus", ca="rogue-ca")
    make_key_and_cert(d, "other", "other")
    openssl("pkey", "-in", "server.key", "-aes256", "-passout", "pass:secret", "-out",
            "encrypted.key", cwd=d)
    return d


def web_config(d, text, name="web.yml"):
    path = d / name
    path.write_text(text)
    return path


def start(config):
    return Process("serve", "--backend", "sim", "--sim-gpus", "2", "--listen", "127.0.0.1:0",
                   "--web-config-file", config)


def curl(p, *args, scheme="https", path="/metrics"):
    """(HTTP status or 0, curl's exit status, response head, body) of one request."""
    r = subprocess.run([CURL, "-sS", "-i", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}",
                        *args, f"{scheme}://{p.address}{path}"], capture_output=True)
    # Bytes, not text mode: universal newlines would turn the head's CRLFs into LFs.
    out, _, code = r.stdout.decode("utf-8", "replace").rpartition("\n")
    head, _, body = out.partition("\r\n\r\n")
    return int(code or 0), r.returncode, head, body


@pytest.fixture
def served(pki, procs):
    """joules serve over TLS (the test CA's server certificate) with basic auth."""
    config = web_config(pki, f"""
tls_server_config:
  cert_file: server.pem
  key_file: server.key
basic_auth_users:
  prometheus: {HASH}
http_server_config:
  headers:
    Strict-Transport-Security: max-age=31536000
""")
    p = start(config)
    procs.append(p)
    return p


def test_tls_with_basic_auth_good_bad_and_missing(pki, served):
    assert "https://" in "".join(served.stderr_lines)
    ca = ["--cacert", str(pki / "ca.pem")]
    status, rc, head, body = curl(served, *ca, "-u", f"prometheus:{PASSWORD}")
    assert (status, rc) == (200, 0), head
    assert "joules_gpu_power_watts{" in body
    assert "Strict-Transport-Security: max-age=31536000" in head
    for creds in (["-u", "prometheus:wrong"], ["-u", f"nobody:{PASSWORD}"], []):
        status, rc, head, body = curl(served, *ca, *creds)
        assert status == 401, (creds, head)
        assert "\r\nWWW-Authenticate: Basic\r\n" in head + "\r\n", head
        assert "joules_" not in body
    # Every path needs the credentials; the index too.
    assert curl(served, *ca, path="/")[0] == 401
    # Plain HTTP to the TLS port gets no answer; nor does a client that does not trust the CA.
    assert curl(served, scheme="http")[0] == 0
    status, rc, _, _ = curl(served, "-u", f"prometheus:{PASSWORD}")
    assert status == 0 and rc != 0


def test_good_credentials_cost_one_bcrypt_not_one_per_scrape(pki, served):
    """bcrypt at cost 10 takes tens of milliseconds; 30 scrapes with the same credentials over one
    curl (keep-alive) must not cost 30 of them: the answer is cached."""
    ca = ["--cacert", str(pki / "ca.pem")]
    one = time.monotonic()
    assert curl(served, *ca, "-u", "prometheus:wrong")[0] == 401  # a bcrypt, uncached
    one = time.monotonic() - one
    assert curl(served, *ca, "-u", f"prometheus:{PASSWORD}")[0] == 200  # cached from here on
    urls = [a for _ in range(30) for a in (f"https://{served.address}/metrics", "-o", "/dev/null")]
    t0 = time.monotonic()
    r = subprocess.run([CURL, "-sS", "-w", "%{http_code}\n", *ca, "-u", f"prometheus:{PASSWORD}",
                        *urls], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - t0
    assert r.stdout.split() == ["200"] * 30, r.stderr
    print(f"one uncached check (TLS handshake included): {one * 1000:.0f} ms; "
          f"30 cached scrapes: {elapsed * 1000:.0f} ms")
    assert elapsed < max(10 * one, 1.0)


def test_client_certificate_required(pki, procs):
    config = web_config(pki, """
tls_server_config:
  cert_file: server.pem
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.pem
  min_version: TLS12
""", "mtls.yml")
    p = start(config)
    procs.append(p)
    ca = ["--cacert", str(pki / "ca.pem")]
    good = ["--cert", str(pki / "client.pem"), "--key", str(pki / "client.key")]
    rogue = ["--cert", str(pki / "rogue.pem"), "--key", str(pki / "rogue.key")]
    status, rc, _, body = curl(p, *ca, *good)
    assert (status, rc) == (200, 0) and "joules_up" in body
    for tls_version in ("--tlsv1.2", "--tlsv1.3"):  # TLS 1.3 refuses after the handshake
        for creds in ([], rogue):
            status, rc, _, _ = curl(p, *ca, *creds, tls_version, "--tls-max",
                                    tls_version[len("--tlsv"):])
            assert status == 0 and rc != 0, (creds, tls_version)
    assert curl(p, *ca, *good)[0] == 200  # refusals cost the others nothing


def test_hostile_tls_clients_do_not_block_scrapes(pki, served):
    """Connections that send nothing, garbage, or half a ClientHello hold their own slot only: a
    scrape meanwhile is answered at once, and the garbage is dropped."""
    host, port = served.address.rsplit(":", 1)
    idle, garbage, partial = [], [], []
    for _ in range(5):
        idle.append(socket.create_connection((host, int(port))))
        g = socket.create_connection((host, int(port)))
        g.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 600)
        garbage.append(g)
        h = socket.create_connection((host, int(port)))
        h.sendall(bytes.fromhex("16030100c8010000c40303"))  # a ClientHello's first 11 bytes
        partial.append(h)
    t0 = time.monotonic()
    status, rc, _, _ = curl(served, "--cacert", str(pki / "ca.pem"), "-u",
                            f"prometheus:{PASSWORD}")
    elapsed = time.monotonic() - t0
    assert (status, rc) == (200, 0)
    assert elapsed < 2.0, elapsed
    for g in garbage:  # the server closed them: a read ends (an alert, then EOF) or is reset
        g.settimeout(5)
        try:
            while g.recv(4096):
                pass
        except ConnectionResetError:
            pass
    for s in idle + garbage + partial:
        s.close()


def test_basic_auth_without_tls_and_headers(pki, procs):
    config = web_config(pki, f"""
basic_auth_users:
  prometheus: {HASH}
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Content-Security-Policy: ""
""", "plain.yml")
    p = start(config)
    procs.append(p)
    assert "http://" in "".join(p.stderr_lines)
    status, _, head, _ = curl(p, "-u", f"prometheus:{PASSWORD}", scheme="http")
    assert status == 200
    assert "X-Frame-Options: deny" in head and "Content-Security-Policy" not in head
    status, _, head, _ = curl(p, scheme="http")
    assert status == 401 and "WWW-Authenticate: Basic" in head


def test_password_guessing_does_not_delay_a_cached_scrape(pki, procs):
    """bcrypt runs on a thread of its own: 30 requests with different wrong passwords (seconds of
    bcrypt at cost 10) are in flight while a scrape whose credentials are cached is answered."""
    import base64
    p = start(web_config(pki, f"basic_auth_users:\n  prometheus: {HASH}\n", "guess.yml"))
    procs.append(p)
    assert curl(p, "-u", f"prometheus:{PASSWORD}", scheme="http")[0] == 200  # now cached
    host, port = p.address.rsplit(":", 1)
    guesses = []
    for i in range(30):
        s = socket.create_connection((host, int(port)))
        token = base64.b64encode(f"prometheus:guess-{i}".encode()).decode()
        s.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {token}\r\n\r\n"
                  .encode())
        guesses.append(s)
    t0 = time.monotonic()
    assert curl(p, "-u", f"prometheus:{PASSWORD}", scheme="http")[0] == 200
    elapsed = time.monotonic() - t0
    first = guesses[0]
    first.settimeout(10)
    assert first.recv(64).startswith(b"HTTP/1.1 401 ")  # the guesses are answered, in time
    for s in guesses:
        s.close()
    print(f"cached scrape during 30 guesses: {elapsed * 1000:.1f} ms")
    # Checked one after another on this thread, the guesses would take seconds (cost 10).
    assert elapsed < 1.0, elapsed


BAD = {
    "missing file": (None, "cannot read the file"),
    "unknown key": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                    "  cert_fiel: x\n", "line 4: unknown key 'cert_fiel' in tls_server_config"),
    "unknown top-level key": ("basic_auth_user:\n  a: b\n", "unknown key 'basic_auth_user'"),
    "bad YAML": ("tls_server_config:\n  cert_file: [server.pem\n", "not YAML"),
    "unreadable cert": ("tls_server_config:\n  cert_file: nowhere.pem\n  key_file: server.key\n",
                        "cannot read cert_file"),
    "not a certificate": ("tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n",
                          "holds no PEM certificate"),
    "key not matching": ("tls_server_config:\n  cert_file: server.pem\n  key_file: other.key\n",
                         "is not the key of the certificate"),
    "encrypted key": ("tls_server_config:\n  cert_file: server.pem\n  key_file: encrypted.key\n",
                      "encrypted.key holds no PEM private key (or it is encrypted)"),
    "no key": ("tls_server_config:\n  cert_file: server.pem\n", "needs key_file"),
    "not bcrypt": ("basic_auth_users:\n  prometheus: plain-password\n", "not a bcrypt hash"),
    "md5 crypt": ("basic_auth_users:\n  prometheus: $1$abc$OGyl6dDvZCDiGmIVbeuCq/\n",
                  "not a bcrypt hash"),
    "bad client auth": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                        "  client_auth_type: Always\n", "client_auth_type 'Always'"),
    "CA without client auth": ("tls_server_config:\n  cert_file: server.pem\n  key_file: "
                               "server.key\n  client_ca_file: ca.pem\n", "NoClientCert"),
    "verify without CA": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                          "  client_auth_type: RequireAndVerifyClientCert\n",
                          "needs client_ca_file"),
    "bad version": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                    "  min_version: TLS9\n", "min_version 'TLS9'"),
    "bad header": ("http_server_config:\n  headers:\n    Server: joules\n",
                   "the header 'Server' cannot be set"),
    "bad cipher": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                   "  cipher_suites: [TLS_RSA_WITH_NOTHING]\n", "TLS_RSA_WITH_NOTHING"),
    "repeated key": ("basic_auth_users:\n  a: " + HASH + "\n  a: " + HASH + "\n",
                     "'a' is given twice"),
    "unsupported key": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                        "  client_allowed_sans: [a]\n", "client_allowed_sans is not supported"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_file_is_one_error_line_and_status_2(pki, tmp, case):
    text, expected = BAD[case]
    config = tmp / "absent.yml"
    if text is not None:
        # Relative names are taken from the file's directory: the PKI's.
        for f in pki.iterdir():
            (tmp / f.name).write_bytes(f.read_bytes())
        config = tmp / "bad.yml"
        config.write_text(text)
    out = tmp / "samples.jsonl"
    out.write_text("kept\n")
    r = joules("serve", "--backend", "sim", "--listen", "127.0.0.1:0", "--web-config-file",
               config, "--output", out, timeout=20)
    assert r.returncode == 2, (case, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, (case, r.stderr)
    assert lines[0].startswith(f"joules: error: --web-config-file {config}: "), lines
    assert expected in lines[0], (case, lines[0])
    assert out.read_text() == "kept\n"  # nothing was started, no file truncated


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus not installed")
def test_prometheus_scrapes_over_tls_with_basic_auth_and_a_client_certificate(pki, tmp, procs):
    config = web_config(pki, f"""
tls_server_config:
  cert_file: server.pem
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.pem
basic_auth_users:
  prometheus: {HASH}
""", "prom.yml")
    p = start(config)
    procs.append(p)
    port = _free_port()
    tls = {"ca_file": str(pki / "ca.pem"), "cert_file": str(pki / "client.pem"),
           "key_file": str(pki / "client.key")}
    (tmp / "prometheus.yml").write_text(json.dumps({  # JSON is YAML
        "global": {"scrape_interval": "1s", "scrape_timeout": "900ms"},
        "scrape_configs": [
            {"job_name": "joules-tls", "scheme": "https", "tls_config": tls,
             "basic_auth": {"username": "prometheus", "password": PASSWORD},
             "static_configs": [{"targets": [p.address]}]},
            # The same target with a wrong password: up 0.
            {"job_name": "joules-wrong-password", "scheme": "https", "tls_config": tls,
             "basic_auth": {"username": "prometheus", "password": "wrong"},
             "static_configs": [{"targets": [p.address]}]},
        ]}))
    log = open(tmp / "prometheus.log", "w")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        def query(expr):
            url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode(
                {"query": expr})
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    return {m["metric"]["job"]: float(m["value"][1])
                            for m in json.load(r)["data"]["result"]}
            except OSError:
                return {}

        assert wait_for(lambda: len(query("up")) == 2, timeout=40, step=0.5), \
            (tmp / "prometheus.log").read_text()
        assert wait_for(lambda: query("up") == {"joules-tls": 1.0, "joules-wrong-password": 0.0},
                        timeout=20, step=0.5), query("up")
        assert wait_for(lambda: query("count by (job) (joules_gpu_power_watts)") ==
                        {"joules-tls": 2.0}, timeout=20, step=0.5)
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        log.close()


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
