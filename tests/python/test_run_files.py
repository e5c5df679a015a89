"""Run files from Python: gpumem.read_run() reads a ``gpumem run --json`` file through the
library's one reader of gpumem.run/1 into its one model (no JSON parsed in Python), with the
figures the simulated GPU held, and writes it back to the bytes gpumem run wrote."""

import subprocess
from pathlib import Path

import pytest

import gpumem
from conftest import SIM_DIR, sim_env

# The gpumem command of the build tree this package was built in (tests run against build/).
GPUMEM = Path(gpumem.__file__).resolve().parent.parent.parent / "bin" / "gpumem"


@pytest.mark.skipif(not GPUMEM.exists(), reason="the gpumem command is not beside this package")
def test_a_real_run_reads_back_with_the_simulated_gpus_figures(tmp_path):
    path = tmp_path / "run.json"
    env = sim_env(tmp_path / "sim.state")  # CUDA 0: an idle H200
    completed = subprocess.run(
        [str(GPUMEM), "run", "--mode", "exact", "--device", "0", "--host", "node-1", "--json",
         str(path), "--",
         str(SIM_DIR / "gpumem-sim"), "workload", "alloc a 100MiB; spike 50MiB 1ms; free a"],
        env=env, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    run = gpumem.read_run(str(path))
    assert run.mode == "exact" and run.requested_mode == "exact"
    assert run.host == "node-1"
    assert run.command[1:] == ["workload", "alloc a 100MiB; spike 50MiB 1ms; free a"]
    assert run.exit_code == 0 and run.signal is None
    assert len(run.devices) == 1
    device = run.devices[0]
    assert device.name == "NVIDIA H200"
    assert device.exact_peak_bytes == 150 * 2**20  # the events' peak: 100 MiB and the 50 MiB spike
    assert device.peak_bytes >= device.exact_peak_bytes
    assert run.exact_processes == 1
    assert all(p.mode == "exact" and p.reason is None for p in run.processes)
    assert run.budgets == [] and run.budget_exceeded is False
    # The model holds every field: the library's writer gives back what gpumem run wrote.
    assert run.to_json() == path.read_text()


def test_a_run_file_is_read_field_by_field(tmp_path):
    path = tmp_path / "old.json"
    # A file from before times, hosts and ranks were recorded.
    path.write_text('{"schema": "gpumem.run/1", "command": ["python3", "train.py"], '
                    '"exit_code": 137, "signal": "SIGKILL", "elapsed_s": 2.5, "interval_s": 0.01, '
                    '"mode": "sampled", "devices": [{"device": 1, "nvml_index": 3, '
                    '"name": "NVIDIA A100", "uuid": "GPU-1", "total_bytes": 42949672960, '
                    '"peak_bytes": 1073741824, "exact_peak_bytes": null}]}')
    run = gpumem.read_run(str(path))
    assert (run.exit_code, run.signal, run.elapsed_s) == (137, "SIGKILL", 2.5)
    assert run.start_unix_s is None and run.end_unix_s is None and run.host == ""
    assert run.gpumem_rank is None and run.ranks == []
    (device,) = run.devices
    assert (device.device, device.nvml_index, device.uuid) == (1, 3, "GPU-1")
    assert (device.total_bytes, device.peak_bytes) == (42949672960, 1073741824)
    assert device.exact_peak_bytes is None and device.quantity == "process_footprint"


def test_what_is_wrong_with_a_file_is_named(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"schema": "gpumem.run/1", "command": [], "exit_code": 0, "elapsed_s": 1, '
                    '"interval_s": 0.01, "mode": "exact", '
                    '"devices": [{"device": 0, "total_bytes": 1, "peak_bytes": -5}]}')
    with pytest.raises(ValueError, match=r"bad\.json: devices\[0\]\.peak_bytes: expected a number "
                                         r"of bytes, found -5$"):
        gpumem.read_run(str(path))
    path.write_text('{"schema": "gpumem.report/1"}')
    with pytest.raises(ValueError, match="schema gpumem.report/1 is not a run file"):
        gpumem.read_run(str(path))
    with pytest.raises(ValueError, match="No such file or directory"):
        gpumem.read_run(str(tmp_path / "missing.json"))
