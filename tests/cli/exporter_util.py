"""Helpers for the exporter tests: start `joules serve` or a run with --prometheus, read the
address it prints, scrape it, parse the text format."""
import os
import re
import subprocess
import threading
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
    """A joules process that serves /metrics; `address` is read from its stderr.

    Threads read its stdout and stderr to the end: a line written just after the address (a
    note of another thread) is kept, where reading the address with readline() and the rest with
    communicate() would lose what readline's buffer had already taken from the pipe."""

    def __init__(self, *args, env=None, timeout=20):
        self.proc = subprocess.Popen([JOULES, *map(str, args)], env=clean_env(env),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.address = None
        self._err, self._out = [], []
        self._addressed = threading.Event()
        self._readers = [threading.Thread(target=self._read_stderr, daemon=True),
                         threading.Thread(target=lambda: self._out.extend(self.proc.stdout),
                                          daemon=True)]
        for t in self._readers:
            t.start()
        self._addressed.wait(timeout)
        # The lines up to the one with the address.
        self.stderr_lines = list(self._err[:self._address_line + 1]) if self.address else []
        assert self.address, ("no address printed", list(self._err), self.proc.poll())

    def _read_stderr(self):
        for line in self.proc.stderr:
            self._err.append(line)
            m = ADDRESS.search(line) if self.address is None else None
            if m:
                self._address_line = len(self._err) - 1
                self.address = m.group(1)
                self._addressed.set()
        self._addressed.set()

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
        self.proc.wait(timeout=timeout)
        for t in self._readers:
            t.join(timeout=timeout)
        return self.proc.returncode, "".join(self._out), "".join(self._err)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for t in self._readers:
            t.join(timeout=5)


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
