"""Attribution from Python: peak snapshots and out-of-memory records that name the Python code
that allocated (the frame provider), against the simulated GPU."""

import json

from conftest import SIM_DIR

SETUP = """
import json
import gpumem
from gpumem import GPUMemTrace
from gpumem.testing import allocate, MB
held = []
def load_weights():
    held.append(allocate(nbytes=300 * MB))
def make_scratch():
    held.append(allocate(nbytes=100 * MB))
ALLOC_LINE = load_weights.__code__.co_firstlineno + 1
def run_out_of_memory():
    # More than the H200 holds; gpumem raises nothing new: the MemoryError is the allocator's.
    try:
        allocate(nbytes=200 * 1024 * MB)
    except MemoryError:
        return True
    return False
"""


def test_peak_snapshot_names_the_python_function(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(attribute=True, on_exit_report=False)
load_weights()
make_scratch()
held.pop().free()
snap = mtrace.peak_snapshot()
by_stack = snap.bytes_by_stack()
top = snap.stacks[by_stack[0][0]]
python = [f for f in top if f["language"] == "python" and "gpumem" not in (f["file"] or "")]
doc = json.loads(snap.to_json())
emit(top=snap.top_function(), what=snap.what, held=[b for _, b in by_stack],
     blocks=[b["bytes"] for b in snap.blocks], first=python[0], second=python[1],
     line=ALLOC_LINE, schema=doc["schema"], plain=GPUMemTrace().peak_snapshot() is None)
""")
    assert result["what"] == "peak"
    assert result["top"] == "load_weights"
    assert result["held"] == [300 * 2**20, 100 * 2**20]
    assert result["blocks"] == [300 * 2**20, 100 * 2**20]
    assert result["first"]["function"] == "load_weights"
    assert result["first"]["file"] == "<string>"
    assert result["first"]["line"] == result["line"]
    assert result["second"]["function"] == "<module>"
    assert result["schema"] == "gpumem.attribution/1"
    assert result["plain"] is True


def test_a_snapshot_is_read_through_the_binding_as_the_library_writes_it(sim):
    result = sim.run(SETUP + """
read = []
real_loads = json.loads
def counting_loads(*args, **kwargs):
    read.append(1)
    return real_loads(*args, **kwargs)
json.loads = counting_loads
mtrace = GPUMemTrace(attribute=True, on_exit_report=False)
load_weights()
snap = mtrace.peak_snapshot()
fields = dict(level=snap.level_bytes, live=snap.live_bytes,
              blocks=[b["bytes"] for b in snap.blocks], failure=snap.failure,
              attributed=snap.attributed, device=snap.device)
parsed_by_snapshot = len(read)
json.loads = real_loads
emit(fields=fields, parsed=parsed_by_snapshot,
     same=snap._document == json.loads(snap.to_json()))
""")
    # No JSON text is read to make the snapshot's fields: the binding hands over the model.
    assert result["parsed"] == 0
    assert result["fields"]["live"] == 300 * 2**20
    assert result["fields"]["blocks"] == [300 * 2**20]
    assert result["fields"]["level"] >= result["fields"]["live"]  # the level holds the blocks
    assert result["fields"]["failure"] is None
    assert result["fields"]["attributed"] is True
    assert result["fields"]["device"] == 0
    # The same document as the writer's text.
    assert result["same"] is True


def test_last_oom_names_the_holder_and_the_failed_request(sim):
    result = sim.run(SETUP + """
before = gpumem.last_oom()
mtrace = GPUMemTrace(attribute=True, on_exit_report=False)
load_weights()
make_scratch()
failed = run_out_of_memory()
oom = gpumem.last_oom()
emit(before=before is None, failed=failed, what=oom.what, top=oom.top_function(),
     request=oom.failure["bytes"], error=oom.failure["error"],
     held=[b for _, b in oom.bytes_by_stack()])
""")
    assert result["before"] is True
    assert result["failed"] is True
    assert result["what"] == "oom"
    assert result["top"] == "load_weights"
    assert result["request"] == 200 * 1024 * 2**20
    assert result["error"] == "CUDA_ERROR_OUT_OF_MEMORY"
    assert result["held"] == [300 * 2**20, 100 * 2**20]


def test_without_a_gpu_attribution_gives_none(sim):
    result = sim.run("""
import warnings
warnings.simplefilter("ignore")
import gpumem
from gpumem.testing import allocate
mtrace = gpumem.GPUMemTrace(attribute=True, on_exit_report=False)
try:
    allocate(1)
except MemoryError:
    pass
mtrace.stop()
emit(snapshot=mtrace.peak_snapshot() is None, oom=gpumem.last_oom() is None,
     source=mtrace.source)
""", GPUMEM_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
        GPUMEM_CUDA_LIBRARY="/nonexistent/libcuda.so.1",
        GPUMEM_CUPTI_LIBRARY="/nonexistent/libcupti.so.13")
    assert result["source"] == "none"
    assert result["snapshot"] is True
    assert result["oom"] is True


def test_out_of_memory_without_attribution_names_the_request(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(on_exit_report=False)  # the exact source, no attribution
load_weights()
run_out_of_memory()
oom = gpumem.last_oom()
emit(snapshot=mtrace.peak_snapshot() is None, attributed=oom.attributed, blocks=oom.blocks,
     request=oom.failure["bytes"], top=oom.top_function(), report=oom.describe(),
     others=oom.other_processes, age=oom.other_processes_age_s)
""")
    assert result["snapshot"] is True
    assert result["attributed"] is False
    assert result["blocks"] == []
    assert result["request"] == 200 * 1024 * 2**20
    assert result["top"] is None
    assert result["report"][0].startswith("gpumem: out of memory: 204800.0 MB requested on GPU 0")
    assert result["report"][1:] == ["  (no blocks recorded: attribution was off)"]

    assert result["others"] == []
    assert result["age"] == 0.0  # NVML was read at the failure: nobody else, known


def test_out_of_memory_names_the_other_processes_on_the_device(sim):
    tool = SIM_DIR / "gpumem-sim"
    result = sim.run(SETUP + f"""
import subprocess
other = subprocess.Popen([{str(tool)!r}, "workload", "alloc a 700MiB; print ready; sleep 60s"],
                         stdout=subprocess.PIPE, text=True)
assert other.stdout.readline().strip() == "ready"
mtrace = GPUMemTrace(attribute=True, on_exit_report=False)
load_weights()
run_out_of_memory()
oom = gpumem.last_oom()
other.kill()
other.wait()
emit(others=oom.other_processes, age=oom.other_processes_age_s, pid=other.pid,
     report=oom.describe())
""")
    assert result["age"] == 0.0
    assert result["others"] == [{"pid": result["pid"], "name": "gpumem-sim",
                                 "used_bytes": 700 * 2**20}]
    assert result["report"][-1] == (f"  other processes on the device held 700.0 MB: "
                                    f"pid {result['pid']} gpumem-sim 700.0 MB")


def test_a_python_thread_names_its_own_frames(sim):
    result = sim.run(SETUP + """
import threading
mtrace = GPUMemTrace(attribute=True, on_exit_report=False)
def worker():
    make_scratch()
thread = threading.Thread(target=worker)
thread.start()
thread.join()
load_weights()
snap = mtrace.peak_snapshot()
names = [[f["function"] for f in stack if f["language"] == "python"] for stack in snap.stacks]
emit(top=snap.top_function(), names=names, held=[b for _, b in snap.bytes_by_stack()])
""")
    assert result["top"] == "load_weights"
    assert result["held"] == [300 * 2**20, 100 * 2**20]
    scratch = [names for names in result["names"] if "make_scratch" in names]
    assert len(scratch) == 1
    assert scratch[0][scratch[0].index("make_scratch") + 1] == "worker"
    assert "<module>" not in scratch[0]  # the thread's chain, not the main thread's


def test_top_function_names_the_python_frame_of_a_call_that_released_the_gil(sim):
    # ctypes releases the GIL around cuMemAlloc, as PyTorch's bindings do: the package's
    # provider (which needs the GIL) sees nothing there; the library reads the thread's own
    # frames. top_function() and allocated_by() name the frame every view names.
    result = sim.run("""
import ctypes, os
import gpumem
cuda = ctypes.CDLL(os.environ["GPUMEM_CUDA_LIBRARY"])
assert cuda.cuInit(0) == 0
device, context = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
assert cuda.cuCtxSetCurrent(context) == 0
mtrace = gpumem.GPUMemTrace(attribute=True, on_exit_report=False)
def load_weights():
    pointer = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(300 << 20)) == 0
    return pointer
weights = load_weights()
snap = mtrace.peak_snapshot()
stack = snap.bytes_by_stack()[0][0]
emit(top=snap.top_function(), by=snap.allocated_by(stack), held=[b for _, b in snap.bytes_by_stack()],
     line=load_weights.__code__.co_firstlineno + 2, report=snap.describe())
""")
    assert result["top"] == "load_weights"
    assert result["held"] == [300 * 2**20]
    assert result["by"].startswith("load_weights (")
    assert result["by"].endswith(f":{result['line']})")
    assert result["report"][1].endswith(result["by"])
