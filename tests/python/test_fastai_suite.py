"""fastai's own tests for fastai.utils.mem (tests/python/fastai/test_utils_mem.py, vendored with
only its imports and allocation helpers changed) pass on gpumem: on the simulated GPUs, and, as
fastai's suite itself required ("validate that it runs w/o GPU"), where there is none."""

import subprocess
import sys
from pathlib import Path

import pytest

FASTAI = Path(__file__).resolve().parent / "fastai"

CASES = {
    # fastai's 7 tests; the 4 marked `cuda` are skipped without a GPU, as in fastai's CI.
    "two-gpus": ({}, "7 passed"),
    "no-visible-gpu": ({"CUDA_VISIBLE_DEVICES": ""}, "3 passed, 4 skipped"),
    "no-driver": ({"GPUMEM_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
                   "GPUMEM_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"}, "3 passed, 4 skipped"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fastais_test_utils_mem_passes(sim, case):
    environment, summary = CASES[case]
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "--confcutdir", str(FASTAI), "--rootdir", str(FASTAI), str(FASTAI)],
        env=sim.env(PYTHONDONTWRITEBYTECODE=1, **environment),
        capture_output=True, text=True, timeout=120,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert summary in output.splitlines()[-1], output
