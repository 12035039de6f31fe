"""`joules serve --web-config-file` reads the file again when it or a file it names changes, and at
SIGHUP (docs/web-config.md, "Changes are picked up"): a new password and a rotated certificate take
effect without a restart; a bad change is one warning, and the last good configuration is served
on.  joules looks for a change at most once a second, when a connection or a request comes: the
tests make requests until what they wait for happens, within a deadline."""
import http.client
import os
import re
import signal
import ssl
import time

import pytest

from conftest import wait_for
from exporter_util import serve
from test_serve_web_config import (CURL, HASH, OPENSSL, PASSWORD, curl, make_key_and_cert, pki,
                                   start, web_config)

pytestmark = pytest.mark.skipif(OPENSSL is None or CURL is None,
                                reason="openssl and curl needed (scripts/install-deps test)")

NEW_PASSWORD = "battery staple"
# bcrypt of NEW_PASSWORD, cost 10 (libxcrypt's crypt with a salt from crypt_gensalt).
NEW_HASH = "$2b$10$deh/UoRKniLNb/hyLXH8J.i4Z1YhWHcpZzNEU472m28HlIHgi2GbC"
# Longer than the once-a-second look, with room for a loaded machine.
DEADLINE = 20.0

__all__ = ["pki"]  # the fixture, shared with test_serve_web_config.py


def replace(path, text):
    """Writes `path` whole under another name and renames it over, as editors and certbot do."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def stderr_of(p):
    return "".join(p._err)


def reload_gauge(body):
    m = re.search(r"^joules_web_config_last_reload_successful\{[^}]*\} (\S+)$", body, re.M)
    return m and float(m.group(1))


def users_config(hash_, tls=True):
    text = f"basic_auth_users:\n  prometheus: {hash_}\n"
    if tls:
        text = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n" + text
    return text


def test_a_new_password_takes_effect_without_a_restart(pki, procs):
    config = web_config(pki, users_config(HASH, tls=False), "reload-users.yml")
    p = start(config)
    procs.append(p)
    old, new = ["-u", f"prometheus:{PASSWORD}"], ["-u", f"prometheus:{NEW_PASSWORD}"]
    status, _, _, body = curl(p, *old, scheme="http")
    assert status == 200 and reload_gauge(body) == 1
    replace(config, users_config(NEW_HASH, tls=False))
    assert wait_for(lambda: curl(p, *new, scheme="http")[0] == 200, timeout=DEADLINE, step=0.1), \
        stderr_of(p)
    assert curl(p, *old, scheme="http")[0] == 401
    assert "read again" in stderr_of(p)
    assert p.proc.poll() is None


def peer_common_name(p, ca):
    """The CN of the certificate joules presents to a new TLS connection."""
    host, port = p.address.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=10)
    try:
        conn.connect()
        subject = dict(x[0] for x in conn.sock.getpeercert()["subject"])
        return subject["commonName"]
    finally:
        conn.close()


def test_a_rotated_certificate_is_presented_to_new_connections(pki, procs, tmp_path):
    """The certificate and key change together behind a symbolic link to their directory, as in a
    Kubernetes secret volume (cert-manager): new connections get the new certificate, a connection
    kept alive from before is served on."""
    for version in ("v1", "v2"):
        d = tmp_path / version
        d.mkdir()
        for name in ("ca.pem", "ca.key"):
            (d / name).write_bytes((pki / name).read_bytes())
        make_key_and_cert(d, "tls", f"joules-{version}", ca="ca", san="DNS:localhost,IP:127.0.0.1")
    live = tmp_path / "live"
    os.symlink("v1", live)
    config = web_config(tmp_path, "tls_server_config:\n  cert_file: live/tls.pem\n"
                        "  key_file: live/tls.key\n")
    p = start(config)
    procs.append(p)
    assert peer_common_name(p, pki / "ca.pem") == "joules-v1"
    host, port = p.address.rsplit(":", 1)
    kept = http.client.HTTPSConnection(host, int(port), timeout=10,
                                       context=ssl.create_default_context(cafile=str(pki / "ca.pem")))
    kept.request("GET", "/metrics")
    response = kept.getresponse()
    assert response.status == 200 and response.read()

    os.symlink("v2", tmp_path / "live.tmp")
    os.replace(tmp_path / "live.tmp", live)  # both files at once
    assert wait_for(lambda: peer_common_name(p, pki / "ca.pem") == "joules-v2", timeout=DEADLINE,
                    step=0.1), stderr_of(p)
    kept.request("GET", "/metrics")
    response = kept.getresponse()
    assert response.status == 200 and b"joules_up" in response.read()
    kept.close()
    assert "warning" not in stderr_of(p)


def test_a_bad_change_keeps_the_last_good_configuration_and_says_why_once(pki, procs):
    config = web_config(pki, users_config(HASH), "reload-bad.yml")
    p = start(config)
    procs.append(p)
    ca = ["--cacert", str(pki / "ca.pem")]
    old, new = ["-u", f"prometheus:{PASSWORD}"], ["-u", f"prometheus:{NEW_PASSWORD}"]

    def warned(text, count=1):
        """Scrapes (so that joules looks) until `text` has been said in `count` warnings."""
        def said():
            status, _, _, body = curl(p, *ca, *old)
            assert status == 200, stderr_of(p)  # the old configuration is served throughout
            lines = [ln for ln in p._err if "warning" in ln and text in ln]
            return len(lines) >= count and reload_gauge(body) == 0
        return wait_for(said, timeout=DEADLINE, step=0.1)

    # Not the toolkit's format, with an escape sequence in the key (YAML's "\e"): shown escaped.
    replace(config, users_config(HASH).replace("cert_file", '"cert_\\e[31mfile"'))
    assert warned("unknown key"), stderr_of(p)
    assert "\x1b" not in stderr_of(p)
    # Said once per change, however many requests come: past the next look at the files, which
    # finds them as they were.
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        assert curl(p, *ca, *old)[0] == 200
    assert sum("unknown key" in ln for ln in p._err) == 1, stderr_of(p)

    # A key that is not the certificate's; TLS turned off (which needs a restart).
    replace(config, users_config(HASH).replace("server.key", "other.key"))
    assert warned("is not the key of the certificate"), stderr_of(p)
    replace(config, users_config(HASH, tls=False))
    assert warned("turns TLS off"), stderr_of(p)
    assert p.proc.poll() is None

    # Fixed, with a new password: in force.
    replace(config, users_config(NEW_HASH))
    assert wait_for(lambda: curl(p, *ca, *new)[0] == 200, timeout=DEADLINE, step=0.1), stderr_of(p)
    status, _, _, body = curl(p, *ca, *new)
    assert status == 200 and reload_gauge(body) == 1
    assert curl(p, *ca, *old)[0] == 401


def test_sighup_reads_the_file_again(pki, procs):
    """SIGHUP reads the file at once, changed or not, and does not stop serve; without
    --web-config-file it changes nothing."""
    config = web_config(pki, users_config(HASH, tls=False), "reload-hup.yml")
    p = start(config)
    procs.append(p)
    p.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: "read again" in stderr_of(p), timeout=DEADLINE), stderr_of(p)
    assert curl(p, "-u", f"prometheus:{PASSWORD}", scheme="http")[0] == 200
    bare = serve("--backend", "sim", "--sim-gpus", "1")
    procs.append(bare)
    bare.proc.send_signal(signal.SIGHUP)
    for _ in range(3):
        assert "joules_up" in bare.scrape()
    assert bare.proc.poll() is None
