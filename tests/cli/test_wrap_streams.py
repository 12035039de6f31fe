"""`joules wrap` and the command's two output streams: step lines on stderr, bytes passed through
unchanged, stdout and stderr kept in order on one terminal, joules' own lines only between the
command's lines, and the terminal's size passed on."""
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import tty

import pytest

from conftest import JOULES, read_jsonl

SIM = ["--backend", "sim", "--sim-profile", "0.5", "--sim-gpus", "2"]


def env_for_joules():
    env = dict(os.environ)
    for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID", "PYTHONUNBUFFERED"):
        env.pop(k, None)
    return env


def raw_pty(rows=24, cols=80):
    """A pseudo-terminal in raw mode (no \\n -> \\r\\n of its own), sized rows x cols."""
    master, slave = os.openpty()
    tty.setraw(slave)
    set_size(master, rows, cols)
    return master, slave


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def read_until_closed(master, proc, timeout=60.0, until=None):
    """Everything written to the terminal until every writer has closed it (or `until(data)`)."""
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            data += chunk
            if until is not None and until(data):
                return data
        elif proc.poll() is not None and not r:
            # Drain what is left, then stop.
            try:
                while select.select([master], [], [], 0.05)[0]:
                    chunk = os.read(master, 65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            break
    return data


def run_on_terminal(args, stdin=subprocess.DEVNULL, controlling=False, **kw):
    """Starts joules with stdout and stderr on one raw pseudo-terminal; returns (proc, master).
    With `controlling`, in a session of its own whose controlling terminal is that one (and with
    stdin=None, its stdin too: joules then hands the terminal to the command)."""
    master, slave = raw_pty()
    preexec = None
    if controlling:
        if stdin is None:
            stdin = slave

        def preexec():
            fcntl.ioctl(1, termios.TIOCSCTTY, 0)

    p = subprocess.Popen([JOULES, *map(str, args)], stdin=stdin, stdout=slave, stderr=slave,
                         env=env_for_joules(), start_new_session=True, preexec_fn=preexec, **kw)
    os.close(slave)
    return p, master


# ---------------------------------------------------------------------------------------------
# Step lines on stderr

def test_step_lines_on_stderr_are_steps(tmp):
    out = tmp / "run.jsonl"
    script = 'for i in 1 2 3 4 5; do echo "step $i/5 loss 1.5" >&2; sleep 0.05; done'
    r = subprocess.run([JOULES, "wrap", *SIM, "-q", "--output", out, "--", "sh", "-c", script],
                       capture_output=True, timeout=60, env=env_for_joules())
    assert r.returncode == 0, r.stderr
    assert r.stderr == b"".join(b"step %d/5 loss 1.5\n" % i for i in range(1, 6))
    assert r.stdout == b""
    steps = [x for x in read_jsonl(out) if x["type"] == "step"]
    assert [s["step"] for s in steps] == [2, 3, 4, 5]
    assert {s["stream"] for s in steps} == {"stderr"}
    assert all(s["metrics"]["loss"] == 1.5 for s in steps)


PY_STDERR_TRAINER = r"""
import logging, sys, time
logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("train")
print("loading the model")
for i in range(1, 7):
    time.sleep(0.05)
    log.info("step %d/6 | loss %.2f | lr 1.0e-04", i, 3.0 - 0.1 * i)
# A tqdm bar on stderr, as the Hugging Face Trainer draws it.
for i in range(1, 6):
    time.sleep(0.05)
    sys.stderr.write("\r%3d%%|#   | %d/5 [00:0%d<00:01,  9.99it/s]" % (20 * i, i, i))
    sys.stderr.flush()
sys.stderr.write("\n")
print("done")
"""


@pytest.mark.parametrize("mode", [[], ["--no-pty"]], ids=["pty", "no-pty"])
def test_python_logging_and_tqdm_on_stderr_are_steps(tmp, mode):
    out = tmp / "run.jsonl"
    r = subprocess.run([JOULES, "wrap", *SIM, "-q", *mode, "--output", out, "--", sys.executable,
                        "-c", PY_STDERR_TRAINER], capture_output=True, timeout=60,
                       env=env_for_joules())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"loading the model\ndone\n"
    assert r.stderr.count(b" - INFO - train - step ") == 6
    steps = [x for x in read_jsonl(out) if x["type"] == "step"]
    # One step sequence across both: 6 logged steps, then the bar's 5 (a restarted counter).
    assert len(steps) == 10, [s["step"] for s in steps]
    assert all(s["stream"] == "stderr" for s in steps)
    assert steps[0]["metrics"] == {"loss": 2.8, "lr": 1e-4}


def test_stderr_bytes_pass_through_unchanged(tmp):
    payload = (b"plain\n\x1b[31mred\x1b[0m\r\nbar 10%\rbar 100%\n"
               b"invalid utf-8 \xff\xfe\n" + bytes(range(256)) + b"no newline at the end")
    src = tmp / "payload.bin"
    src.write_bytes(payload)
    for mode in ([], ["--no-pty"]):
        r = subprocess.run([JOULES, "wrap", *SIM, "-q", *mode, "--", "sh", "-c",
                            f"echo out; cat {src} >&2"], capture_output=True, timeout=30,
                           env=env_for_joules())
        assert r.returncode == 0
        assert r.stderr == payload, mode
        assert r.stdout == b"out\n"
    # stderr on a terminal (stdout a pipe): the command's stderr is a pseudo-terminal of its own,
    # and still nothing is changed.
    master, slave = raw_pty()
    p = subprocess.Popen([JOULES, "wrap", *SIM, "-q", "--", "sh", "-c",
                          f"cat {src} >&2; echo out"], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL, env=env_for_joules())
    os.close(slave)
    got = read_until_closed(master, p)
    assert p.wait(timeout=30) == 0
    assert p.stdout.read() == b"out\n"
    assert got == payload
    os.close(master)


INTERLEAVED = r"""
import os
for i in range(300):
    os.write(1, b"out %d\n" % i)
    os.write(2, b"err %d\n" % i)
"""


def test_stdout_and_stderr_on_one_terminal_keep_their_order():
    expected = b"".join(b"out %d\nerr %d\n" % (i, i) for i in range(300))
    p, master = run_on_terminal(["wrap", *SIM, "-q", "--", sys.executable, "-c", INTERLEAVED])
    got = read_until_closed(master, p)
    assert p.wait(timeout=30) == 0
    os.close(master)
    assert got == expected


def test_stdout_and_stderr_into_one_pipe_keep_their_order():
    # `joules wrap ... 2>&1 | tee log`
    for mode in ([], ["--no-pty"]):
        r = subprocess.run([JOULES, "wrap", *SIM, "-q", *mode, "--", sys.executable, "-c",
                            INTERLEAVED], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60, env=env_for_joules())
        assert r.returncode == 0
        assert r.stdout == b"".join(b"out %d\nerr %d\n" % (i, i) for i in range(300)), mode


WHAT_AM_I = r"""
import os, sys
sys.stderr.write("tty %d %d\n" % (os.isatty(1), os.isatty(2)))
"""


def test_which_streams_are_terminals():
    def ttys(mode, stderr_terminal):
        if stderr_terminal:
            master, slave = raw_pty()
            p = subprocess.Popen([JOULES, "wrap", *SIM, "-q", *mode, "--", sys.executable, "-c",
                                  WHAT_AM_I], stdout=subprocess.PIPE, stderr=slave,
                                 stdin=subprocess.DEVNULL, env=env_for_joules())
            os.close(slave)
            got = read_until_closed(master, p)
            p.wait(timeout=30)
            os.close(master)
            return got
        return subprocess.run([JOULES, "wrap", *SIM, "-q", *mode, "--", sys.executable, "-c",
                               WHAT_AM_I], capture_output=True, timeout=30,
                              env=env_for_joules()).stderr

    assert ttys([], False) == b"tty 1 0\n"  # stdout line-buffered; stderr stays a pipe
    assert ttys([], True) == b"tty 1 1\n"
    assert ttys(["--no-pty"], False) == b"tty 0 0\n"
    assert ttys(["--no-pty"], True) == b"tty 0 0\n"


# ---------------------------------------------------------------------------------------------
# Joules' own lines go between the command's lines

BAR_CHILD = ('sleep 0.05; echo "step 1/3 loss 1"; sleep 0.3; echo "step 2/3 loss 1"; '
             'printf "bar 50%%"; sleep 0.6; echo " done"; echo "step 3/3 loss 1"; sleep 0.3')


def command_and_records(text):
    """Splits a shared stream into the command's lines and joules' JSON records."""
    lines, records = [], []
    for line in text.splitlines():
        if line.startswith('{"type":'):
            records.append(json.loads(line))
        else:
            lines.append(line)
    return lines, records


def test_records_on_stdout_wait_for_the_commands_line_to_end():
    r = subprocess.run([JOULES, "wrap", *SIM, "-q", "--no-inline", "-o", "-", "--", "sh", "-c",
                        BAR_CHILD], capture_output=True, text=True, timeout=60,
                       env=env_for_joules())
    assert r.returncode == 0, r.stderr
    lines, records = command_and_records(r.stdout)
    assert lines == ["step 1/3 loss 1", "step 2/3 loss 1", "bar 50% done", "step 3/3 loss 1"]
    types = [x["type"] for x in records]
    assert types[0] == "session_start" and types[-1] == "session_end"
    assert types.count("step") == 2
    # Every record is a whole line: nothing of the command's around it.
    assert all(line.startswith('{"type":') and line.endswith("}")
               for line in r.stdout.splitlines() if "{" in line)


def test_json_records_on_stderr_wait_for_the_commands_line_to_end():
    child = BAR_CHILD.replace('"step', '"step').replace("printf", "printf >&2").replace(
        'echo " done"', 'echo " done" >&2')
    r = subprocess.run([JOULES, "wrap", *SIM, "--no-inline", "--json", "--", "sh", "-c", child],
                       capture_output=True, text=True, timeout=60, env=env_for_joules())
    assert r.returncode == 0, r.stderr
    lines, records = command_and_records(r.stderr)
    assert "bar 50% done" in lines
    assert records[-1]["type"] == "session_end"


def test_a_line_that_never_ends_holds_records_only_for_a_while():
    # A bar redrawn with \r for 3 s: after the bound, a newline of joules' own, then the records;
    # the command's bytes are all there, in order.
    child = ('echo "step 1/3 loss 1"; sleep 0.2; echo "step 2/3 loss 1"; '
             'for i in 1 2 3 4 5 6; do printf "\\rbar %d" $i; sleep 0.5; done; echo; '
             'echo "step 3/3 loss 1"')
    r = subprocess.run([JOULES, "wrap", *SIM, "-q", "--no-inline", "-o", "-", "--", "sh", "-c",
                        child], capture_output=True, timeout=60, env=env_for_joules())
    assert r.returncode == 0, r.stderr
    out = r.stdout
    step2 = out.index(b'{"type":"step"')
    assert b"\rbar 1" in out[:step2] and b"\rbar 6" in out[step2:]  # out while the bar was drawn
    assert out[step2 - 1:step2] == b"\n"  # ... on a line of its own
    command = b"".join(line for line in out.split(b"\n") if not line.startswith(b'{"type":'))
    assert command == (b"step 1/3 loss 1step 2/3 loss 1" +
                       b"".join(b"\rbar %d" % i for i in range(1, 7)) + b"step 3/3 loss 1")
    assert out.split(b"\n")[-2].startswith(b'{"type":"session_end"')


def test_notices_do_not_land_inside_the_commands_line():
    # The prediction at 90 % (step 18) is due while the command is in the middle of a line.
    child = ("for i in $(seq 1 18); do sleep 0.03; echo \"step $i/20 loss 1\"; done; "
             "printf 'half a line'; sleep 0.6; echo ' and the rest'")
    p, master = run_on_terminal(["wrap", *SIM, "--no-inline", "--predict-after", "5",
                                 "--warmup-steps", "1", "--", "sh", "-c", child])
    got = read_until_closed(master, p).decode()
    assert p.wait(timeout=30) == 0
    os.close(master)
    assert "half a line and the rest\n" in got
    assert "joules: prediction at step 18/20 (90%)" in got
    for line in got.split("\n"):
        assert "joules:" not in line or line.startswith("joules:"), line


# ---------------------------------------------------------------------------------------------
# The terminal's size

SIZE_CHILD = r"""
import os, signal, time
changed = [True]
signal.signal(signal.SIGWINCH, lambda *_: changed.__setitem__(0, True))
end = time.monotonic() + 4
while time.monotonic() < end:
    if changed[0]:
        changed[0] = False
        size = os.get_terminal_size(1)
        os.write(1, b"size %d %d\n" % (size.columns, size.lines))
    time.sleep(0.01)
"""


@pytest.mark.parametrize("owns_terminal", [False, True], ids=["joules-foreground",
                                                              "command-owns-terminal"])
def test_window_size_changes_reach_the_command(owns_terminal):
    p, master = run_on_terminal(["wrap", *SIM, "-q", "--", sys.executable, "-c", SIZE_CHILD],
                                controlling=True,
                                stdin=None if owns_terminal else subprocess.DEVNULL)
    # Without the terminal on its stdin, joules keeps it and the kernel signals joules; with it,
    # the command gets the terminal and the kernel's SIGWINCH, and joules must notice the size
    # change itself to resize the command's pseudo-terminal.
    first = read_until_closed(master, p, timeout=20, until=lambda d: b"size 80 24\n" in d)
    assert b"size 80 24\n" in first, first
    set_size(master, 33, 101)
    rest = read_until_closed(master, p, timeout=20, until=lambda d: b"size 101 33\n" in d)
    assert b"size 101 33\n" in rest, rest
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    os.close(master)
