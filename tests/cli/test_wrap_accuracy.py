"""Per-step energy of `joules wrap` held to the fake NVML's exact truth (issue figures): a Python
child and a C child with default stdio buffering, a continuous counter and one that advances
every 100 ms as on H100, power piecewise constant on 20 ms segments between 100 and 700 W,
steps of uneven length (+-40 %).  Runs alone (RUN_SERIAL): it measures timing."""
import pytest

from conftest import FAKE_NVML_DIR, JOULES, SANITIZED, TRAINER
import wrap_accuracy

# Sanitizer builds run several times slower: the child's timing, not joules' arithmetic, is
# what suffers, so their bounds are looser.
SLACK = 3.0 if SANITIZED else 1.0


def accuracy(child, update_ms, step_ms, steps):
    return wrap_accuracy.measure(JOULES, FAKE_NVML_DIR, child, gpus=2, update_ms=update_ms,
                                 step_ms=step_ms, steps=steps, trainer=TRAINER)


@pytest.mark.parametrize("child", ["python", "c"])
def test_per_step_energy_with_a_continuous_counter(child):
    r = accuracy(child, update_ms=0, step_ms=100, steps=40)
    assert len(r["errors"]) == 39
    assert r["session_end"]["wrap"]["conserved"] is True
    assert r["median"] <= 0.005 * SLACK, r["errors"]
    assert r["p95"] <= 0.02 * SLACK, r["errors"]


@pytest.mark.parametrize("child", ["python", "c"])
def test_per_step_energy_with_a_counter_that_advances_every_100ms(child):
    short = accuracy(child, update_ms=100, step_ms=100, steps=40)
    assert short["median"] <= 0.05 * SLACK, short["errors"]
    assert short["p95"] <= 0.15 * SLACK, short["errors"]
    long = accuracy(child, update_ms=100, step_ms=1000, steps=8)
    assert long["median"] <= 0.01 * SLACK, long["errors"]
    assert long["p95"] <= 0.03 * SLACK, long["errors"]
