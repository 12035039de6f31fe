"""The exceptions of joules: every failure of the C library becomes one, with its message."""
from __future__ import annotations

TYPE_CHECKING = False  # not typing's: `import joules` stays free of it
if TYPE_CHECKING:
    from typing import Dict, NoReturn, Type

__all__ = [
    "JoulesError",
    "InvalidArgumentError",
    "NoDeviceError",
    "BackendError",
    "WindowNotFoundError",
    "NotReadyError",
    "StateError",
    "ForkedError",
    "NotWrappedError",
    "BudgetExceeded",
    "raise_status",
]


class JoulesError(RuntimeError):
    """A call into libjoules failed.

    ``status`` is the C library's code (``joules_status`` in include/joules/joules.h), ``reason``
    its fixed text and ``detail`` what the failing call said (``joules_last_error``); ``str()``
    gives the detail, else the reason.
    """

    status: int
    reason: str
    detail: str

    def __init__(self, status: int, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.status = status
        self.reason = reason
        self.detail = detail


class InvalidArgumentError(JoulesError, ValueError):
    """A bad option value or window name (JOULES_E_INVALID_ARGUMENT)."""


class NoDeviceError(JoulesError):
    """Nothing can be measured: no driver, no GPU, none chosen (JOULES_E_NO_DEVICE)."""


class BackendError(JoulesError):
    """The driver failed while opening (JOULES_E_BACKEND)."""


class WindowNotFoundError(JoulesError, KeyError):
    """No open window of that name (JOULES_E_NOT_FOUND)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.detail or self.reason


class NotReadyError(JoulesError):
    """A window's numbers are not final yet (JOULES_E_NOT_READY)."""


class StateError(JoulesError):
    """Not now: a window of that name is open, or the monitor is closed (JOULES_E_STATE)."""


class ForkedError(JoulesError):
    """The monitor was opened in the parent process; open a new one here (JOULES_E_FORKED)."""


class NotWrappedError(JoulesError):
    """``joules.step`` without a monitor, outside ``joules wrap`` (JOULES_E_NOT_WRAPPED)."""


class BudgetExceeded(Exception):
    """``Tracker(..., on_budget="stop")``: the predicted run goes past a budget.

    ``prediction`` is the :class:`joules.Prediction` that went past it and ``budget`` names the
    limit (``"energy_j"``, ``"duration_s"``, ``"co2e_g"`` or ``"cost"``)."""

    def __init__(self, message: str, prediction: object, budget: str) -> None:
        super().__init__(message)
        self.prediction = prediction
        self.budget = budget


_BY_STATUS: Dict[int, Type[JoulesError]] = {
    1: InvalidArgumentError,
    2: NoDeviceError,
    3: BackendError,
    4: WindowNotFoundError,
    5: NotReadyError,
    6: StateError,
    8: ForkedError,
    9: NotWrappedError,
}


def raise_status(status: int, reason: str, detail: str) -> NoReturn:
    """Raises the exception for a C status (called by the native module)."""
    raise _BY_STATUS.get(status, JoulesError)(status, reason, detail)
