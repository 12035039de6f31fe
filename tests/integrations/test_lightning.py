"""joules.integrations.lightning.JoulesCallback in a real Lightning Trainer (a linear model on
the CPU), measuring a fake GPU at 400 W; what it logs is read back from Lightning's CSV logger."""
from __future__ import annotations

import csv
import time

import pytest

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning")

from fake_gpus import constant, h100  # noqa: E402
from joules.integrations.lightning import JoulesCallback  # noqa: E402


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        time.sleep(0.03)  # a step long enough for the counter to move between steps
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def test_energy_is_logged_through_self_log(gpus, tmp_path, capsys):
    gpus({"devices": [h100(constant(400))]})
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    callback = JoulesCallback(cpu=False, gpus="all", tokens_per_step=8)
    measured = []  # every step's Measurement, for its error bound
    collect = callback.windows.collect

    def recording(wait=False):
        done = collect(wait)
        measured.extend(m for m, _ in done)
        return done

    callback.windows.collect = recording
    logger = L.pytorch.loggers.CSVLogger(str(tmp_path), name="run")
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=logger,
                        log_every_n_steps=1, enable_progress_bar=False,
                        enable_checkpointing=False, enable_model_summary=False,
                        callbacks=[callback])
    trainer.fit(Tiny(), loader)
    with open(next(tmp_path.glob("run/version_*/metrics.csv"))) as f:
        rows = list(csv.DictReader(f))
    steps = [float(r["energy/step_j"]) for r in rows if r.get("energy/step_j")]
    epochs = [float(r["energy/epoch_j"]) for r in rows if r.get("energy/epoch_j")]
    per_token = [float(r["energy/joules_per_token"]) for r in rows
                 if r.get("energy/joules_per_token")]
    assert len(steps) >= 4, rows
    # A step: 30 ms of sleep and some work, at 400 W, to within the library's bound on where
    # its edges fall between counter updates (a loaded machine reads late).
    for m in measured:
        assert 400 * 0.03 - m.error <= m.total_energy <= 400 * 0.2 + m.error, (
            m.total_energy, m.error)
    logged = [m.total_energy for m in measured]
    for s in steps:  # what was logged is what was measured (the CSV holds float32)
        assert any(s == pytest.approx(e, rel=1e-6) for e in logged), (s, logged)
    assert per_token and per_token[0] == pytest.approx(steps[0] / 8)
    assert len(epochs) == 2
    assert sum(epochs) == pytest.approx(callback.total_energy, rel=1e-6)
    assert callback.windows.steps == 16
    w = callback.windows
    assert abs(w.total_energy - 400 * w.total_time) <= w.total_error + 0.01 * w.total_energy
    assert callback.result.total_energy == pytest.approx(400 * callback.result.time, rel=0.01)
    assert "joules: 'training': " in capsys.readouterr().err
