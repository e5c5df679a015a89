"""Python frameworks, detected and never required, and the device ids they use.

gpumem never imports torch or CuPy: it looks in ``sys.modules`` for frameworks the program has
already imported, so importing gpumem stays cheap and cannot fail because of them.
"""

from __future__ import annotations

import gc
import operator
import sys
from typing import Any, Optional

from . import _diagnosis, _native

_hook_id: Optional[int] = None

# The largest ordinal the native core takes (a C int).
_MAX_ORDINAL = 2**31 - 1


def _torch_with_cuda():
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken CUDA build answers with errors, not False
        return None


def _cupy_with_cuda():
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    try:
        return cupy if cupy.cuda.is_available() else None
    except Exception:
        return None


def current_device() -> int:
    """The CUDA ordinal the program works on: torch's current device, else CuPy's, else the
    calling thread's current CUDA device as the driver knows it (``_native.current_device``)."""
    torch = _torch_with_cuda()
    if torch is not None:
        try:
            return int(torch.cuda.current_device())
        except Exception:  # torch says CUDA is there but cannot start it: ask the driver
            pass
    cupy = _cupy_with_cuda()
    if cupy is not None:
        try:
            return int(cupy.cuda.runtime.getDevice())
        except Exception:
            pass
    return _native.current_device


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages about a caller's argument; an
    object whose ``__repr__`` fails (or recurses) is shown by its type's name."""
    try:
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
    except Exception:  # noqa: BLE001 - a hostile object's repr must not fail the caller
        try:
            text = f"<{type(value).__qualname__} object>"
        except Exception:  # noqa: BLE001
            text = "<object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _invalid(id: object, why: str) -> None:
    _native.note_diagnostic(f"{_diagnosis.ID_NOTE}{shown(id)}: {why}; zeros returned")


def _cuda_index(kind: object, index: object, id: object) -> Optional[int]:
    """The ordinal of a ``cuda`` device named as (type, index): index None is the current
    device."""
    if not (isinstance(kind, str) and str.__eq__(kind, "cuda")):
        _invalid(id, "not a CUDA device")
        return None
    if index is None:
        return current_device()
    return _ordinal(index, id)


def _ordinal(index: Any, id: object) -> Optional[int]:
    try:
        value = operator.index(index)  # int, bool, numpy integers
    except TypeError:
        _invalid(id, "not a device id")
        return None
    if type(value) is not int:  # operator.index gives an int subclass as it is
        value = int.__index__(value)
    if not 0 <= value <= _MAX_ORDINAL:
        _invalid(id, "no such device")
        return None
    return value


def _string_device(id: str) -> Optional[int]:
    """``"cuda"`` or ``"cuda:N"``, N in ASCII digits with no sign, underscore, space or leading
    zero, as torch parses device strings (``int()`` would also read ``"0_1"``, ``"+1"``, ``" 1"``
    and other scripts' digits such as ``"١"`` as numbers)."""
    kind, colon, number = str.partition(str.__str__(id), ":")
    if not colon:
        return _cuda_index(kind, None, id)
    if kind != "cuda":
        _invalid(id, "not a CUDA device")
        return None
    if not (number.isascii() and number.isdigit()) or (len(number) > 1 and number[0] == "0"):
        _invalid(id, "not a device id")
        return None
    if len(number) > len(str(_MAX_ORDINAL)):
        _invalid(id, "no such device")
        return None
    return _ordinal(int(number), id)


def _resolve(id: object) -> Optional[int]:
    if id is None:
        return current_device()
    if isinstance(id, str):
        return _string_device(id)
    if isinstance(id, (int, float)):
        return _ordinal(id, id)
    if hasattr(id, "type") and hasattr(id, "index"):
        return _cuda_index(getattr(id, "type"), getattr(id, "index"), id)
    return _ordinal(id, id)


def resolve_device(id: object) -> Optional[int]:
    """The CUDA ordinal that ``id`` names, or None (with a diagnostic) where it names none.

    ``None`` is the current device; ints and numpy integers are ordinals; ``torch.device`` (or
    anything with ``type`` and ``index``) and strings ``"cuda"`` / ``"cuda:N"`` (N in ASCII
    digits, as torch writes it) are the device they name. Everything else (negative or huge
    numbers, floats, ``"cpu"``, other strings, and objects whose ``__index__``, ``__getattr__``,
    ``__eq__`` or ``__repr__`` raise or recurse) names no device: fastai.utils.mem answered those
    with zeros, and so do the callers here. Never raises (but for ``KeyboardInterrupt`` and the
    other exceptions that are not ``Exception``s)."""
    try:
        return _resolve(id)
    except Exception as error:  # noqa: BLE001 - the documented API never raises for an id
        try:
            _invalid(id, f"not a device id ({type(error).__name__})")
        except Exception:  # noqa: BLE001 - not even for a failure to describe it
            pass
        return None


def note_not_visible(ordinal: int) -> None:
    """Records why a valid-looking ordinal read zeros, when no visible device has it."""
    count = _native.device_count()
    if ordinal >= count:
        _invalid(ordinal, f"no such device ({count} visible)")


def frameworks_loaded() -> bool:
    return "torch" in sys.modules or "cupy" in sys.modules


def release_caches() -> None:
    """Gives the frameworks' cached device blocks back to the driver (the native hook calls this
    before every ``_no_cache`` read and trace endpoint)."""
    torch = _torch_with_cuda()
    cupy = _cupy_with_cuda()
    if torch is None and cupy is None:
        return
    gc.collect()  # tensors kept alive only by reference cycles hold cached blocks
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def ensure_cache_hook() -> None:
    """Registers the native cache-release hook the first time a framework is seen loaded."""
    global _hook_id
    if _hook_id is None and frameworks_loaded():
        _hook_id = _native.add_framework_cache_hook()
