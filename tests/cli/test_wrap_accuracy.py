"""Per-step energy of `joules wrap` held to the fakes' exact truth (issue figures): a Python
child and a C child with default stdio buffering, a continuous counter and one that advances
every 100 ms as on H100, power piecewise constant on 20 ms segments between 100 and 700 W,
steps of uneven length (+-40 %); and the same bounds on the fake AMD SMI and Level Zero GPUs.
Runs alone (RUN_SERIAL): it measures timing.

The truth is the instant the child wrote each line, so a child descheduled between taking its
timestamp and writing (another process hogging the machine's cores) moves a step's truth, not
joules' number.  Each case therefore gets three tries and passes when one of them meets every
bound; a joules that misplaces energy fails all three."""
import pytest

from conftest import FAKE_NVML_DIR, JOULES, SANITIZED, TRAINER
import wrap_accuracy

# Sanitizer builds run several times slower: the child's timing, not joules' arithmetic, is
# what suffers, so their bounds are looser.
SLACK = 3.0 if SANITIZED else 1.0
TRIES = 3


def accuracy(child, update_ms, step_ms, steps, vendor):
    return wrap_accuracy.measure(JOULES, FAKE_NVML_DIR, child, gpus=2, update_ms=update_ms,
                                 step_ms=step_ms, steps=steps, trainer=TRAINER, vendor=vendor)


def holds(child, update_ms, step_ms, steps, median, p95, vendor="nvidia"):
    """Runs the case up to TRIES times; fails with every try's figures if none meets the bounds."""
    seen = []
    for _ in range(TRIES):
        r = accuracy(child, update_ms, step_ms, steps, vendor)
        assert len(r["errors"]) == steps - 1
        assert r["session_end"]["wrap"]["conserved"] is True
        seen.append((round(r["median"], 5), round(r["p95"], 5)))
        if r["median"] <= median * SLACK and r["p95"] <= p95 * SLACK:
            return
    pytest.fail(f"{vendor}: {child} child, counter every {update_ms} ms, {step_ms} ms steps: "
                f"(median, p95) of each try {seen}; bounds {median * SLACK}, {p95 * SLACK}")


@pytest.mark.parametrize("child", ["python", "c"])
def test_per_step_energy_with_a_continuous_counter(child):
    holds(child, update_ms=0, step_ms=100, steps=40, median=0.005, p95=0.02)


@pytest.mark.parametrize("child", ["python", "c"])
def test_per_step_energy_with_a_counter_that_advances_every_100ms(child):
    holds(child, update_ms=100, step_ms=100, steps=40, median=0.05, p95=0.15)
    holds(child, update_ms=100, step_ms=1000, steps=8, median=0.01, p95=0.03)


# AMD's accumulator comes from a metrics table the driver refreshes every millisecond at most
# (docs/amd-notes.md §3); Level Zero's counter is read from the GPU at each call
# (docs/level-zero-notes.md §4): both are held to the bounds of NVIDIA's continuous counter.
# Gaudi's mJ counter updates at a period not published (docs/hlml-notes.md §3): held to the same
# bounds for a counter updated every millisecond, as AMD's is.
@pytest.mark.parametrize("vendor,update_ms", [("amd", 1), ("intel", 0), ("gaudi", 1)])
@pytest.mark.parametrize("child", ["python", "c"])
def test_per_step_energy_on_amd_intel_and_gaudi(child, vendor, update_ms):
    holds(child, update_ms=update_ms, step_ms=100, steps=40, median=0.005, p95=0.02,
          vendor=vendor)
