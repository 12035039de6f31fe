"""Helpers for the exporter tests: start `joules serve` or a run with --prometheus, read the
address it prints, scrape it, parse the text format."""
import os
import re
import subprocess
import time
import urllib.request

from conftest import JOULES

ADDRESS = re.compile(r"https?://(\S+)/metrics")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (\d+))?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def clean_env(extra=None):
    env = dict(os.environ)
    for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID", "SLURM_JOB_ID",
              "SLURM_STEP_ID"):
        env.pop(k, None)
    env.update(extra or {})
    return env


class Process:
    """A joules process that serves /metrics; `address` is read from its stderr."""

    def __init__(self, *args, env=None, timeout=20):
        self.proc = subprocess.Popen([JOULES, *map(str, args)], env=clean_env(env),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr_lines = []
        deadline = time.monotonic() + timeout
        self.address = None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.stderr_lines.append(line)
            m = ADDRESS.search(line)
            if m:
                self.address = m.group(1)
                break
        assert self.address, ("no address printed", self.stderr_lines, self.proc.poll())

    @property
    def url(self):
        return f"http://{self.address}/metrics"

    def scrape(self, timeout=10):
        with urllib.request.urlopen(self.url, timeout=timeout) as r:
            assert r.status == 200
            return r.read().decode()

    def stop(self, sig=None, timeout=20):
        if sig is not None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        self.stderr_lines.append(err)
        return self.proc.returncode, out, "".join(self.stderr_lines)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def serve(*args, env=None):
    return Process("serve", "--listen", "127.0.0.1:0", *args, env=env)


def parse(text):
    """{(name, ((label, value), ...)): value}, labels sorted; every line must parse."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        labels = tuple(sorted((k, bytes(v, "utf-8").decode("unicode_escape"))
                              for k, v in LABEL.findall(m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def series(parsed, name, **labels):
    """The samples of `name` whose labels include `labels`: [(labels dict, value)]."""
    found = []
    for (n, ls), v in parsed.items():
        d = dict(ls)
        if n == name and all(d.get(k) == str(v2) for k, v2 in labels.items()):
            found.append((d, v))
    return found


def one(parsed, name, **labels):
    found = series(parsed, name, **labels)
    assert len(found) == 1, (name, labels, found)
    return found[0][1]


def names(text):
    return {m.group(1) for m in (SAMPLE.match(l) for l in text.splitlines()
                                 if l and not l.startswith("#")) if m}
