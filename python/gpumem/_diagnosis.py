"""Why gpumem reads zeros: the one place that picks the reason its warnings and errors name."""

from __future__ import annotations

from typing import Optional

from . import _native

# How the package's notes about an id a caller passed begin ("GPU id 'cpu': not a CUDA device;
# zeros returned"): they say what one call was given, not why no GPU can be measured.
ID_NOTE = "GPU id "


def first_cause() -> Optional[str]:
    """The first cause ``gpumem.diagnostics()`` lists (oldest first, as the core loaded the
    driver's libraries: e.g. the CUDA driver's or NVML's library not found, before CUPTI's),
    notes about ids that callers passed counting only when nothing else is recorded; None when
    nothing is."""
    recorded = _native.diagnostics()
    causes = [message for message in recorded if not message.startswith(ID_NOTE)] or recorded
    return causes[0] if causes else None


def no_gpu_reason() -> str:
    """``first_cause()``, or ``"no GPU"`` when nothing is recorded."""
    return first_cause() or "no GPU"
