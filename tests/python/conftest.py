"""Puts the tests on a private simulated GPU.

The native core loads the NVIDIA libraries once per process, so most tests run their scenario in
a fresh interpreter (the ``sim`` fixture) with its own state file, config, faults and
CUDA_VISIBLE_DEVICES. This process itself is put on a simulated GPU before gpumem loads anything,
for the tests that need pytest's own capture (capsys).

The build is found from GPUMEM_SIM_DIR (set by CTest) or from where ``gpumem`` is imported
(``<build>/python/gpumem`` → ``<build>/sim``).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

# Two devices whose CUDA order differs from NVML's (tests/support/sim_gpu.hpp's kTwoGpus):
# CUDA 0 = NVML 1 = H200, CUDA 1 = NVML 0 = A100-40GB.
TWO_GPUS = {
    "driver_version": "580.95.05",
    "cuda_order": [1, 0],
    "devices": [
        {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-aaaaaaaa-1111-4000-8000-000000000000",
         "pci_bus_id": "00000000:3B:00.0", "total_mib": 40960, "reserved_mib": 256,
         "context_mib": 0},
        {"name": "NVIDIA H200", "uuid": "GPU-bbbbbbbb-2222-4000-8000-000000000001",
         "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542,
         "context_mib": 0},
    ],
}
H200_UUID = TWO_GPUS["devices"][1]["uuid"]
A100_UUID = TWO_GPUS["devices"][0]["uuid"]
# (total, free, used) MB when idle, by CUDA ordinal. NVML v2 reports total = reserved + used +
# free; fastai.utils.mem's used is total - free, so the driver's reservation reads as used.
H200_RESERVED, A100_RESERVED = 542, 256
H200_IDLE = (143771, 143771 - H200_RESERVED, H200_RESERVED)
A100_IDLE = (40960, 40960 - A100_RESERVED, A100_RESERVED)


def with_allocated(idle, mb):
    """(total, free, used) of a device holding ``mb`` MB more than when idle."""
    return [idle[0], idle[1] - mb, idle[2] + mb]

# fastai's own suite (tests/python/fastai) runs in pytest processes of its own, each on a GPU of
# its own: see test_fastai_suite.py.
collect_ignore = ["fastai"]

_CLEARED = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPUMEM_SIM_FAULTS", "CUDA_INJECTION64_PATH")


def _package_root() -> Path:
    import gpumem  # the package under test; importing it loads no driver

    return Path(gpumem.__file__).resolve().parent.parent


def _sim_dir() -> Path:
    named = os.environ.get("GPUMEM_SIM_DIR")
    sim = Path(named) if named else _package_root().parent / "sim"
    if not (sim / "libnvidia-ml.so.1").exists():
        raise RuntimeError(
            f"the simulated GPU is not built at {sim}: build the gpumem_sim target, or set "
            "GPUMEM_SIM_DIR to <build>/sim"
        )
    return sim


SIM_DIR = _sim_dir()
PYTHONPATH = str(_package_root())


def sim_env(state: Path, config=None, faults=None, **extra) -> dict:
    """The environment of a process on the simulated GPU; extra values of None unset a
    variable."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(
        GPUMEM_NVML_LIBRARY=str(SIM_DIR / "libnvidia-ml.so.1"),
        GPUMEM_CUDA_LIBRARY=str(SIM_DIR / "libcuda.so.1"),
        GPUMEM_CUPTI_LIBRARY=str(SIM_DIR / "libcupti.so.13"),
        GPUMEM_SIM_STATE=str(state),
        GPUMEM_SIM_CONFIG=json.dumps(config if config is not None else TWO_GPUS),
        PYTHONPATH=os.pathsep.join(filter(None, [PYTHONPATH, os.environ.get("PYTHONPATH")])),
    )
    if faults:
        env["GPUMEM_SIM_FAULTS"] = faults
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


# This process: on its own simulated GPU before any test touches gpumem's native core.
_SESSION_FOLDER = tempfile.mkdtemp(prefix="gpumem-pytest-")
_SESSION_STATE = Path(_SESSION_FOLDER) / "session.state"
atexit.register(shutil.rmtree, _SESSION_FOLDER, ignore_errors=True)
os.environ.update(sim_env(_SESSION_STATE))
for _name in _CLEARED:
    os.environ.pop(_name, None)

_PREAMBLE = """\
import json as _json
def emit(**values):
    print("@@" + _json.dumps(values), flush=True)
"""


class Result:
    def __init__(self, completed: subprocess.CompletedProcess):
        self.returncode = completed.returncode
        self.stderr = completed.stderr
        self.values: dict = {}
        lines = []
        for line in completed.stdout.splitlines():
            if line.startswith("@@"):
                self.values.update(json.loads(line[2:]))
            else:
                lines.append(line)
        self.lines = lines  # what the script printed, emit() lines left out

    def __getitem__(self, key):
        return self.values[key]


class Sim:
    """A private simulated GPU for one test, and a way to run Python scenarios on it."""

    def __init__(self, directory: Path):
        self.state = directory / "sim.state"
        self.config = TWO_GPUS
        self.faults = None

    def env(self, **extra) -> dict:
        return sim_env(self.state, self.config, self.faults, **extra)

    def run(self, code: str, check: bool = True, timeout: float = 60, **extra_env) -> Result:
        """Runs ``code`` (dedented) in a fresh interpreter on this GPU; ``emit(k=v)`` in the
        script returns values to the test as ``result[k]``."""
        completed = subprocess.run(
            [sys.executable, "-c", _PREAMBLE + textwrap.dedent(code)],
            env=self.env(**extra_env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        result = Result(completed)
        if check and completed.returncode != 0:
            pytest.fail(
                f"scenario exited with {completed.returncode}\nstdout:\n{completed.stdout}\n"
                f"stderr:\n{completed.stderr}"
            )
        return result


@pytest.fixture
def sim(tmp_path) -> Sim:
    return Sim(tmp_path)
