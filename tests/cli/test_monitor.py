"""`joules monitor` as a person sees it: in a tmux pane against the fake NVML (what is on the
screen, `q`, signals, resizing, the terminal given back), and as a program sees it (plain lines
and JSONL on a pipe)."""
import json
import os
import pathlib
import pwd
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import time
from datetime import datetime

import pytest

from conftest import JOULES, ROOT, fake_gpus, joules, words

TMUX = shutil.which("tmux")
NO_RAPL = {"JOULES_POWERCAP_ROOT": "/nonexistent-powercap"}
ME = pwd.getpwuid(os.getuid()).pw_name


def scenario(extra_gpus=0):
    """GPU 0: 350 W of 700 W, busy, power-capped, running this test's process.  GPU 1: an A100
    with a row remap pending and thermal slowdown."""
    gpus = [
        {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
         "power": {"type": "constant", "watts": 350},
         "health": {"gpu_util_percent": 97, "sm_util_percent": 88, "tensor_util_percent": 61,
                    "temperature_c": 61, "clocks_event_reasons": 0x4,
                    "memory_used_bytes": 8 << 30},
         "processes": [{"pid": os.getpid(), "used_memory_bytes": 2 << 30}]},
        {"name": "NVIDIA A100-SXM4-80GB", "architecture": "ampere", "latency_us": 20,
         "power": {"type": "constant", "watts": 120},
         "health": {"remap_pending": True, "clocks_event_reasons": 0x20}},
    ]
    for _ in range(extra_gpus):
        gpus.append({"latency_us": 20, "power": {"type": "constant", "watts": 200}})
    return {"devices": gpus}


def wait_for(predicate, timeout=20.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


class Pane:
    """joules in a detached tmux session of its own tmux server; after joules exits, the pane's
    shell records the exit status and `stty -a`, then waits to be looked at."""

    def __init__(self, tmp, args, scn, width=120, height=45, variant="full"):
        self.socket = f"joules-test-{os.getpid()}-{id(self)}"
        self.tmp = tmp
        env, _ = fake_gpus(scn, variant)
        env.update(NO_RAPL)
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        script = tmp / "pane.sh"
        script.write_text(
            exports
            + f"{shlex.quote(JOULES)} monitor {' '.join(map(shlex.quote, args))} 2>{tmp}/stderr\n"
            + "status=$?\n"
            + f"stty -a > {tmp}/stty\n"  # before `exit` appears: the test reads both then
            + f"echo $status > {tmp}/exit.tmp && mv {tmp}/exit.tmp {tmp}/exit\n"
            + "sleep 600\n")
        self.tmux("new-session", "-d", "-s", "m", "-x", str(width), "-y", str(height),
                  f"sh {script}")

    def tmux(self, *args):
        return subprocess.run([TMUX, "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=20).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "m")

    def flag(self, name):
        return self.tmux("display-message", "-p", "-t", "m", f"#{{{name}}}").strip()

    def joules_pid(self):
        shell = int(self.flag("pane_pid"))
        kids = pathlib.Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        return int(kids[0]) if kids else None

    def exit_status(self, timeout=20.0):
        f = self.tmp / "exit"
        if not wait_for(f.exists, timeout):
            return None
        return int(f.read_text())

    def close(self):
        self.tmux("kill-server")


@pytest.fixture
def pane_factory(tmp):
    if TMUX is None:
        pytest.skip("tmux is not installed (scripts/install-deps test installs it)")
    panes = []

    def make(*args, **kw):
        sub = tmp / f"p{len(panes)}"
        sub.mkdir()
        p = Pane(sub, args, **kw)
        panes.append(p)
        return p

    yield make
    for p in panes:
        p.close()


def screen_with(pane, *parts, without=None):
    """The pane's screen when it shows every part (and not `without`), else None."""
    s = pane.screen()
    if all(x in s for x in parts) and (without is None or without not in s):
        return s
    return None


def energy_j(text):
    """Energy of GPU 0's block, in joules."""
    m = re.search(r"energy ([\d.]+) (J|kJ|MJ) since start", text)
    assert m, text
    return float(m.group(1)) * {"J": 1, "kJ": 1e3, "MJ": 1e6}[m.group(2)]


def block(text, gpu):
    """The lines of one GPU's block on the full screen."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"GPU {gpu} "))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("GPU ")
                or not lines[i].strip()), len(lines))
    return "\n".join(lines[start:end])


def restored(pane):
    stty = (pane.tmp / "stty").read_text()
    return (pane.flag("alternate_on") == "0" and pane.flag("cursor_flag") == "1"
            and re.search(r"(^|\s)icanon\b", stty) and re.search(r"(^|\s)echo\b", stty)
            and re.search(r"(^|\s)isig\b", stty))


def test_the_screen_shows_values_bars_throttle_health_and_processes(pane_factory):
    p = pane_factory("--interval", "200", scn=scenario())
    text = wait_for(lambda: screen_with(p, "row remap pending", "sm 88%", str(os.getpid())))
    assert text, p.screen() + (p.tmp / "stderr").read_text()
    assert p.flag("alternate_on") == "1" and p.flag("cursor_flag") == "0"
    g0, g1 = block(text, 0), block(text, 1)
    assert "NVIDIA H100 80GB HBM3" in g0 and "NVIDIA A100-SXM4-80GB" in g1
    power = next(l for l in g0.splitlines() if "350 W / 700 W" in l)
    assert power.count("█") == 20 and power.count("░") == 20, power  # half of a 40-cell bar
    assert "(counter)" in power
    for part in ("gpu 97%", "sm 88%", "tensor 61%", "temp 61°C", "1980/1980 MHz",
                 "pcie gen5 x16", "10.0 GiB / 79.6 GiB",
                 "throttle power cap", "health   ok"):
        assert part in g0, (part, g0)
    assert "120 W / 700 W" in g1
    assert "throttle sw thermal" in g1
    assert "row remap pending" in g1 and "thermal slowdown" in g1
    assert "node  470 W now" in text
    row = next(l for l in text.splitlines() if f" {os.getpid()} " in l)
    assert row.split()[0] == "0" and ME[:10] in row and "2.0 GiB" in row
    assert "python" in row or "pytest" in row
    # Energy since start keeps counting at 350 W.
    e0 = energy_j(block(p.screen(), 0))
    time.sleep(1.0)
    e1 = energy_j(block(p.screen(), 0))
    assert 350 * 0.6 < e1 - e0 < 350 * 1.6, (e0, e1)
    p.tmux("send-keys", "-t", "m", "q")
    assert p.exit_status() == 0
    assert restored(p), (p.tmp / "stty").read_text()
    assert (p.tmp / "stderr").read_text() == ""


def test_signals_end_the_view_and_give_the_terminal_back(pane_factory):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        p = pane_factory("--interval", "100", scn=scenario())
        assert wait_for(lambda: "GPU 1" in p.screen()), p.screen()
        assert p.flag("alternate_on") == "1"
        os.kill(p.joules_pid(), sig)
        assert p.exit_status() == 128 + sig
        assert restored(p), (sig, (p.tmp / "stty").read_text())


def test_ctrl_c_typed_in_the_view_quits_cleanly(pane_factory):
    p = pane_factory("--interval", "100", scn=scenario())
    assert wait_for(lambda: "GPU 1" in p.screen())
    p.tmux("send-keys", "-t", "m", "C-c")
    assert p.exit_status() == 0
    assert restored(p)


def test_resizing_redraws_to_fit(pane_factory):
    p = pane_factory("--interval", "100", scn=scenario(extra_gpus=2), width=120, height=45)
    assert wait_for(lambda: "since start" in p.screen() and "GPU 3" in p.screen()), p.screen()
    p.tmux("resize-window", "-t", "m", "-x", "80", "-y", "16")
    # Four GPUs in 16 lines: shorter blocks, every line within 80 columns.
    small = wait_for(lambda: screen_with(p, "GPU 3", without="since start"))
    assert small, p.screen()
    assert max(len(l) for l in small.splitlines()) <= 80
    assert len(small.splitlines()) <= 16
    p.tmux("resize-window", "-t", "m", "-x", "120", "-y", "45")
    assert wait_for(lambda: "since start" in p.screen())
    p.tmux("send-keys", "-t", "m", "q")
    assert p.exit_status() == 0


def test_once_on_a_terminal_prints_one_screen(pane_factory):
    p = pane_factory("--once", "--interval", "200", scn=scenario())
    assert p.exit_status() == 0
    text = p.screen()
    assert "350 W / 700 W" in text and "row remap pending" in text
    assert p.flag("alternate_on") == "0"


def stream(args, scn, seconds, sig=signal.SIGINT, variant="full", env=None):
    e, _ = fake_gpus(scn, variant)
    e.update(NO_RAPL)
    e.update(env or {})
    full = dict(os.environ)
    full.pop("CUDA_VISIBLE_DEVICES", None)
    full.update(e)
    proc = subprocess.Popen([JOULES, "monitor", *args], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def stamp(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_plain_lines_when_piped_on_a_fixed_schedule():
    interval = 0.1
    rc, out, err = stream(["--interval", "100"], scenario(), 3.5)
    assert rc == 128 + signal.SIGINT, err
    lines = out.splitlines()
    assert lines[0].startswith("# ") and "pwr_w" in lines[0] and "throttle" in lines[0]
    assert lines[0].split()[1:4] == ["time", "age_s", "dev"]
    rows = [l.split() for l in lines[1:]]
    assert not [l for l in lines[1:] if l.startswith("#")], out  # nothing stale
    dev0 = [r for r in rows if r[2] == "0"]
    dev1 = [r for r in rows if r[2] == "1"]
    assert len(dev0) == len(dev1) >= 20, out
    assert all("\x1b" not in l for l in lines)
    r = dev0[-1]
    assert r[3] == "350.0" and r[4] == "700" and r[6] == "97" and r[7] == "88", r
    assert 0 <= float(r[1]) < 0.5, r  # the readings' age
    assert r[-2] == "power_cap" and r[-1] == "ok", r
    assert float(dev0[-1][5]) > float(dev0[0][5]) > 0  # energy since start grows
    assert dev1[-1][-2] == "sw_thermal" and "remap_pending" in dev1[-1][-1]
    # No drift: the lines keep to a grid of `interval`; a sleep after the work would make each
    # line later than the one before by the time the work took.
    t = [stamp(r[0]) for r in dev0]
    slots = [round((x - t[0]) / interval) for x in t]
    assert slots == sorted(set(slots)), slots
    offsets = [x - t[0] - k * interval for x, k in zip(t, slots)]
    third = len(offsets) // 3
    early, late = statistics.median(offsets[:third]), statistics.median(offsets[-third:])
    assert abs(late - early) < 0.015, offsets


def test_json_samples(tmp):
    calls = tmp / "calls.jsonl"
    rc, out, err = stream(["--json", "--interval", "200"], scenario(), 1.6, sig=signal.SIGTERM,
                          env={"FAKE_NVML_CALL_LOG": str(calls)})
    assert rc == 128 + signal.SIGTERM, err
    # Only the sampler thread ever called NVML, health readings included.
    log = json.loads(calls.read_text().splitlines()[-1])
    assert log["device_call_threads"] == 1 and log["calls"]["nvmlGpmMetricsGet"] >= 2
    samples = [json.loads(l) for l in out.splitlines()]
    assert len(samples) >= 5
    last = samples[-1]
    assert last["type"] == "monitor_sample" and last["schema_version"] == 1
    d0, d1 = last["devices"]
    assert d0["kind"] == "gpu" and d0["index"] == 0 and d0["method"] == "counter"
    assert d0["power_w"] == 350 and d0["power_limit_w"] == 700
    assert d0["clock_events"] == ["power_cap"] and d0["sm_activity_percent"] == 88
    assert d0["tensor_activity_percent"] == 61 and d0["gpu_util_percent"] == 97
    assert d0["processes"] == [{"pid": os.getpid(), "user": ME,
                                "command": d0["processes"][0]["command"],
                                "used_memory_bytes": 2 << 30, "graphics": False,
                                "sm_util_percent": 0}]  # listed, and ran no kernel
    assert d0["findings"] == []
    assert {f["code"] for f in d1["findings"]} == {"remap_pending", "sw_thermal_slowdown"}
    assert last["node"]["power_w"] == 470
    energies = [s["devices"][0]["energy_j"] for s in samples]
    assert energies == sorted(energies) and energies[-1] > energies[0]
    assert abs(last["node"]["energy_j"] - sum(d["energy_j"] for d in last["devices"])) < 1e-6


def test_once_plain_gpus_and_an_old_driver():
    e, _ = fake_gpus(scenario())
    r = joules("monitor", "--once", "--plain", "--gpus", "1", "--interval", "100",
               env={**e, **NO_RAPL})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("#") and lines[1].split()[2] == "1"
    # R390: no field values (no memory temperature), no counter (energy from polled power).
    e, _ = fake_gpus({"devices": [{"latency_us": 20, "power": {"type": "constant", "watts": 200}}]},
                     "r390")
    r = joules("monitor", "--once", "--plain", "--interval", "300", env={**e, **NO_RAPL})
    assert r.returncode == 0, r.stderr
    row = r.stdout.splitlines()[1].split()
    assert row[3] == "200.0" and row[10] == "-" and float(row[5]) > 0, row


def test_cpu_and_dram_rows_come_from_rapl(tmp):
    root = tmp / "powercap"
    shutil.copytree(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram", root)
    e, _ = fake_gpus(scenario())
    r = joules("monitor", "--once", "--json", "--interval", "100",
               env={**e, "JOULES_POWERCAP_ROOT": str(root)})
    assert r.returncode == 0, r.stderr
    kinds = [d["kind"] for d in json.loads(r.stdout)["devices"]]
    assert kinds[:2] == ["gpu", "gpu"] and "cpu" in kinds and "dram" in kinds


def test_sim_backend_demo():
    r = joules("monitor", "--backend", "sim", "--sim-gpus", "2", "--once", "--json",
               "--interval", "150", env=NO_RAPL)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert [d["method"] for d in s["devices"]] == ["simulated", "simulated"]
    d = s["devices"][0]
    assert d["gpu_util_percent"] is not None and d["temperature_c"] is not None
    assert d["sm_activity_percent"] is not None and d["sm_clock_mhz"] is not None


def test_bad_options_and_help():
    for args, fragment in ((["--interval", "5"], "--interval '5'"),
                           (["--json", "--plain"], "--json and --plain"),
                           (["--sim-gpus", "2"], "--sim-gpus applies only with --backend sim"),
                           (["extra"], "takes no argument 'extra'")):
        r = joules("monitor", *args)
        assert r.returncode == 2 and fragment in r.stderr and len(r.stderr.splitlines()) == 1, r
        assert r.stdout == ""
    h = joules("monitor", "--help")
    assert h.returncode == 0
    for part in ("--interval MS", "(default: 500)", "--once", "--json", "--plain", "--gpus LIST",
                 "--backend NAME", "q (or Ctrl-C) quits", "Ctrl-Z suspends", "v the next view",
                 "s sorts by index", "p (or space) pauses", "Esc or 0 all again", "nvidia-smi dmon",
                 "named on stderr, with the fix"):
        assert part in words(h.stdout), part
    assert "summary" not in h.stdout


def sick_scenario():
    """GPU 0 healthy; GPU 1 with every problem at once (the flags monitor must show whole)."""
    return {"devices": [
        {"latency_us": 20, "power": {"type": "constant", "watts": 350},
         "processes": [{"pid": os.getpid(), "used_memory_bytes": 1 << 30}]},
        {"latency_us": 20, "power": {"type": "constant", "watts": 450},
         "limits": {"current_w": 500},
         "health": {"ecc_uncorrected": 3, "remap_failure": True, "remap_pending": True,
                    "clocks_event_reasons": 0x4 | 0x8 | 0x20 | 0x40 | 0x80, "pcie_width": 8,
                    "pcie_generation": 3, "gpu_util_percent": 90, "persistence_mode": False,
                    "temperature_c": 93}}]}


SICK_FLAGS = ["ECC uncorrectable 3", "row remap failed", "row remap pending", "HW thermal slowdown",
              "HW power brake", "thermal slowdown", "hot 93°C", "PCIe x8<x16", "PCIe gen3<gen5",
              "limit 500<700 W", "persistence off"]
SICK_REASONS = ["power cap", "hw slowdown", "hw thermal", "sw thermal", "power brake"]


@pytest.mark.parametrize("width,height", [(80, 24), (80, 45), (120, 45)])
def test_every_health_flag_is_readable_at_80_and_120_columns(pane_factory, width, height):
    p = pane_factory("--interval", "200", scn=sick_scenario(), width=width, height=height)
    text = wait_for(lambda: screen_with(p, "persistence off", "GPU 1"))
    assert text, p.screen()
    lines = text.splitlines()
    assert max(len(l) for l in lines) <= width
    for part in SICK_FLAGS + SICK_REASONS + ["pcie gen3 x8 (max gen5 x16)"]:
        assert any(part in l for l in lines), (part, text)
    p.tmux("send-keys", "-t", "m", "q")
    assert p.exit_status() == 0


def test_the_sparkline_has_no_gaps_at_long_intervals(pane_factory):
    # 1 s readings drawn in ~100 columns of 0.6 s each: every column after the first reading has
    # a glyph.
    p = pane_factory("--interval", "1000", scn=scenario(), width=120, height=45)
    text = wait_for(lambda: screen_with(p, "peak 350 W"), timeout=30)
    assert text, p.screen()
    time.sleep(6)
    line = next(l for l in p.screen().splitlines() if "peak 350 W" in l)
    spark = line.split("peak")[0][10:].rstrip()
    glyphs = spark.lstrip()
    assert len(glyphs) >= 8, line
    assert " " not in glyphs, line
    p.tmux("send-keys", "-t", "m", "q")
    assert p.exit_status() == 0


def hang_scenario(after_s=3.0, hang_us=8_000_000):
    """GPU 1's NVML calls take 8 s from `after_s` seconds after now (scenario time 10 s)."""
    scn = scenario()
    scn["devices"][1]["faults"] = [{"at_s": 10.0 + after_s, "kind": "latency",
                                    "latency_us": hang_us}]
    return scn


def test_a_hung_driver_is_marked_and_q_quits_at_once(pane_factory):
    p = pane_factory("--interval", "200", scn=hang_scenario())
    text = wait_for(lambda: screen_with(p, "the driver is not answering"), timeout=20)
    assert text, p.screen()
    assert re.search(r"readings \d+ s old \(from \d\d:\d\d:\d\d\)", text), text
    t0 = time.monotonic()
    p.tmux("send-keys", "-t", "m", "q")
    assert p.exit_status(timeout=10) == 0
    # Not the 8 s the stuck call takes: the sampler thread is left behind.
    assert time.monotonic() - t0 < 1.5
    assert restored(p), (p.tmp / "stty").read_text()


def test_sigint_ends_a_hung_monitor_at_once(pane_factory):
    p = pane_factory("--interval", "200", scn=hang_scenario())
    assert wait_for(lambda: screen_with(p, "the driver is not answering"), timeout=20), p.screen()
    t0 = time.monotonic()
    os.kill(p.joules_pid(), signal.SIGINT)
    assert p.exit_status(timeout=10) == 128 + signal.SIGINT
    assert time.monotonic() - t0 < 1.5
    assert restored(p)


def stream_until_stale(args, seconds_after_stale=1.5):
    """Runs monitor on a pipe until GPU 1 hangs; returns (seconds from SIGINT to exit, rc, out)."""
    e, _ = fake_gpus(hang_scenario(after_s=2.0))
    full = dict(os.environ)
    full.pop("CUDA_VISIBLE_DEVICES", None)
    full.update(e)
    full.update(NO_RAPL)
    proc = subprocess.Popen([JOULES, "monitor", "--interval", "200", *args], env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0 + 1.2 + seconds_after_stale)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return time.monotonic() - t0, proc.returncode, out, err


def test_stale_readings_are_marked_in_plain_lines():
    took, rc, out, err = stream_until_stale([])
    assert rc == 128 + signal.SIGINT, err
    assert took < 1.5, took
    lines = out.splitlines()
    notes = [l for l in lines[1:] if l.startswith("# readings ")]
    assert notes and all(l.endswith("the driver is not answering") for l in notes), out
    ages = [float(l.split()[1]) for l in lines[1:] if not l.startswith("#")]
    assert ages[0] < 0.5 and ages[-1] > 1.2, ages  # the age grows while the driver hangs


def test_stale_readings_are_marked_in_json():
    took, rc, out, err = stream_until_stale(["--json"])
    assert rc == 128 + signal.SIGINT, err
    assert took < 1.5, took
    samples = [json.loads(l) for l in out.splitlines()]
    assert not samples[0]["stale"] and samples[0]["readings_age_s"] < 0.5
    last = samples[-1]
    assert last["stale"] is True and last["readings_age_s"] > 1.2, last


def test_a_lost_gpu_is_reported_in_every_mode(pane_factory):
    scn = scenario()
    scn["devices"][1]["faults"] = [{"at_s": 11.5, "kind": "lost"}]
    rc, out, err = stream(["--json", "--interval", "200"], scn, 3.0)
    last = json.loads(out.splitlines()[-1])
    assert last["node"]["lost_gpus"] == [1], last["node"]
    d1 = last["devices"][1]
    assert d1["lost"] is True and d1["power_w"] is None
    assert [f["code"] for f in d1["findings"]] == ["gpu_lost"]
    assert last["node"]["power_w"] == 350  # the lost GPU's power is unknown, not counted
    rc, out, err = stream(["--interval", "200"], scn, 3.0)
    row = [l.split() for l in out.splitlines() if not l.startswith("#")][-1]
    assert row[2] == "1" and row[3] == "-" and row[-1] == "gpu_lost", row
    p = pane_factory("--interval", "200", scn=scn)
    text = wait_for(lambda: screen_with(p, "LOST", "1 lost"))
    assert text, p.screen()


def test_gpus_unreadable_from_the_start_are_lost_from_the_first_sample():
    # GPU 1 fell off the bus before monitor started (its handle is refused); GPU 2's handle
    # works but every reading of energy and power fails.  Both are shown, lost, from the first
    # sample on, as a GPU lost later is.
    scn = scenario(extra_gpus=1)
    scn["devices"][1]["faults"] = [{"at_s": 0, "kind": "lost"}]
    scn["devices"][2]["faults"] = [{"at_s": 0, "kind": "error", "code": "UNKNOWN"}]
    rc, out, err = stream(["--json", "--interval", "200"], scn, 1.5)
    samples = [json.loads(l) for l in out.splitlines()]
    for s in (samples[0], samples[-1]):
        assert [d["index"] for d in s["devices"]] == [0, 1, 2], s["devices"]
        assert s["node"]["lost_gpus"] == [1, 2], s["node"]
        for d in s["devices"][1:]:
            assert d["lost"] is True and d["power_w"] is None and d["energy_j"] is None, d
            assert [f["code"] for f in d["findings"]] == ["gpu_lost"], d
        assert s["node"]["power_w"] == 350
    rc, out, err = stream(["--interval", "200"], scn, 1.5)
    rows = [l.split() for l in out.splitlines() if not l.startswith("#")]
    first = rows[:3]
    assert [r[2] for r in first] == ["0", "1", "2"], first
    assert [r[-1] for r in first[1:]] == ["gpu_lost", "gpu_lost"], first


def test_default_power_limit_and_other_health_fields_in_json():
    scn = {"devices": [{"latency_us": 20, "power": {"type": "constant", "watts": 400.157},
                        "limits": {"default_w": 650, "current_w": 600, "min_w": 200, "max_w": 700},
                        "health": {"ecc_corrected_aggregate": 9, "ecc_uncorrected_aggregate": 2,
                                   "pcie_replay_counter": 4, "remapped_rows_corrected": 3}}]}
    e, _ = fake_gpus(scn)
    r = joules("monitor", "--once", "--json", "--interval", "200", env={**e, **NO_RAPL})
    assert r.returncode == 0, r.stderr
    assert '"power_w":400.157,' in r.stdout  # rounded to mW, never 400.15700000000004
    d = json.loads(r.stdout)["devices"][0]
    assert d["default_power_limit_w"] == 650 and d["power_limit_w"] == 600
    assert d["ecc_corrected_aggregate"] == 9 and d["ecc_uncorrected_aggregate"] == 2
    assert d["pcie_replays"] == 4 and d["remapped_rows_corrected"] == 3
    for key in ("retired_pages_single_bit", "retired_pages_double_bit", "remapped_rows_uncorrected",
                "memory_reserved_bytes", "slowdown_temperature_c"):
        assert key in d, key
    assert d["memory_reserved_bytes"] > 0 and d["slowdown_temperature_c"] > 0
    assert "power_limit_below_default" in [f["code"] for f in d["findings"]]
    energy = json.loads(r.stdout)["devices"][0]["energy_j"]
    assert round(energy, 3) == energy


def test_xids_video_engines_and_nvlink_in_json():
    # Scenario time 0 is 10 s before monitor starts: the XIDs come 1.5 s after it.
    scn = {"devices": [{"latency_us": 20, "power": {"type": "constant", "watts": 300},
                        "health": {"encoder_util_percent": 35, "decoder_util_percent": 5,
                                   "nvlink_links": 4, "nvlink_links_down": [3],
                                   "nvlink_replay_errors": 2, "nvlink_errors_link": 2},
                        "xids": [{"at_s": 11.5, "xid": 31, "count": 2},
                                 {"at_s": 11.6, "xid": 94}]},
                       {"latency_us": 20, "xid_events": False}]}
    rc, out, err = stream(["--json", "--interval", "200"], scn, 3.5, sig=signal.SIGTERM)
    assert rc == 128 + signal.SIGTERM, err
    samples = [json.loads(l) for l in out.splitlines()]
    first, last = samples[0]["devices"], samples[-1]["devices"]
    assert first[0]["xid_errors"] == {} and first[0]["last_xid"] is None  # watching, none yet
    d0, d1 = last
    assert d0["xid_errors"] == {"31": 2, "94": 1} and d0["last_xid"] == 94
    assert d1["xid_errors"] is None and d1["last_xid"] is None  # a board without events
    assert d0["encoder_util_percent"] == 35 and d0["decoder_util_percent"] == 5
    assert d0["nvlink_links"] == 4 and d0["nvlink_links_down"] == [3]
    assert d0["nvlink_replay_errors"] == 2 and d0["nvlink_crc_flit_errors"] == 0
    assert d0["nvlink_links_with_errors"] == [2]
    assert d1["nvlink_links"] is None and d1["nvlink_replay_errors"] is None
    assert d1["nvlink_links_with_errors"] is None
    codes = {(f["severity"], f["code"]) for f in d0["findings"]}
    assert {("critical", "xid_critical"), ("warning", "xid"), ("warning", "nvlink_down")} <= codes


def test_q_quits_is_not_offered_without_a_keyboard(tmp):
    # --once on a terminal reads no keys: its screen does not say "q quits".
    if TMUX is None:
        pytest.skip("tmux is not installed")
    p = Pane(tmp, ["--once", "--interval", "200"], scenario())
    try:
        assert p.exit_status() == 0
        text = p.screen()
        assert "joules monitor" in text and "q quits" not in text, text
    finally:
        p.close()
