"""``joules.Tracker``: carbontracker's epoch loop, with joules' measurements.

After the first epoch(s) it predicts the whole run's energy, duration, CO2e and cost, prints
the prediction and logs it; at the end (the last epoch, or ``stop()``) it reports what was
measured.  A budget can stop the run when the prediction goes past it."""
from __future__ import annotations

import datetime
import json
import logging
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, TextIO

from . import _joules, _state
from ._errors import BudgetExceeded
from ._monitor import Measurement, Monitor
from ._text import escape, joules_text, seconds_text

__all__ = ["Tracker", "Prediction"]

log = logging.getLogger("joules")


@dataclass(frozen=True)
class Prediction:
    """The energy, duration, CO2e and cost of the whole run (``epochs`` epochs), predicted at
    the end of epoch ``at_epoch`` from the energy so far plus the remaining epochs at the rate
    measured since the first epoch began (epochs and what runs between them)."""

    at_epoch: int
    epochs: int
    energy_j: float
    duration_s: float
    remaining_s: float
    finish_time: str
    energy_per_epoch_j: float
    duration_per_epoch_s: float
    energy_kwh: float
    facility_energy_kwh: float
    co2e_g: Optional[float]
    cost: Optional[float]
    currency: str


class Tracker:
    """Epoch-by-epoch energy of a training run, with a prediction of the whole run.

    ``tracker.epoch_start()`` / ``tracker.epoch_end()`` around each epoch, ``tracker.stop()``
    at the end (or use it as a context manager).

    Args:
        epochs: the run's epochs.
        epochs_before_pred: epochs measured before the prediction (0: none).  It is made at
            the first epoch edge (start or end) at which their numbers are final, one counter
            update after the epoch's end: reading them never holds up training.
        monitor_epochs: epochs after which the actual consumption is reported and tracking
            ends (-1: all of them).
        carbon_intensity: grid intensity in gCO2e/kWh (without it there is no CO2e).
        pue: the data centre's power usage effectiveness (facility energy = measured x PUE).
        price_per_kwh, currency: the electricity price (without it there is no cost).
        budget_energy_j, budget_duration_s, budget_co2e_g, budget_cost: limits for the
            predicted run.
        on_budget: ``"warn"`` (default) prints a warning when the prediction passes a budget;
            ``"stop"`` reports what was measured and raises :class:`joules.BudgetExceeded`
            from the ``epoch_end`` or ``epoch_start`` that made the prediction (or ``stop``).
        log_dir: a folder for a JSONL log of the epochs, predictions and the end
            (``joules.read`` reads it); None: no file.
        verbose: 0 prints nothing, 1 (default) the prediction and the actual consumption.
        monitor: the :class:`Monitor` to use (default: the current one, else one for the
            job's GPUs).
        stream: where to print (default ``sys.stderr``).
    """

    def __init__(self, epochs: int, epochs_before_pred: int = 1, monitor_epochs: int = -1, *,
                 carbon_intensity: Optional[float] = None, pue: float = 1.0,
                 price_per_kwh: Optional[float] = None, currency: str = "USD",
                 budget_energy_j: Optional[float] = None,
                 budget_duration_s: Optional[float] = None,
                 budget_co2e_g: Optional[float] = None, budget_cost: Optional[float] = None,
                 on_budget: str = "warn", log_dir: Optional[str] = None, verbose: int = 1,
                 monitor: Optional[Monitor] = None, stream: Optional[TextIO] = None) -> None:
        if epochs < 1:
            raise ValueError(f"epochs must be >= 1, not {epochs}")
        if epochs_before_pred < 0 or epochs_before_pred > epochs:
            raise ValueError(f"epochs_before_pred must be in 0..{epochs}, not {epochs_before_pred}")
        if monitor_epochs == 0 or monitor_epochs < -1:
            raise ValueError(f"monitor_epochs must be -1 or >= 1, not {monitor_epochs}")
        if on_budget not in ("warn", "stop"):
            raise ValueError(f"on_budget must be 'warn' or 'stop', not {on_budget!r}")
        if pue < 1.0:
            raise ValueError(f"pue must be >= 1, not {pue}")
        for name, value in (("carbon_intensity", carbon_intensity),
                            ("price_per_kwh", price_per_kwh)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, not {value}")
        self.epochs = epochs
        self.epochs_before_pred = epochs_before_pred
        self.monitor_epochs = epochs if monitor_epochs == -1 else min(monitor_epochs, epochs)
        self.carbon_intensity = carbon_intensity
        self.pue = pue
        self.price_per_kwh = price_per_kwh
        self.currency = currency
        self.budgets = {"energy_j": budget_energy_j, "duration_s": budget_duration_s,
                        "co2e_g": budget_co2e_g, "cost": budget_cost}
        self.on_budget = on_budget
        self.verbose = verbose
        self.stream = stream
        self.monitor = monitor or _state.current_or_default()
        self.epoch = 0
        self.epoch_measurements: List[Measurement] = []
        self.predictions: List[Prediction] = []
        self.over_budget: Optional[str] = None
        #: After stop(): the run's energy_j, duration_s, co2e_g and cost (from the tracker's
        #: creation to stop(): the epochs and what ran before, between and after them).
        self.result: Optional[Dict[str, Optional[float]]] = None
        self.stopped = False
        self._tag = f"joules.Tracker {id(self):x}"
        self._setup: Optional[Measurement] = None
        self._gaps: List[Measurement] = []
        self._in_epoch = False
        self._log = _open_log(log_dir)
        self.monitor.begin_window(f"{self._tag} setup", sync_execution=False)
        self._open = f"{self._tag} setup"

    # -- the loop --------------------------------------------------------------------------

    def epoch_start(self) -> None:
        """An epoch begins now."""
        if self.stopped or self.epoch >= self.monitor_epochs:
            return
        if self._in_epoch:
            raise RuntimeError("joules.Tracker: epoch_start() twice without epoch_end()")
        ended = self.monitor.end_window(self._open)
        if self.epoch:
            self._gaps.append(ended)
        else:
            self._setup = ended
        self.epoch += 1
        self._open = f"{self._tag} epoch {self.epoch}"
        self.monitor.begin_window(self._open)
        self._in_epoch = True
        self._maybe_predict(wait=False)

    def epoch_end(self) -> None:
        """The epoch ends now: after ``epochs_before_pred`` epochs the prediction is made (it
        waits for this epoch's numbers, at most one counter update); after ``monitor_epochs``
        the actual consumption is reported."""
        if self.stopped or not self._in_epoch:
            return
        m = self.monitor.end_window(self._open)
        m.name = f"epoch {self.epoch}"
        self.epoch_measurements.append(m)
        self._in_epoch = False
        self._open = f"{self._tag} after epoch {self.epoch}"
        self.monitor.begin_window(self._open, sync_execution=False)
        self._write({"type": "epoch", "epoch": self.epoch, "duration_s": m.time,
                     "energy_j": m.total_energy, "gpu_energy_j": m.gpu_total_energy,
                     "method": m.method, "lost": m.lost})
        self._maybe_predict(wait=False)
        if self.epoch >= self.monitor_epochs:
            self.stop()

    def stop(self) -> None:
        """Reports the actual consumption of the epochs tracked and ends tracking.  Idempotent.
        An epoch under way when it is called is not counted (it did not finish)."""
        if self.stopped:
            return
        self.stopped = True
        ended = self.monitor.end_window(self._open, sync_execution=False)
        self._maybe_predict(wait=True)
        if self._in_epoch:
            ended.name = f"epoch {self.epoch} (interrupted)"
        # The windows are contiguous from the tracker's creation to now: their sum is the run's.
        windows = [w for w in (self._setup, *self.epoch_measurements, *self._gaps, ended) if w]
        energy = sum(w.total_energy for w in windows)
        duration = sum(w.time for w in windows)
        epochs_energy, epochs_duration = self._epochs_total()
        co2e, cost = self._carbon(energy / 3.6e6)
        done = len(self.epoch_measurements)
        self._say(f"joules: actual for {done} epoch(s): {joules_text(energy)} in "
                  f"{seconds_text(duration)}" + self._carbon_text(co2e, cost)
                  + f" (the epochs alone: {joules_text(epochs_energy)} in "
                  f"{seconds_text(epochs_duration)})")
        self._write({"type": "tracker_end", "epochs": done, "energy_j": energy,
                     "duration_s": duration, "epochs_energy_j": epochs_energy,
                     "epochs_duration_s": epochs_duration, "energy_kwh": energy / 3.6e6,
                     "facility_energy_kwh": energy / 3.6e6 * self.pue, "co2e_g": co2e,
                     "cost": cost, "currency": self.currency if cost is not None else None,
                     "method": ended.method, "lost": ended.lost,
                     "interrupted": self._in_epoch or done < self.epochs})
        self.result = {"energy_j": energy, "duration_s": duration, "co2e_g": co2e, "cost": cost}
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the prediction --------------------------------------------------------------------

    def _basis(self, done: int) -> List[Measurement]:
        """The windows a prediction from the first `done` epochs rests on: the setup, those
        epochs and the stretches between them (contiguous)."""
        return [w for w in (self._setup, *self.epoch_measurements[:done],
                            *self._gaps[:done - 1]) if w is not None]

    def _maybe_predict(self, wait: bool) -> None:
        """The prediction after `epochs_before_pred` epochs, at the first epoch edge at which
        their numbers are final (one counter update after the epoch's end), or at stop
        (`wait`): reading them never holds up training."""
        done = self.epochs_before_pred
        if (self.predictions or done == 0 or len(self.epoch_measurements) < done
                or not (wait or all(w.ready for w in self._basis(done)))):
            return
        self._report_prediction(self.predict(done))

    def predict(self, at_epoch: Optional[int] = None) -> Prediction:
        """The prediction of the whole run from the first `at_epoch` epochs (default: every
        epoch ended so far); waits for their numbers to be final."""
        done = len(self.epoch_measurements) if at_epoch is None else at_epoch
        if done == 0 or done > len(self.epoch_measurements):
            raise RuntimeError(f"joules.Tracker: {done} epoch(s) have not ended yet")
        spans = [*self.epoch_measurements[:done], *self._gaps[:done - 1]]
        span_energy = sum(m.total_energy for m in spans)
        span_time = sum(m.time for m in spans)
        setup = self._setup
        so_far_energy = span_energy + (setup.total_energy if setup else 0.0)
        so_far_time = span_time + (setup.time if setup else 0.0)
        per_epoch_energy = span_energy / done
        per_epoch_time = span_time / done
        remaining = self.epochs - done
        energy = so_far_energy + remaining * per_epoch_energy
        duration = so_far_time + remaining * per_epoch_time
        remaining_s = remaining * per_epoch_time
        finish = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
            seconds=remaining_s)
        kwh = energy / 3.6e6
        co2e, cost = self._carbon(kwh)
        p = Prediction(at_epoch=done, epochs=self.epochs, energy_j=energy, duration_s=duration,
                       remaining_s=remaining_s,
                       finish_time=finish.isoformat(timespec="seconds").replace("+00:00", "Z"),
                       energy_per_epoch_j=per_epoch_energy, duration_per_epoch_s=per_epoch_time,
                       energy_kwh=kwh, facility_energy_kwh=kwh * self.pue, co2e_g=co2e,
                       cost=cost, currency=self.currency)
        self.predictions.append(p)
        return p

    def _report_prediction(self, p: Prediction) -> None:
        self._say(f"joules: predicted for {p.epochs} epoch(s): {joules_text(p.energy_j)} in "
                  f"{seconds_text(p.duration_s)}" + self._carbon_text(p.co2e_g, p.cost)
                  + f" (from {p.at_epoch} epoch(s): {joules_text(p.energy_per_epoch_j)} and "
                  f"{seconds_text(p.duration_per_epoch_s)} per epoch)")
        self._write({"type": "prediction", **asdict(p)})
        for budget, limit in self.budgets.items():
            value = getattr(p, budget)
            if limit is None or value is None or value <= limit:
                continue
            self.over_budget = budget
            message = (f"joules: the run is predicted to go past its budget: {budget} "
                       f"{value:.6g} > {limit:.6g}")
            self._write({"type": "budget_exceeded", "budget": budget, "limit": limit,
                         "predicted": value, "action": self.on_budget})
            if self.on_budget == "stop" and not self.stopped:
                self._say(message + "; stopping")
                self.stop()
                raise BudgetExceeded(message, p, budget)
            self._say(message)
            break

    # -- helpers ---------------------------------------------------------------------------

    def _epochs_total(self) -> "tuple[float, float]":
        energy = sum(m.total_energy for m in self.epoch_measurements)
        duration = sum(m.time for m in self.epoch_measurements)
        return energy, duration

    def _carbon(self, kwh: float) -> "tuple[Optional[float], Optional[float]]":
        facility = kwh * self.pue
        co2e = facility * self.carbon_intensity if self.carbon_intensity is not None else None
        cost = facility * self.price_per_kwh if self.price_per_kwh is not None else None
        return co2e, cost

    def _carbon_text(self, co2e: Optional[float], cost: Optional[float]) -> str:
        text = ""
        if co2e is not None:
            text += f", {co2e:.4g} gCO2e ({self.carbon_intensity:g} g/kWh, PUE {self.pue:g})"
        else:
            text += ", no CO2e: no carbon_intensity given"
        if cost is not None:
            text += f", {cost:.4g} {escape(self.currency)}"
        return text

    def _say(self, text: str) -> None:
        log.info("%s", text)
        if self.verbose:
            print(text, file=self.stream or sys.stderr, flush=True)

    def _write(self, record: Dict[str, Any]) -> None:
        if self._log is None:
            return
        now = datetime.datetime.now(datetime.timezone.utc)
        full = {"type": record.pop("type"), "schema_version": 1,
                "time": now.isoformat(timespec="microseconds").replace("+00:00", "Z"),
                "run_id": os.environ.get("JOULES_RUN_ID"), "hostname": socket.gethostname(),
                "labels": {}, "joules_version": _joules.version(), **record}
        self._log.write(json.dumps(full) + "\n")
        self._log.flush()


def _open_log(log_dir: Optional[str]) -> Optional[TextIO]:
    if log_dir is None:
        return None
    os.makedirs(log_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = os.path.join(log_dir, f"joules-tracker-{stamp}-{os.getpid()}.jsonl")
    return open(path, "a", encoding="utf-8")
