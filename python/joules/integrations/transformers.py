"""Energy per step and per token in a Hugging Face ``Trainer``'s logs.

::

    from joules.integrations.transformers import JoulesCallback

    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[JoulesCallback()])

Every log line of the trainer then carries ``energy/step_j`` (mean joules per optimizer step
since the last log line, each step from its ``on_step_begin`` to its ``on_step_end``), ``energy/total_j`` (since training began), ``energy/avg_power_w``
and, when the tokens are known, ``energy/joules_per_token``; the reporting callbacks (W&B,
TensorBoard, MLflow, the console) log them with the rest.  Under ``joules wrap``, each step's
end also goes to wrap (``joules.step``), so wrap gets the exact step boundaries too.

Only the node's first process (``state.is_local_process_zero``) measures: a monitor reads every
GPU of the job, so one per node counts each joule once."""
from __future__ import annotations

import inspect
import sys
from typing import Any, Dict, List, Optional

from transformers import TrainerCallback

from .. import _joules
from .._monitor import Measurement, Monitor

__all__ = ["JoulesCallback"]


class JoulesCallback(TrainerCallback):  # type: ignore[misc]
    """A ``TrainerCallback`` that puts joules' energy into the trainer's logs.

    Args:
        monitor: the :class:`joules.Monitor` to use (default: one opened at train begin for the
            job's GPUs, closed at train end).
        tokens_per_step: tokens per optimizer step, when ``state.num_input_tokens_seen`` does
            not count them (``TrainingArguments(include_num_input_tokens_seen=True)`` does).
        prefix: of the log keys (default ``energy/``).
        summary: print the one-line summary of the training on stderr at the end.
        monitor_options: passed to :class:`joules.Monitor` when this callback opens it.
    """

    def __init__(self, monitor: Optional[Monitor] = None, tokens_per_step: Optional[int] = None,
                 prefix: str = "energy/", summary: bool = True,
                 **monitor_options: Any) -> None:
        self.monitor = monitor
        self.tokens_per_step = tokens_per_step
        self.prefix = prefix
        self.summary = summary
        self._monitor_options = monitor_options
        self._owns_monitor = monitor is None
        self._active = False
        self._wrapped = False
        self._steps: List[Measurement] = []
        self._step_tokens: List[Optional[int]] = []
        self._tokens_seen = 0
        self.total_energy = 0.0
        self.total_time = 0.0
        self.total_tokens: Optional[int] = None
        self.result: Optional[Measurement] = None

    # The reporting callbacks (W&B, TensorBoard, ...) send a log line in their on_log, in the
    # order the callbacks were added, and the Trainer adds them before the user's: this one must
    # come first, or they would send the line before it has the energy in it.  Hooks get no
    # handle on the Trainer's CallbackHandler, but it is the caller of every hook.
    def _move_first(self) -> None:
        frame = inspect.currentframe()
        while frame is not None:
            handler = frame.f_locals.get("self")
            callbacks = getattr(handler, "callbacks", None)
            if type(handler).__name__ == "CallbackHandler" and isinstance(callbacks, list):
                if self in callbacks and callbacks[0] is not self:
                    callbacks.remove(self)
                    callbacks.insert(0, self)
                return
            frame = frame.f_back

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._move_first()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._move_first()
        self._active = bool(getattr(state, "is_local_process_zero", True))
        if not self._active:
            return
        if self.monitor is None:
            self.monitor = Monitor(**self._monitor_options)
        self._tokens_seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
        self._wrapped = _joules.wrapped()
        self.monitor.begin_window("transformers train")

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._active and self.monitor is not None:
            self.monitor.begin_window("transformers step")

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._active or self.monitor is None:
            return
        m = self.monitor.end_window("transformers step")
        tokens = self._tokens_of_step(state)
        self._steps.append(m)
        self._step_tokens.append(tokens)
        if self._wrapped:
            _joules.step(int(state.global_step), tokens or 0)

    def _tokens_of_step(self, state: Any) -> Optional[int]:
        if self.tokens_per_step is not None:
            return self.tokens_per_step
        seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
        tokens = seen - self._tokens_seen
        self._tokens_seen = seen
        return tokens if tokens > 0 else None

    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if not self._active or logs is None or not self._steps:
            return
        logs.update(self._flush())

    def _flush(self) -> Dict[str, float]:
        """The energy of the steps since the last log line (waits for the last one to be final:
        at most one counter update per log line)."""
        steps, tokens = self._steps, self._step_tokens
        self._steps, self._step_tokens = [], []
        energy = sum(m.total_energy for m in steps)
        seconds = sum(m.time for m in steps)
        self.total_energy += energy
        self.total_time += seconds
        out = {f"{self.prefix}step_j": energy / len(steps),
               f"{self.prefix}total_j": self.total_energy}
        if seconds > 0:
            out[f"{self.prefix}avg_power_w"] = energy / seconds
        if all(t is not None for t in tokens):
            counted = sum(t for t in tokens if t is not None)
            self.total_tokens = (self.total_tokens or 0) + counted
            if counted > 0:
                out[f"{self.prefix}joules_per_token"] = energy / counted
        return out

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._active or self.monitor is None:
            return
        if self._steps:
            self._flush()
        self.result = self.monitor.end_window("transformers train")
        self.result.name = "training"
        if self.summary:
            print(self.result.summary(), file=sys.stderr, flush=True)
        if self._owns_monitor:
            self.result.wait()
            self.monitor.close()
            self.monitor = None
        self._active = False
