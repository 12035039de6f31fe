"""joules.integrations.keras.JoulesCallback in Keras 3's fit (torch backend, CPU), measuring a
fake GPU at 250 W."""
from __future__ import annotations

import os
import time

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
np = pytest.importorskip("numpy")

from fake_gpus import constant, h100  # noqa: E402
from joules.integrations.keras import JoulesCallback  # noqa: E402


def test_energy_joins_the_epoch_logs(gpus):
    gpus({"devices": [h100(constant(250))]})
    x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    def slow(x):  # a batch long enough for readings to fall inside it (eager torch backend)
        time.sleep(0.02)
        return x

    model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Lambda(slow),
                              keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    callback = JoulesCallback(cpu=False, gpus="all", tokens_per_step=16, summary=False)
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0, callbacks=[callback])
    energies = history.history["energy_j"]
    assert len(energies) == 2
    assert sum(energies) == pytest.approx(callback.windows.total_energy, rel=1e-9)
    assert callback.windows.steps == 8
    for e, per_step in zip(energies, history.history["energy_step_j"]):
        assert per_step == pytest.approx(e / 4)
    assert history.history["joules_per_token"][0] == pytest.approx(energies[0] / 64)
    # Each batch placed from the readings around its edges: within the bound the library gives.
    w = callback.windows
    assert abs(w.total_energy - 250 * w.total_time) <= w.total_error + 0.01 * w.total_energy
    assert w.total_energy == pytest.approx(250 * w.total_time, rel=0.05)
