"""`joules serve`'s command line, what CMake installs for it and its port (the exporter itself:
test_serve.py)."""
import re
import socket
import subprocess

import pytest

from conftest import BUILD, ROOT, joules
from exporter_util import Process, names


@pytest.mark.parametrize("args,message", [
    (["--listen", "nowhere"], "--listen 'nowhere'"),
    (["--listen", ":9400"], "--listen ':9400'"),
    (["--interval", "5"], "--interval '5'"),
    (["--sim-gpus", "2"], "--sim-gpus applies only with --backend sim"),
    (["--label", "novalue"], "--label 'novalue'"),
    (["extra"], "extra"),
    (["--max-connections", "0"], "--max-connections '0': expected a number of connections"),
    (["--max-connections", "many"], "--max-connections 'many'"),
    (["--pue", "0.8"], "--pue '0.8': expected a power usage effectiveness from 1.0 to 5.0"),
    (["--region", "Germany"], "--region 'Germany': expected an ISO country code"),
    (["--currency", "EUR"], "--currency applies only with --price-per-kwh"),
    (["--components", "gpu,tpu"], "--components 'gpu,tpu': expected"),
    # A value with a newline or an escape in it (found by tests/fuzz): still one line, escaped.
    (["--region", "DE\nFR"], "--region 'DE\\nFR'"),
    (["--lis\x1bten=1"], "'--lis\\x1bten=1'"),
])
def test_bad_options_exit_2_with_one_line(args, message):
    r = joules("serve", "--backend", "sim", *args) if "--sim-gpus" not in args else \
        joules("serve", *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_units_binary_and_documentation_are_what_cmake_installs(tmp):
    unit = (ROOT / "packaging" / "joules-serve.service").read_text()
    docs = re.search(r"^Documentation=(.*)$", unit, re.M).group(1).split()
    binary = re.search(r"^ExecStart=(\S+) serve ", unit, re.M).group(1)
    prefix = "/usr/local/"
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(tmp)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert binary.startswith(prefix) and (tmp / binary[len(prefix):]).exists()
    assert "man:joules-serve(1)" in docs and "man:joules(1)" in docs
    man1 = tmp / "share" / "man" / "man1"
    assert (man1 / "joules.1").read_text().startswith(".TH JOULES 1")
    man = (man1 / "joules-serve.1").read_text()
    assert man.startswith(".TH JOULES\\-serve 1") and "max\\-connections" in man
    # The completions go where bash, zsh and fish look for them.
    share = tmp / "share"
    assert "complete -o filenames -F _joules joules" in (share / "bash-completion" / "completions" / "joules").read_text()
    assert (share / "zsh" / "site-functions" / "_joules").read_text().startswith("#compdef joules")
    assert "complete -c joules" in (share / "fish" / "vendor_completions.d" / "joules.fish").read_text()
    for d in docs:
        if d.startswith("file:"):
            path = d[len("file:"):]
            assert path.startswith(prefix) and (tmp / path[len(prefix):]).exists(), d


def test_a_port_in_use_is_an_error_not_a_hang():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        r = joules("serve", "--backend", "sim", "--listen", f"127.0.0.1:{s.getsockname()[1]}",
                   timeout=20)
    finally:
        s.close()
    assert r.returncode != 0
    assert "joules: error:" in r.stderr and "in use" in r.stderr.lower()


def test_the_default_port_is_19400_not_dcgm_exporters_9400(procs):
    """docs/metrics.md, "The default port": 19400 unless --listen names one."""
    help_text = joules("serve", "--help").stdout
    assert "127.0.0.1:19400" in help_text and "127.0.0.1:9400" not in help_text
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", 19400))
    except OSError:
        pytest.skip("port 19400 is in use on this machine")
    finally:
        probe.close()
    p = Process("serve", "--backend", "sim", "--sim-gpus", "1")
    procs.append(p)
    assert p.address == "127.0.0.1:19400"
    assert "joules_gpu_power_watts" in names(p.scrape())
