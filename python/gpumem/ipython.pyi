from typing import Any, List, NamedTuple, Optional

from . import TraceBytes as TraceBytes

class CellMemory(NamedTuple):
    cell: int
    delta_used: int
    delta_peaked: int
    bytes: TraceBytes

history: List[CellMemory]

class CellTracer:
    enabled: bool
    attribute: bool
    records: List[CellMemory]
    def __init__(self, shell: Any, records: List[CellMemory]) -> None: ...
    def pre_run_cell(self, info: Any = None) -> None: ...
    def post_run_cell(self, result: Any = None) -> None: ...
    def magic(self, line: str) -> None: ...

def load_ipython_extension(shell: Any) -> None: ...
def unload_ipython_extension(shell: Any) -> None: ...

__all__ = [
    "CellMemory",
    "CellTracer",
    "TraceBytes",
    "history",
    "load_ipython_extension",
    "unload_ipython_extension",
]
