"""Waiting for the GPU work a framework has queued, so that a window's edge is where the work is.

PyTorch, JAX and CuPy return from a call before the GPU has run it; a window ended right after
would end before its work.  Like Zeus, joules waits for the framework at each window edge.  A
framework is only ever used when the program has imported it already: joules never imports one
(that alone costs seconds) and never creates a CUDA context that the program did not."""
from __future__ import annotations

import sys
TYPE_CHECKING = False  # not typing's: `import joules` stays free of it
if TYPE_CHECKING:
    from typing import Optional

__all__ = ["FRAMEWORKS", "synchronize"]

FRAMEWORKS = ("auto", "torch", "jax", "cupy")


def _torch() -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    cuda = getattr(torch, "cuda", None)
    # is_initialized: the program has used CUDA; synchronising otherwise would create a context.
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()


def _jax() -> None:
    jax = sys.modules.get("jax")
    if jax is None:
        return
    barrier = getattr(jax, "effects_barrier", None)
    if barrier is not None:
        barrier()
    # Work already dispatched runs in order on each device: a value put after it is ready only
    # when the work before it is done.
    for device in jax.local_devices():
        if device.platform == "gpu":
            jax.device_put(0.0, device=device).block_until_ready()


def _cupy() -> None:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return
    cupy.cuda.Device().synchronize()


_BY_NAME = {"torch": (_torch,), "jax": (_jax,), "cupy": (_cupy,), "auto": (_torch, _jax, _cupy)}


def synchronize(framework: Optional[str]) -> None:
    """Waits for the queued GPU work of `framework` ("auto": each one imported); None: nothing."""
    if not framework:
        return
    for sync in _BY_NAME[framework]:
        sync()
