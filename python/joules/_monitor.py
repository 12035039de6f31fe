"""``joules.Monitor`` and ``joules.Measurement``: windows of energy over libjoules' monitor.

The names are Zeus's (``ZeusMonitor.begin_window`` / ``end_window`` returning a ``Measurement``
with ``time``, ``gpu_energy``, ``cpu_energy``, ``dram_energy``, ``total_energy``), so that a Zeus
user changes one import.  ``end_window`` returns at once; the numbers are read when a field is
first read, which waits (GIL released) until the monitor has read every device after the
window's end: at most one energy counter update, about 100 ms on recent NVIDIA GPUs."""
from __future__ import annotations

import math
import os
import threading
import time as _time
import weakref

from . import _joules, _state, _sync
from ._errors import InvalidArgumentError
from ._text import escape, joules_text, seconds_text

__all__ = ["Monitor", "Measurement", "Device", "DeviceEnergy", "METHODS", "KINDS"]

#: joules_method, by value (include/joules/joules.h).
METHODS = ("none", "counter", "polled", "simulated", "estimated")
#: joules_device_kind, by value.
KINDS = ("gpu", "cpu", "dram")
_BACKENDS = {"auto": 0, "nvml": 1, "sim": 2}
# exact=False: how long each wait for the first reading after a window's end lasts.
_EARLY_POLL_MS = 2

# Not `import typing` (nor dataclasses, which imports inspect): with the re, enum and ast they
# pull in, they would cost more than the rest of `from joules import Monitor`.  Type checkers
# read the names below as usual.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypedDict, Union

    GpuSpec = Union[None, str, int, Sequence[Union[int, str]]]

    class _Fields(TypedDict):
        """A Measurement's numbers, as read from the library."""

        final: bool
        time: float
        total_energy: float
        gpu_total_energy: float
        gpu_energy: Dict[int, float]
        cpu_energy: Optional[Dict[int, float]]
        dram_energy: Optional[Dict[int, float]]
        error: float
        method: str
        lost: List[int]
        devices: List[DeviceEnergy]
        begin_monotonic: float
        end_monotonic: float


class _Record:
    """A small immutable record: fields by name, equality and repr by value."""

    __slots__: "Tuple[str, ...]" = ()

    def __init__(self, *values: "Any") -> None:
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: "Any") -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _values(self) -> "Tuple[Any, ...]":
        return tuple(getattr(self, n) for n in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Device(_Record):
    """A device the monitor reads: ``kind`` (``gpu``, ``cpu``, ``dram``), ``index`` (the GPU's
    index as nvidia-smi numbers it; the package for CPU and DRAM), ``uuid``, ``name`` and
    ``method`` (how its energy is measured when nothing fails)."""

    __slots__ = ("kind", "index", "uuid", "name", "method")
    kind: str
    index: int
    uuid: str
    name: str
    method: str

    def __init__(self, kind: str, index: int, uuid: str, name: str, method: str) -> None:
        super().__init__(kind, index, uuid, name, method)


class DeviceEnergy(_Record):
    """One device's energy over a window: ``energy`` (J), ``error`` (a bound on its error from
    the placement of the window's edges, J), ``method``, and ``lost`` (the device stopped
    answering during the window: ``energy`` is what it used up to then)."""

    __slots__ = ("device", "energy", "error", "method", "lost")
    device: Device
    energy: float
    error: float
    method: str
    lost: bool

    def __init__(self, device: Device, energy: float, error: float, method: str,
                 lost: bool) -> None:
        super().__init__(device, energy, error, method, lost)


class Measurement:
    """The time and energy of one window.

    Fields (Zeus's names): ``time`` (s), ``gpu_energy`` (J by GPU index), ``cpu_energy`` and
    ``dram_energy`` (J by CPU package, None when not measured), ``total_energy`` (J, every
    measured device); and ``method`` (``counter``, ``polled``, ``simulated``, ``estimated``),
    ``error`` (a bound on ``total_energy``'s error, J), ``final``, ``lost`` (indices of GPUs lost
    during the window; their energy is up to the loss), ``devices`` (per device).

    The first field read waits until the numbers are final (at most one counter update after
    the window's end), unless the window was ended with ``exact=False``."""

    __slots__ = ("name", "_monitor", "_id", "_keys", "_lock", "_data", "__weakref__")

    def __init__(self, name: str, monitor: Optional["Monitor"], window_id: int,
                 keys: Mapping[int, int], data: Optional[_Fields] = None) -> None:
        self.name = name
        self._monitor = monitor
        self._id = window_id
        self._keys = keys
        self._lock = threading.Lock()
        self._data = data

    # -- reading ---------------------------------------------------------------------------

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits at most `timeout` seconds (None: until final) and says whether the numbers are
        final.  Without waiting the fields hold the best numbers so far."""
        timeout_ms = -1 if timeout is None else max(0, int(timeout * 1000))
        return self._resolve(timeout_ms)

    @property
    def ready(self) -> bool:
        """Whether the numbers are final now (never waits)."""
        return self._resolve(0)

    def _resolve(self, timeout_ms: int) -> bool:
        with self._lock:
            if self._data is not None and self._data["final"]:
                return True
            monitor = self._monitor
            if monitor is None:
                return self._data is not None and self._data["final"]
            raw = monitor._native.result(self._id, timeout_ms)
            self._data = monitor._unpack(raw, self._keys)
            if self._data["final"]:
                monitor._finished(self)
                self._monitor = None
            return self._data["final"]

    def __del__(self) -> None:
        # A window ended but never read: its numbers are freed in the library now, not kept
        # until the monitor closes (a training loop may end millions of windows).
        monitor = self._monitor
        if monitor is not None:
            try:
                monitor._discard(self)
            except Exception:  # the monitor closed or the process forked: nothing to free
                pass

    def _fields(self) -> _Fields:
        data = self._data
        if data is None or not data["final"]:
            self._resolve(-1)
            data = self._data
        assert data is not None
        return data

    @property
    def time(self) -> float:
        """Seconds from the window's beginning to its end."""
        return self._fields()["time"]

    @property
    def gpu_energy(self) -> Dict[int, float]:
        """Joules by GPU index (nvidia-smi's, or the CUDA index given as ``gpu_indices``)."""
        return self._fields()["gpu_energy"]

    @property
    def cpu_energy(self) -> Optional[Dict[int, float]]:
        """Joules by CPU package (RAPL), or None when no CPU package is measured."""
        return self._fields()["cpu_energy"]

    @property
    def dram_energy(self) -> Optional[Dict[int, float]]:
        """Joules of each package's DRAM (RAPL), or None when DRAM is not measured."""
        return self._fields()["dram_energy"]

    @property
    def total_energy(self) -> float:
        """Joules of every measured device (GPUs, and CPU and DRAM when measured)."""
        return self._fields()["total_energy"]

    @property
    def gpu_total_energy(self) -> float:
        """Joules of the GPUs alone (what Zeus calls ``total_energy``)."""
        return self._fields()["gpu_total_energy"]

    @property
    def method(self) -> str:
        """How the GPUs' energy was obtained: ``counter`` when every GPU had an energy counter,
        else ``polled``; ``simulated`` for the sim backend; ``none`` when nothing was read."""
        return self._fields()["method"]

    @property
    def error(self) -> float:
        """A bound on the error of ``total_energy`` from the placement of the edges (J)."""
        return self._fields()["error"]

    @property
    def final(self) -> bool:
        """Whether no later reading can change these numbers."""
        data = self._data
        return bool(data and data["final"])

    @property
    def lost(self) -> List[int]:
        """GPUs lost during the window (their energy counts up to the loss)."""
        return self._fields()["lost"]

    @property
    def devices(self) -> List[DeviceEnergy]:
        """The energy of every device, GPUs first."""
        return self._fields()["devices"]

    @property
    def begin_monotonic(self) -> float:
        """The window's beginning, in seconds on CLOCK_MONOTONIC (``time.monotonic()``)."""
        return self._fields()["begin_monotonic"]

    @property
    def end_monotonic(self) -> float:
        """The window's end, in seconds on CLOCK_MONOTONIC (``time.monotonic()``)."""
        return self._fields()["end_monotonic"]

    @property
    def avg_power(self) -> Optional[float]:
        """``total_energy / time`` in watts (None for an empty window)."""
        f = self._fields()
        return f["total_energy"] / f["time"] if f["time"] > 0 else None

    def to_dict(self) -> Dict[str, Any]:
        """The fields as plain values (JSON-ready; GPU keys as they are)."""
        f = self._fields()
        return {
            "name": self.name,
            "time": f["time"],
            "gpu_energy": dict(f["gpu_energy"]),
            "cpu_energy": None if f["cpu_energy"] is None else dict(f["cpu_energy"]),
            "dram_energy": None if f["dram_energy"] is None else dict(f["dram_energy"]),
            "total_energy": f["total_energy"],
            "method": f["method"],
            "error": f["error"],
            "final": f["final"],
            "lost": list(f["lost"]),
            "begin_monotonic": f["begin_monotonic"],
            "end_monotonic": f["end_monotonic"],
        }

    def summary(self) -> str:
        """One line for people, e.g.
        ``joules: 'train': 1234 J (0.343 Wh) in 5.00 s, avg 246.8 W; 8 GPUs, counter``."""
        f = self._fields()
        gpus = len(f["gpu_energy"])
        parts = [f"joules: '{escape(self.name)}': {joules_text(f['total_energy'])} in "
                 f"{seconds_text(f['time'])}"]
        if f["time"] > 0:
            parts[0] += f", avg {f['total_energy'] / f['time']:.1f} W"
        what = f"{gpus} GPU" + ("s" if gpus != 1 else "")
        if f["cpu_energy"] is not None:
            what += " + CPU" + (" + DRAM" if f["dram_energy"] is not None else "")
        parts.append(f"{what}, {f['method']}")
        if f["lost"]:
            parts.append("lost GPU " + ", ".join(map(str, f["lost"])) + " (energy up to the loss)")
        if not f["final"]:
            parts.append("not final")
        return "; ".join(parts)

    def __repr__(self) -> str:
        data = self._data
        if data is None:
            return f"Measurement(name={self.name!r}, pending)"
        return (f"Measurement(name={self.name!r}, time={data['time']!r}, "
                f"gpu_energy={data['gpu_energy']!r}, cpu_energy={data['cpu_energy']!r}, "
                f"dram_energy={data['dram_energy']!r}, total_energy={data['total_energy']!r}, "
                f"method={data['method']!r}, final={data['final']!r})")


class Monitor:
    """Reads the GPUs (and CPU packages and DRAM where RAPL is readable) from one background
    thread in libjoules; windows are named spans of time whose energy it measures.

    Args:
        gpus: None for the GPUs this job may use (``CUDA_VISIBLE_DEVICES``, ...), ``"all"``,
            an index, a list of indices or UUIDs, or a string as ``joules run --gpus`` takes it.
        cpu: also measure CPU packages and DRAM where RAPL is readable.
        backend: ``"auto"`` (NVML), ``"nvml"``, or ``"sim"`` (simulated GPUs; every figure is
            marked ``simulated``).
        interval_ms: between regular readings (0: the library's default, 100 ms).
        nvml_library: the NVML library to load (else ``JOULES_NVML_LIBRARY``, else
            ``libnvidia-ml.so.1``).
        sim_model, sim_gpus, sim_profile: the simulated GPUs (``backend="sim"``).
        sync_execution_with: the framework whose queued GPU work each window edge waits for:
            ``"auto"`` (torch, JAX and CuPy, each when imported), one of them, or None.
        exact: False to have ``end_window`` read the numbers at once instead of when final.
        gpu_indices, cpu_indices, approx_instant_energy, log_file: ``ZeusMonitor``'s arguments,
            taken as Zeus takes them (``gpu_indices`` are CUDA indices after
            ``CUDA_VISIBLE_DEVICES``; ``approx_instant_energy`` changes nothing: joules places a
            short window's edges between counter updates itself; ``log_file`` gets Zeus's CSV).
    """

    def __init__(self, gpus: GpuSpec = None, cpu: bool = True, backend: str = "auto", *,
                 interval_ms: int = 0, nvml_library: Optional[str] = None,
                 sim_model: Optional[str] = None, sim_gpus: int = 0,
                 sim_profile: Optional[str] = None, sync_execution_with: Optional[str] = "auto",
                 exact: bool = True, gpu_indices: Optional[Sequence[int]] = None,
                 cpu_indices: Optional[Sequence[int]] = None,
                 approx_instant_energy: bool = False,
                 log_file: Union[str, "os.PathLike[str]", None] = None) -> None:
        del approx_instant_energy  # Zeus's workaround for short windows; joules needs none.
        if backend not in _BACKENDS:
            raise InvalidArgumentError(1, "invalid argument",
                                       f"backend {backend!r}: expected auto, nvml or sim")
        if sync_execution_with is not None and sync_execution_with not in _sync.FRAMEWORKS:
            raise InvalidArgumentError(
                1, "invalid argument", f"sync_execution_with {sync_execution_with!r}: expected "
                + ", ".join(_sync.FRAMEWORKS) + " or None")
        gpu_text, cuda_keys = _gpu_choice(gpus, gpu_indices)
        self._cpu_indices = None if cpu_indices is None else set(cpu_indices)
        cpu = cpu and (cpu_indices is None or len(cpu_indices) > 0)
        self.sync_execution_with = sync_execution_with
        self.exact = exact
        self._native = _joules.NativeMonitor(_BACKENDS[backend], gpu_text, cpu, interval_ms,
                                             nvml_library, sim_model, sim_gpus, sim_profile)
        self.devices: List[Device] = [
            Device(KINDS[k], index, uuid, name, METHODS[m])
            for k, index, uuid, name, m in self._native.devices()]
        self._keys = _gpu_keys(self.devices, cuda_keys)
        self._pending: "weakref.WeakSet[Measurement]" = weakref.WeakSet()
        self._lock = threading.Lock()
        self._log = _ZeusLog(log_file, [self._keys[d.index] for d in self.gpus]) if log_file else None
        self._pid = os.getpid()
        _state.opened(self)

    # -- the devices -----------------------------------------------------------------------

    @property
    def gpus(self) -> List[Device]:
        """The GPUs measured, in the order results list them."""
        return [d for d in self.devices if d.kind == "gpu"]

    @property
    def gpu_indices(self) -> List[int]:
        """The keys of ``Measurement.gpu_energy`` (Zeus's attribute)."""
        return [self._keys[d.index] for d in self.gpus]

    # -- windows ---------------------------------------------------------------------------

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        """Begins the window `key` now (names of open windows are unique; windows may nest and
        overlap).  With `sync_execution`, first waits for the framework's queued GPU work."""
        if sync_execution:
            _sync.synchronize(self.sync_execution_with)
        self._native.begin(key)

    def end_window(self, key: str, sync_execution: bool = True, cancel: bool = False,
                   exact: Optional[bool] = None) -> Measurement:
        """Ends the open window `key` now and returns its :class:`Measurement` at once.

        `sync_execution` waits for the framework's queued GPU work first.  `cancel` discards the
        window (an empty Measurement, as Zeus gives).  `exact` (default: the monitor's) False
        reads the numbers right away, before the devices' next readings make them final."""
        if sync_execution:
            _sync.synchronize(self.sync_execution_with)
        window_id = self._native.end(key)
        if cancel:
            self._native.release(window_id)
            return Measurement(key, None, 0, self._keys, _empty_fields())
        return self._window(key, window_id, exact)

    def step(self, tokens: Optional[int] = None, step: Optional[int] = None) -> Measurement:
        """A training step ended now: its window runs from the previous step (or the monitor's
        opening) to now.  Under ``joules wrap`` it also tells wrap the exact boundary."""
        window_id = self._native.step(step or 0, tokens or 0)
        return self._window(f"step {step}" if step else "step", window_id, None)

    def totals(self) -> Measurement:
        """The numbers since the monitor opened, up to now (not final)."""
        return Measurement("totals", None, 0, self._keys,
                           self._unpack(self._native.totals(), self._keys))

    def _window(self, name: str, window_id: int, exact: Optional[bool]) -> Measurement:
        m = Measurement(name, self, window_id, self._keys)
        with self._lock:
            self._pending.add(m)
        if not (self.exact if exact is None else exact):
            # The numbers of the first reading after the window's end (the end woke the reading
            # thread: a few milliseconds), without waiting for the counters' next update; kept
            # as they are, and the window freed (a final reading has freed it already).
            while not m._resolve(_EARLY_POLL_MS) and m._data is not None \
                    and m._data["method"] == "none" and not self._native.closed:
                pass
            if m._monitor is not None:
                m._monitor = None
                with self._lock:
                    self._pending.discard(m)
                self._native.release(window_id)
        return m

    def _discard(self, m: Measurement) -> None:
        """A measurement dropped unread: its window is freed in the library."""
        if not self._native.closed and os.getpid() == self._pid:
            self._native.release(m._id)

    def _finished(self, m: Measurement) -> None:
        """A measurement became final: its window is freed in the library."""
        with self._lock:
            self._pending.discard(m)
        self._native.release(m._id)
        if self._log is not None:
            self._log.write(m)

    # -- results ---------------------------------------------------------------------------

    def _unpack(self, raw: Tuple[Any, ...], keys: Mapping[int, int]) -> _Fields:
        (final, duration, total, gpu_total, _cpu, _dram, error, method, energies, begin,
         end) = raw
        gpu: Dict[int, float] = {}
        cpu: Dict[int, float] = {}
        dram: Dict[int, float] = {}
        lost: List[int] = []
        devices: List[DeviceEnergy] = []
        for device, (energy, err, dev_method, dev_lost) in zip(self.devices, energies):
            devices.append(DeviceEnergy(device, energy, err, METHODS[dev_method], dev_lost))
            if device.kind == "gpu":
                gpu[keys[device.index]] = energy
                if dev_lost:
                    lost.append(keys[device.index])
            elif self._cpu_indices is None or device.index in self._cpu_indices:
                (cpu if device.kind == "cpu" else dram)[device.index] = energy
        return {"final": final, "time": duration, "total_energy": total,
                "gpu_total_energy": gpu_total, "gpu_energy": gpu, "cpu_energy": cpu or None,
                "dram_energy": dram or None, "error": error, "method": METHODS[method],
                "lost": lost, "devices": devices, "begin_monotonic": begin,
                "end_monotonic": end}

    # -- lifetime --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._native.closed

    def close(self) -> None:
        """Makes every window ended so far final, then stops the reading thread.  Idempotent."""
        if self._native.closed:
            return
        with self._lock:
            pending = list(self._pending)
        if os.getpid() == self._pid:  # in a forked child the reading thread is not there
            for m in pending:
                m._resolve(-1)
        self._native.close()
        if self._log is not None:
            self._log.close()
        _state.closed(self)

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(f"{d.kind} {d.index}" for d in self.devices)
        return f"<joules.Monitor [{names}]{' closed' if self.closed else ''}>"


def _empty_fields() -> _Fields:
    return {"final": True, "time": 0.0, "total_energy": 0.0, "gpu_total_energy": 0.0,
            "gpu_energy": {}, "cpu_energy": None, "dram_energy": None, "error": 0.0,
            "method": "none", "lost": [], "devices": [], "begin_monotonic": math.nan,
            "end_monotonic": math.nan}


def _gpu_choice(gpus: GpuSpec,
                gpu_indices: Optional[Sequence[int]]) -> Tuple[Optional[str], Dict[str, int]]:
    """The ``gpus`` option of the C library, and for Zeus's `gpu_indices` (CUDA indices after
    CUDA_VISIBLE_DEVICES) the CUDA index of each device entry named."""
    if gpu_indices is not None:
        if gpus is not None:
            raise InvalidArgumentError(1, "invalid argument", "give gpus or gpu_indices, not both")
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        entries = [e.strip() for e in visible.split(",")] if visible else None
        names: Dict[str, int] = {}
        for cuda_index in gpu_indices:
            if entries is None:
                names[str(cuda_index)] = cuda_index
            elif 0 <= cuda_index < len(entries):
                names[entries[cuda_index]] = cuda_index
            else:
                raise InvalidArgumentError(
                    1, "invalid argument", f"gpu_indices: {cuda_index} is not a CUDA device "
                    f"under CUDA_VISIBLE_DEVICES={escape(visible or '')}")
        if not names:
            raise InvalidArgumentError(1, "invalid argument", "gpu_indices is empty")
        return ",".join(names), names
    if gpus is None or isinstance(gpus, str):
        return gpus, {}
    if isinstance(gpus, int):
        return str(gpus), {}
    return ",".join(str(g) for g in gpus), {}


def _gpu_keys(devices: Sequence[Device], cuda_names: Mapping[str, int]) -> Dict[int, int]:
    """GPU index -> the key results use: the index itself, or the CUDA index it was named by."""
    keys: Dict[int, int] = {}
    for d in devices:
        if d.kind != "gpu":
            continue
        keys[d.index] = d.index
        for name, cuda_index in cuda_names.items():
            if name == str(d.index) or (name.startswith("GPU-") and d.uuid.startswith(name)):
                keys[d.index] = cuda_index
    return keys


class _ZeusLog:
    """ZeusMonitor's ``log_file``: ``start_time,window_name,elapsed_time,gpuN_energy,...``."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], keys: Sequence[int]) -> None:
        folder = os.path.dirname(os.fspath(path))
        if folder:
            os.makedirs(folder, exist_ok=True)
        import csv  # only for Zeus's log file

        self._file = open(path, "w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file, lineterminator="\n")
        self._keys = list(keys)
        self._writer.writerow(["start_time", "window_name", "elapsed_time",
                               *[f"gpu{k}_energy" for k in self._keys]])
        self._file.flush()
        self._lock = threading.Lock()

    def write(self, m: Measurement) -> None:
        data = m._data
        assert data is not None
        start = _time.time() - data["time"]
        with self._lock:
            if self._file.closed:
                return
            self._writer.writerow([start, m.name, data["time"],
                                   *[data["gpu_energy"].get(k, "") for k in self._keys]])
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
