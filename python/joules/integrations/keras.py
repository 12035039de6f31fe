"""Energy per batch and per epoch in Keras ``fit`` logs (``History``, TensorBoard, CSVLogger).

::

    from joules.integrations.keras import JoulesCallback

    model.fit(x, y, epochs=3, callbacks=[JoulesCallback()])

Each training batch is a window; at each epoch's end ``energy_j`` (the epoch's batches),
``energy_step_j`` (their mean) and, with ``tokens_per_step``, ``joules_per_token`` join the
epoch's logs, so ``History.history`` and every logger after this callback have them."""
from __future__ import annotations

import sys
from typing import Any, Dict, Optional

import keras

from .._monitor import Measurement, Monitor
from ._steps import StepWindows

__all__ = ["JoulesCallback"]


class JoulesCallback(keras.callbacks.Callback):  # type: ignore[misc]
    """A Keras callback that adds joules' energy to the epoch logs.

    Args:
        monitor: the :class:`joules.Monitor` to use (default: one opened in ``on_train_begin``,
            closed in ``on_train_end``).
        tokens_per_step: tokens per batch, for ``joules_per_token``.
        summary: print the one-line summary of the training on stderr at the end.
        monitor_options: passed to :class:`joules.Monitor` when this callback opens it.
    """

    def __init__(self, monitor: Optional[Monitor] = None, tokens_per_step: Optional[int] = None,
                 summary: bool = True, **monitor_options: Any) -> None:
        super().__init__()
        self.tokens_per_step = tokens_per_step
        self.summary = summary
        self.windows = StepWindows("keras", monitor, monitor_options)
        self._batches = 0
        self._epoch_start_energy = 0.0
        self._epoch_start_steps = 0
        self.result: Optional[Measurement] = None

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self.windows.start()

    def on_train_batch_begin(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.windows.begin()

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._batches += 1
        self.windows.end(self._batches, self.tokens_per_step)
        self.windows.collect()

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.windows.collect(wait=True)
        energy = self.windows.total_energy - self._epoch_start_energy
        steps = self.windows.steps - self._epoch_start_steps
        self._epoch_start_energy = self.windows.total_energy
        self._epoch_start_steps = self.windows.steps
        if logs is None or steps == 0:
            return
        logs["energy_j"] = energy
        logs["energy_step_j"] = energy / steps
        if self.tokens_per_step:
            logs["joules_per_token"] = energy / (steps * self.tokens_per_step)

    def on_train_end(self, logs: Optional[Dict[str, Any]] = None) -> None:
        self.result = self.windows.finish()
        self.result.name = "training"
        if self.summary:
            print(self.result.summary(), file=sys.stderr, flush=True)
