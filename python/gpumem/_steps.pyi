# Types only: the docstrings, with their examples, are the runtime module's (help() shows them).
from typing import Any, List, NamedTuple, Optional, Tuple

MIB: int

class StepPeak(NamedTuple):
    window: str
    number: int
    epoch: int
    device: int
    mode: str
    quantity: str
    start: int
    peak: int
    rise: int
    end: int
    device_used_peak: int
    covers: Tuple[str, ...]

class StepPeaks:
    steps_done: int
    epoch: int
    last_step: List[StepPeak]
    last_epoch: List[StepPeak]
    def __init__(self, devices: Any = None, *, source: str = "automatic") -> None: ...
    @property
    def devices(self) -> List[int]: ...
    @property
    def modes(self) -> List[str]: ...
    def start_epoch(self, epoch: Optional[int] = None) -> None: ...
    def end_epoch(self) -> List[StepPeak]: ...
    def start_step(self) -> None: ...
    def end_step(self) -> List[StepPeak]: ...
    def take_highest(self) -> List[StepPeak]: ...
    def close(self) -> None: ...
    def __enter__(self) -> StepPeaks: ...
    def __exit__(self, *exc: object) -> None: ...
