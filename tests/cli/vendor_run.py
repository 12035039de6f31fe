"""`joules run --json` on one vendor's fake library, and its totals held to the fake's exact
truth: shared by test_run_amd.py, test_run_intel.py and test_run_gaudi.py."""
import json
import random

import pytest

from conftest import EDGE_SLACK, device_truth_j, joules


def run_records(env, epoch, *args, cmd=("sleep", "2"), env_extra=None):
    """Runs `cmd` under `joules run --json` in `env` (a fake's, made at `epoch`); returns the
    result, the records joules wrote on stderr, and the epoch."""
    if env_extra:
        env.update(env_extra)
    r = joules("run", "--json", *args, "--", *cmd, env=env)
    records = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    return r, records, epoch


def random_segments(seed, seconds=40.0, dt_s=0.02, high=600):
    """Power that changes every `dt_s` between 100 W and `high` W."""
    rng = random.Random(seed)
    return {"type": "segments", "start_s": 0.0, "dt_s": dt_s,
            "watts": [round(rng.uniform(100, high), 3) for _ in range(int(seconds / dt_s))]}


def assert_exact(scenario, records, epoch, rel=1e-3):
    """Each device's energy in the run's end record against the scenario's, within `rel` (the
    sanitizer trees' EDGE_SLACK times that)."""
    end = records[-1]
    for i, d in enumerate(end["devices"]):
        truth = device_truth_j(scenario["devices"][i], epoch, end["start_monotonic_s"],
                               end["end_monotonic_s"])
        assert d["energy_j"] == pytest.approx(truth, rel=rel * EDGE_SLACK), (i, d, truth)


def assert_kept_until_lost(lost, watts, interval_s=0.1):
    """A device lost mid-run (its record `lost`, at constant `watts`): the energy known up to the
    loss is kept and nothing after it is invented.  The last reading before the loss came at most
    an interval before it, and a loaded machine (a sanitizer tree beside builds) delays a tick by
    up to another."""
    assert watts * (lost["lost_at_s"] - 2 * interval_s) <= lost["energy_j"], lost
    assert lost["energy_j"] <= watts * (lost["lost_at_s"] + 0.02), lost
