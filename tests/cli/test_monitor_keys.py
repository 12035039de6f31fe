"""`joules monitor`'s keys as a person presses them: in an interactive bash in a tmux pane of its
own tmux server (`tmux -L`), keys sent with `send-keys`, the screen read with `capture-pane`, and
every byte joules wrote to the pane kept with `pipe-pane` (the escape sequences themselves, not
what tmux made of them).  On the simulated backend and on the fake NVML with processes, whose
names may hold escape sequences: none of them may reach the terminal.  Every wait is for
something on the screen or in the captured bytes, never a fixed sleep."""
import json
import os
import pathlib
import re
import shlex
import signal
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from conftest import JOULES, fake_gpus, joules

TMUX = shutil.which("tmux")
NO_RAPL = {"JOULES_POWERCAP_ROOT": "/nonexistent-powercap"}
PROMPT = "joules-test$ "
PROMPT_SHOWN = PROMPT.rstrip()  # capture-pane drops trailing blanks

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return None


class Shell:
    """An interactive bash (job control on) in a tmux pane; every byte written to the pane goes
    to `raw` as well."""

    def __init__(self, tmp, env, width=120, height=40):
        self.socket = f"joules-keys-{uuid.uuid4().hex[:10]}"
        self.raw = tmp / "pane.raw"
        self.tmp = tmp
        full = {"PATH": os.environ["PATH"], "HOME": str(tmp), "TERM": "xterm-256color",
                "LANG": "C.UTF-8", "PS1": PROMPT, **NO_RAPL, **env}
        self.tmux("new-session", "-d", "-s", "k", "-x", str(width), "-y", str(height), "env",
                  "-i", *[f"{k}={v}" for k, v in full.items()], "bash", "--norc", "--noprofile",
                  "-i")
        self.tmux("pipe-pane", "-t", "k", "-o", f"cat >> {shlex.quote(str(self.raw))}")
        assert wait_for(lambda: PROMPT_SHOWN in self.screen()), self.screen()

    def tmux(self, *args):
        return subprocess.run([TMUX, "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=20).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "k")

    def flag(self, name):
        return self.tmux("display-message", "-p", "-t", "k", f"#{{{name}}}").strip()

    def keys(self, *keys):
        """tmux key names (q, Escape, Left, C-c, ...), each sent as the terminal would."""
        for k in keys:
            self.tmux("send-keys", "-t", "k", k)

    def type(self, text):
        self.tmux("send-keys", "-t", "k", "-l", "--", text)
        self.tmux("send-keys", "-t", "k", "Enter")

    def bytes(self):
        return self.raw.read_bytes() if self.raw.exists() else b""

    def wait(self, *parts, without=None, timeout=20.0):
        """The screen once it shows every part (and not `without`); fails the test otherwise."""
        def ok():
            s = self.screen()
            return s if all(p in s for p in parts) and (without is None or without not in s) \
                else None
        s = wait_for(ok, timeout)
        assert s, f"waited for {parts} (without {without!r}):\n{self.screen()}"
        return s

    def frames(self):
        """How many frames joules has drawn so far (each starts at the home position)."""
        return self.bytes().count(b"\x1b[H")

    def monitor(self, *args):
        self.type(" ".join([shlex.quote(JOULES), "monitor", *map(shlex.quote, args)])
                  + f"; echo joules-exit=$?; stty -a > {self.tmp}/stty")

    def exit_status(self):
        found = wait_for(lambda: re.search(r"joules-exit=(\d+)", self.screen()))
        assert found, self.screen()
        return int(found.group(1))

    def restored(self):
        stty = wait_for(lambda: (self.tmp / "stty").exists() and (self.tmp / "stty").read_text())
        return (self.flag("alternate_on") == "0" and self.flag("cursor_flag") == "1"
                and re.search(r"(^|\s)icanon\b", stty) and re.search(r"(^|\s)echo\b", stty))

    def close(self):
        self.tmux("kill-server")


@pytest.fixture
def shell(tmp):
    made = []

    def make(env=None, **kw):
        sub = tmp / f"s{len(made)}"
        sub.mkdir()
        s = Shell(sub, env or {}, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def order(screen, *names):
    """Where each name first shows on the screen."""
    return [screen.find(n) for n in names]


def test_every_key_on_the_simulated_backend(shell):
    sh = shell(width=120, height=40)
    sh.monitor("--backend", "sim", "--sim-gpus", "3", "--interval", "200")
    sh.wait("GPU 2", "q quit", "? help", "v view: overview", "s sort: index↑")
    assert sh.flag("alternate_on") == "1"
    # ? opens the help, listing every key; any key closes it.
    sh.keys("?")
    text = sh.wait("joules monitor: keys", "Esc, 0")
    for k in ("q, Ctrl-C", "Ctrl-Z", "next view", "sort by index, power", "reverse the sort",
              "pause the screen", "previous or next GPU", "1 - 9", "Esc, 0"):
        assert k in text, (k, text)
    sh.keys("x")
    sh.wait("GPU 2", without="joules monitor: keys")
    # s cycles the sort, r reverses it; past the 3 s start-up the simulated GPUs draw 1 %, 0.5 %
    # and 0 % less than GPU 0 (docs/sim-backend.md): power sorts them 0, 1, 2 and reversed 2, 1, 0.
    sh.keys("s")
    sh.wait("s sort: power↓")
    sh.keys("r")
    text = sh.wait("s sort: power↑")
    text = wait_for(lambda: (lambda s: s if order(s, "GPU 2 ", "GPU 1 ", "GPU 0 ")
                             == sorted(order(s, "GPU 2 ", "GPU 1 ", "GPU 0 ")) else None)(
        sh.screen()), timeout=20)
    assert text, sh.screen()
    for name in ("utilisation", "memory", "temperature", "index"):
        sh.keys("s")
        sh.wait(f"s sort: {name}")
    sh.keys("r")
    sh.wait("s sort: index↑")
    # p (and space) pause: "paused" shows, the screen holds while frames go on being drawn, and
    # the numbers move again after p.
    sh.keys("p")
    held = sh.wait("paused", "p resume")
    drawn = sh.frames()
    assert wait_for(lambda: sh.frames() >= drawn + 3), "no frame drawn while paused"
    assert sh.screen() == held
    sh.keys("Space")
    sh.wait("p pause", without="paused")
    node = re.search(r"node .*", sh.screen()).group(0)
    assert wait_for(lambda: re.search(r"node .*", sh.screen()).group(0) != node)
    # 1-9 and the arrows show one GPU in detail; Esc and 0 go back to all.
    sh.keys("2")
    text = sh.wait("GPU 1  NVIDIA H100 80GB HBM3", "power   now", "└-5m", "view: gpu")
    assert "GPU 0 " not in text and "GPU 2 " not in text, text
    sh.keys("Right")
    sh.wait("GPU 2  NVIDIA H100 80GB HBM3", "power   now")
    sh.keys("Right")
    sh.wait("GPU 0  NVIDIA H100 80GB HBM3", "power   now")
    sh.keys("Left")
    sh.wait("GPU 2  NVIDIA H100 80GB HBM3", "power   now")
    sh.keys("Escape")
    sh.wait("GPU 0 ", "GPU 1 ", "GPU 2 ", "view: overview", without="power   now")
    sh.keys("3")
    sh.wait("GPU 2  NVIDIA H100 80GB HBM3", "power   now")
    sh.keys("0")
    sh.wait("view: overview", without="power   now")
    # v: the processes (the simulated backend has none), the graphs, the overview again.
    sh.keys("v")
    sh.wait("view: processes", "processes: the GPUs do not report them")
    sh.keys("v")
    text = sh.wait("view: graphs", "└-5m", "GPU 2  power   now")
    sh.keys("v")
    sh.wait("view: overview", "since start")
    # q quits with status 0 and gives the terminal back.
    sh.keys("q")
    assert sh.exit_status() == 0
    assert sh.restored(), (sh.tmp / "stty").read_text()


def test_ctrl_c_quits_and_ctrl_z_suspends_until_fg(shell):
    sh = shell(width=100, height=30)
    sh.monitor("--backend", "sim", "--sim-gpus", "2", "--interval", "200")
    sh.wait("GPU 1", "q quit")
    sh.keys("C-c")
    assert sh.exit_status() == 0
    assert sh.restored()
    sh.type(f"clear; {shlex.quote(JOULES)} monitor --backend sim --sim-gpus 2 --interval 200")
    sh.wait("GPU 1", "q quit")
    sh.keys("C-z")
    sh.wait("Stopped", PROMPT_SHOWN)
    assert sh.flag("alternate_on") == "0" and sh.flag("cursor_flag") == "1"
    sh.type("fg")
    sh.wait("GPU 1", "q quit")
    assert sh.flag("alternate_on") == "1"
    sh.keys("q")
    sh.type("echo joules-exit=$?")
    assert sh.exit_status() == 0


def test_a_detailed_view_fits_after_a_resize(shell):
    sh = shell(width=120, height=40)
    sh.monitor("--backend", "sim", "--sim-gpus", "2", "--interval", "200")
    sh.wait("GPU 1", "q quit")
    sh.keys("1")
    sh.wait("power   now", "utilisation   now")
    sh.tmux("resize-window", "-t", "k", "-x", "80", "-y", "24")
    text = wait_for(lambda: (lambda s: s if len(s.splitlines()) <= 24 and "power   now" in s
                             and "q quit" in s and sh.flag("window_width") == "80" else None)(
        sh.screen()))
    assert text, sh.screen()
    assert max(len(l) for l in text.splitlines()) <= 80
    sh.keys("q")
    assert sh.exit_status() == 0


def test_no_color_and_a_dumb_terminal(shell):
    sh = shell(env={"NO_COLOR": "1"}, width=100, height=30)
    sh.monitor("--backend", "sim", "--sim-gpus", "2", "--interval", "200")
    sh.wait("GPU 1", "q quit")
    sh.keys("?")
    sh.wait("joules monitor: keys")
    sh.keys("q")
    assert sh.exit_status() == 0
    # Cursor movement and the alternate screen, but no colour at all: the only SGR is the reset
    # on the way out.
    raw = sh.bytes()
    assert b"\x1b[?1049h" in raw and b"\x1b[H" in raw
    assert not re.search(rb"\x1b\[[0-9;]*[1-9][0-9;]*m", raw), raw[:2000]
    # TERM=dumb moves no cursor: one plain line per device per interval, as on a pipe.
    dumb = shell(env={"TERM": "dumb"}, width=160, height=30)
    dumb.monitor("--backend", "sim", "--sim-gpus", "2", "--interval", "200")
    dumb.wait("# time", "pwr_w")
    assert wait_for(lambda: len(re.findall(r"^ +\S+Z +\S+ +1 ", dumb.screen(), re.M)) >= 2)
    dumb.keys("C-c")
    assert dumb.exit_status() == 128 + signal.SIGINT
    assert b"\x1b[?1049h" not in dumb.bytes() and b"\x1b[H" not in dumb.bytes()


def test_processes_with_their_share_of_each_gpus_energy(shell, tmp):
    """Two processes on GPU 0 at 60 % and 20 % SM utilisation share its 400 W as 75 % and 25 %;
    GPU 1's driver has no per-process utilisation (memory only, and why)."""
    kids = [subprocess.Popen(["sleep", "600"], start_new_session=True) for _ in range(3)]
    try:
        scn = {"devices": [
            {"latency_us": 20, "power": {"type": "constant", "watts": 400},
             "processes": [{"pid": kids[0].pid, "used_memory_bytes": 6 << 30, "sm_util_percent": 60},
                           {"pid": kids[1].pid, "used_memory_bytes": 2 << 30, "sm_util_percent": 20}]},
            {"latency_us": 20, "power": {"type": "constant", "watts": 150},
             "process_utilization": False,
             "processes": [{"pid": kids[2].pid, "used_memory_bytes": 3 << 30}]}]}
        env, _ = fake_gpus(scn)
        sh = shell(env=env, width=120, height=40)
        sh.monitor("--interval", "200")
        sh.wait("GPU 1", str(kids[2].pid))
        sh.keys("v")
        text = sh.wait("view: processes", "75%", "25%", "SHARE")
        rows = {int(l.split()[0]): l.split() for l in text.splitlines()
                if l.strip() and l.split()[0].isdigit()}
        a, b, c = (rows[k.pid] for k in kids)
        assert a[2:8] == ["0", "6.0", "GiB", "60", "75%", "300"], a
        assert b[2:8] == ["0", "2.0", "GiB", "20", "25%", "100"], b
        assert c[2:8] == ["1", "3.0", "GiB", "-", "-", "-"], c
        assert a[-2:] == ["sleep", "600"], a
        assert "GPU 1: the driver reports no per-process utilisation" in text
        # The energy each is given grows at its share of the GPU's power.
        sh.keys("s")
        text = sh.wait("sort: power")
        assert text.find(str(kids[0].pid)) < text.find(str(kids[1].pid)) < text.find(
            str(kids[2].pid)), text
        # One GPU in detail lists its own processes.
        sh.keys("1")
        text = sh.wait("power   now 400 W", "SHARE", str(kids[1].pid))
        assert str(kids[2].pid) not in text
        sh.keys("q")
        assert sh.exit_status() == 0
        # --json carries the SM utilisation of each process.
        r = joules("monitor", "--once", "--json", "--interval", "300", env={**env, **NO_RAPL})
        assert r.returncode == 0, r.stderr
        procs = {p["pid"]: p for d in json.loads(r.stdout)["devices"] for p in d["processes"]}
        assert procs[kids[0].pid]["sm_util_percent"] == 60
        assert procs[kids[2].pid]["sm_util_percent"] is None
    finally:
        for k in kids:
            os.killpg(k.pid, signal.SIGKILL)
            k.wait()


EVIL_ARGV0 = "\x1b]0;pwned\x07evil\x1b[2Jwiped\nline2"
EVIL_COMM = b"\x1b]0;pw\x07\x1b[2J\nz"  # 13 bytes: a comm holds 15


def zombie_named(comm):
    """A child that names itself `comm` (prctl PR_SET_NAME) and exits, left unreaped: its
    command line is empty, so monitor shows its comm."""
    code = ("import ctypes, sys; ctypes.CDLL(None).prctl(15, ctypes.c_char_p(%r), 0, 0, 0)"
            % comm)
    p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    assert pathlib.Path(f"/proc/{p.pid}/comm").read_bytes() == comm + b"\n"
    return p


def test_names_with_escape_sequences_never_reach_the_terminal(shell):
    named = subprocess.Popen(["bash", "-c", 'exec -a "$0" sleep 600', EVIL_ARGV0],
                             start_new_session=True)
    zombie = zombie_named(EVIL_COMM)
    try:
        assert wait_for(lambda: pathlib.Path(f"/proc/{named.pid}/cmdline").read_bytes()
                        .startswith(EVIL_ARGV0.encode()))
        scn = {"driver_version": "570.86.15\x1b]0;drv\x07",
               "devices": [{"name": "NVIDIA \x1b[31mH100\x1b]0;gpu\x07", "latency_us": 20,
                            "power": {"type": "constant", "watts": 300},
                            "processes": [
                                {"pid": named.pid, "used_memory_bytes": 1 << 30,
                                 "sm_util_percent": 50},
                                {"pid": zombie.pid, "used_memory_bytes": 1 << 30,
                                 "sm_util_percent": 50}]}]}
        env, _ = fake_gpus(scn)
        sh = shell(env=env, width=200, height=40)
        title = sh.flag("pane_title")
        sh.monitor("--interval", "200")
        # Every view that shows the names: the overview, the processes, the GPU in detail.
        sh.wait(str(zombie.pid), "evil")
        sh.keys("v")
        sh.wait("view: processes", str(zombie.pid), "50%")
        sh.keys("1")
        sh.wait("power   now", str(zombie.pid))
        sh.keys("q")
        assert sh.exit_status() == 0
        raw = sh.bytes()
        # Shown escaped: on the screen and in the bytes written.
        for shown in (rb"\x1b]0;pwned\x07evil\x1b[2Jwiped line2",  # cmdline: newline to space
                      rb"[\x1b]0;pw\x07\x1b[2J\nz]",               # comm of a zombie
                      rb"NVIDIA \x1b[31mH100\x1b]0;gpu\x07",
                      rb"570.86.15\x1b]0;drv\x07"):
            assert shown in raw, shown
        # Never as they are: no OSC (joules writes none), no BEL, no clear-screen or colour from
        # a name, no raw newline inside one.
        assert b"\x1b]" not in raw and b"\x07" not in raw
        for acted in (b"\x1b[2Jwiped", b"\x1b[2J\nz", b"\x1b[31mH100", b"wiped\nline2"):
            assert acted not in raw, acted
        assert sh.flag("pane_title") == title
        # --json keeps the names exactly, as JSON escapes: nothing a terminal acts on.
        r = joules("monitor", "--once", "--json", "--interval", "300", env={**env, **NO_RAPL})
        assert r.returncode == 0, r.stderr
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout
        sample = json.loads(r.stdout)
        assert sample["devices"][0]["name"] == "NVIDIA \x1b[31mH100\x1b]0;gpu\x07"
        commands = {p["pid"]: p["command"] for p in sample["devices"][0]["processes"]}
        assert commands[named.pid] == EVIL_ARGV0.replace("\n", " ") + " 600"
        assert commands[zombie.pid] == "[" + EVIL_COMM.decode() + "]"
        # Plain lines name no process or GPU: nothing to escape there.
        r = joules("monitor", "--once", "--plain", "--interval", "300", env={**env, **NO_RAPL})
        assert r.returncode == 0 and "\x1b" not in r.stdout, r
    finally:
        os.killpg(named.pid, signal.SIGKILL)
        named.wait()
        zombie.wait()
