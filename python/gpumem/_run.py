"""Run files: what ``gpumem run --json`` wrote (gpumem.run/1, docs/cli.md), read by the library's
one reader of the format into its one model."""

from __future__ import annotations

from . import _native


def read_run(path: str) -> _native.RunDocument:
    """The run file at ``path`` (written by ``gpumem run --json``, schema gpumem.run/1), read and
    checked by gpumem's C++ reader: every field of the document is an attribute (``mode``,
    ``devices[i].peak_bytes``, ``ranks``, ``budgets``, ...; null fields are ``None``).
    ``to_json()`` writes it back as ``gpumem run`` does. ``ValueError`` names the file and what
    is wrong with it (another schema, a field missing or mistyped, by its path).

    Example: a run's peak on its first GPU::

        >>> import os, tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as out:
        ...     _ = out.write('{"schema": "gpumem.run/1", "command": ["python3", "train.py"], '
        ...                   '"exit_code": 0, "elapsed_s": 1.5, "interval_s": 0.01, '
        ...                   '"mode": "exact", "devices": [{"device": 0, "name": "NVIDIA H200", '
        ...                   '"total_bytes": 150754820096, "peak_bytes": 157286400}]}')
        >>> run = gpumem.read_run(out.name)
        >>> run.mode, run.devices[0].name, run.devices[0].peak_bytes // 2**20
        ('exact', 'NVIDIA H200', 150)
        >>> os.unlink(out.name)
    """
    return _native.read_run(path)
