"""Energy per step in a Lightning ``Trainer``'s logs (``self.log``, so every logger has it).

::

    from joules.integrations.lightning import JoulesCallback

    trainer = lightning.Trainer(callbacks=[JoulesCallback()])

Each training batch is a window; as soon as a batch's numbers are final (one counter update
after it, read without waiting, so logging never slows training) the callback logs
``energy/step_j`` (that batch), ``energy/total_j`` (every batch so far) and, with
``tokens_per_step``, ``energy/joules_per_token``; at each epoch's end ``energy/epoch_j``.  Only
the node's first process (``trainer.local_rank == 0``) measures: one monitor reads every GPU of
the job.  ``pytorch_lightning`` works as well as ``lightning``."""
from __future__ import annotations

import sys
from typing import Any, Optional

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    from pytorch_lightning.callbacks import Callback  # type: ignore[no-redef,unused-ignore]

from .._monitor import Measurement, Monitor
from ._steps import StepWindows

__all__ = ["JoulesCallback"]


class JoulesCallback(Callback):  # type: ignore[misc]
    """A Lightning ``Callback`` that logs joules' energy per step through ``pl_module.log``.

    Args:
        monitor: the :class:`joules.Monitor` to use (default: one opened when training starts,
            closed when it ends).
        tokens_per_step: tokens per training batch, for ``energy/joules_per_token``.
        prefix: of the logged names (default ``energy/``).
        prog_bar: also show ``energy/step_j`` in the progress bar.
        summary: print the one-line summary of the training on stderr at the end.
        monitor_options: passed to :class:`joules.Monitor` when this callback opens it.
    """

    def __init__(self, monitor: Optional[Monitor] = None, tokens_per_step: Optional[int] = None,
                 prefix: str = "energy/", prog_bar: bool = False, summary: bool = True,
                 **monitor_options: Any) -> None:
        super().__init__()
        self.tokens_per_step = tokens_per_step
        self.prefix = prefix
        self.prog_bar = prog_bar
        self.summary = summary
        self.windows = StepWindows("lightning", monitor, monitor_options)
        self._active = False
        self._epoch_energy = 0.0
        self.result: Optional[Measurement] = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._active = getattr(trainer, "local_rank", 0) == 0
        if self._active:
            self.windows.start()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                             batch_idx: int) -> None:
        if self._active:
            self.windows.begin()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if not self._active:
            return
        self.windows.end(int(trainer.global_step), self.tokens_per_step)
        done = self.windows.collect()
        for m, _ in done:
            self._epoch_energy += m.total_energy
        if done:
            last = done[-1][0]
            pl_module.log(f"{self.prefix}step_j", last.total_energy, on_step=True,
                          on_epoch=False, prog_bar=self.prog_bar)
            pl_module.log(f"{self.prefix}total_j", self.windows.total_energy, on_step=True,
                          on_epoch=False)
            if self.tokens_per_step:
                pl_module.log(f"{self.prefix}joules_per_token",
                              last.total_energy / self.tokens_per_step, on_step=True,
                              on_epoch=False)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if not self._active:
            return
        for m, _ in self.windows.collect(wait=True):
            self._epoch_energy += m.total_energy
        pl_module.log(f"{self.prefix}epoch_j", self._epoch_energy, on_step=False, on_epoch=True)
        self._epoch_energy = 0.0

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if not self._active:
            return
        self.result = self.windows.finish()
        self.result.name = "training"
        self._active = False
        if self.summary:
            print(self.result.summary(), file=sys.stderr, flush=True)

    @property
    def total_energy(self) -> float:
        """Joules of every training batch measured so far."""
        return self.windows.total_energy
