"""NVIDIA's own Python bindings, run against the simulated GPU.

Each scenario runs in a fresh interpreter whose dynamic loader finds the simulated libraries first
(LD_LIBRARY_PATH=<build>/sim), as NVIDIA's bindings dlopen ``libnvidia-ml.so.1`` and
``libcuda.so.1`` by name. The build is found from GPUMEM_SIM_DIR (set by CTest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SIM_DIR = Path(os.environ.get("GPUMEM_SIM_DIR", ""))

# Two devices whose CUDA order differs from NVML's, each with a context cost: CUDA 0 = NVML 1.
CONFIG = {
    "driver_version": "580.95.05",
    "cuda_driver_version": 13000,
    "cuda_order": [1, 0],
    "devices": [
        {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-aaaaaaaa-1111-4000-8000-000000000000",
         "pci_bus_id": "00000000:3B:00.0", "total_mib": 40960, "reserved_mib": 256,
         "context_mib": 300},
        {"name": "NVIDIA H200", "uuid": "GPU-bbbbbbbb-2222-4000-8000-000000000001",
         "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542,
         "context_mib": 500},
    ],
}
MIB = 1 << 20

_PREAMBLE = """\
import json as _json
def emit(**values):
    print("@@" + _json.dumps(values), flush=True)
"""


def _values(stdout: str) -> dict:
    values: dict = {}
    for line in stdout.splitlines():
        if line.startswith("@@"):
            values.update(json.loads(line[2:]))
    return values


class Gpu:
    """A private simulated GPU (its own state file) and the ways to look at it."""

    def __init__(self, directory: Path):
        if not (SIM_DIR / "libcuda.so.1").exists():
            pytest.fail(f"the simulated GPU is not built at {SIM_DIR!s} (GPUMEM_SIM_DIR)")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPUMEM_SIM_FAULTS",
                         "CUDA_INJECTION64_PATH")
        }
        self.env.update(
            LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(SIM_DIR),
                                                          os.environ.get("LD_LIBRARY_PATH")])),
            GPUMEM_SIM_STATE=str(directory / "sim.state"),
            GPUMEM_SIM_CONFIG=json.dumps(CONFIG),
            GPUMEM_SIM_TOOL=str(SIM_DIR / "gpumem-sim"),
            PYTHONDONTWRITEBYTECODE="1",
        )

    def show(self) -> dict:
        """What the simulator holds (``gpumem-sim show``)."""
        out = subprocess.run([str(SIM_DIR / "gpumem-sim"), "show"], env=self.env, check=True,
                             capture_output=True, text=True, timeout=30)
        return json.loads(out.stdout)

    def run(self, code: str, timeout: float = 60) -> dict:
        """Runs ``code`` in a fresh interpreter on this GPU; ``emit(k=v)`` returns values."""
        done = subprocess.run([sys.executable, "-c", _PREAMBLE + textwrap.dedent(code)],
                              env=self.env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            pytest.fail(f"scenario exited with {done.returncode}\nstdout:\n{done.stdout}\n"
                        f"stderr:\n{done.stderr}")
        return _values(done.stdout)

    def start_workload(self, script: str) -> subprocess.Popen:
        """``gpumem-sim workload`` in the background, returned once it printed ``ready``."""
        process = subprocess.Popen([str(SIM_DIR / "gpumem-sim"), "workload", script],
                                   env=self.env, stdout=subprocess.PIPE, text=True)
        line = process.stdout.readline()
        if line.strip() != "ready":
            process.kill()
            pytest.fail(f"the workload did not start: {line!r}")
        return process


@pytest.fixture
def gpu(tmp_path) -> Gpu:
    return Gpu(tmp_path)
