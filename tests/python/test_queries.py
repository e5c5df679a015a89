"""The seed's queries, with the simulated devices' numbers (see conftest.TWO_GPUS)."""

import pytest

from conftest import (A100_IDLE, A100_RESERVED, A100_UUID, H200_IDLE, H200_RESERVED, H200_UUID,
                      with_allocated)


def test_b2mb_truncates_toward_zero_like_the_seed():
    from gpumem import b2mb

    assert b2mb(0) == 0
    assert b2mb(2**20 - 1) == 0
    assert b2mb(2**20) == 1
    assert b2mb(5 * 2**20 + 7) == 5
    assert b2mb(-(2**20 + 1)) == -1  # int(-(2**20+1)/2**20) == -1
    assert b2mb(1.5 * 2**20) == 1
    assert b2mb(2**80 + 2**20) == 2**60 + 1  # exact where float division is not


def test_gpumemory_is_fastais_namedtuple_with_reserved_beside_it():
    import pickle

    from gpumem import GPUMemory

    memory = GPUMemory(1, 2, 3)
    assert memory._fields == ("total", "free", "used")
    assert memory == (1, 2, 3)
    assert (memory.total, memory.free, memory.used) == (1, 2, 3)
    assert repr(memory) == "GPUMemory(total=1, free=2, used=3)"
    assert memory.reserved == 0
    reading = GPUMemory(10, 4, 6, 2)
    total, free, used = reading  # three values, as fastai.utils.mem's
    assert (total, free, used, reading.reserved) == (10, 4, 6, 2)
    assert reading == (10, 4, 6) and len(reading) == 3
    assert pickle.loads(pickle.dumps(reading)).reserved == 2
    assert reading._replace(free=5) == (10, 5, 6)


def test_idle_readings_follow_cuda_order(sim):
    result = sim.run("""
        import gpumem
        emit(current=gpumem.gpu_mem_get(), one=gpumem.gpu_mem_get(1),
             all=gpumem.gpu_mem_get_all(), free=gpumem.gpu_mem_get_free(),
             used=gpumem.gpu_mem_get_used(), best=gpumem.gpu_with_max_free_mem(),
             typename=type(gpumem.gpu_mem_get()).__name__)
    """)
    assert result["current"] == list(H200_IDLE)
    assert result["one"] == list(A100_IDLE)
    assert result["all"] == [list(H200_IDLE), list(A100_IDLE)]
    assert result["free"] == H200_IDLE[1]
    assert result["used"] == H200_RESERVED  # total - free: an idle GPU reads used > 0
    assert result["best"] == [0, H200_IDLE[1]]
    assert result["typename"] == "GPUMemory"


def test_used_is_total_minus_free_and_reserved_is_apart(sim):
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        held = allocate(nbytes=5 * 2**20 + 123, device=1)
        memory = gpumem.gpu_mem_get(1)
        emit(memory=memory, reserved=memory.reserved, reserved0=gpumem.gpu_mem_get(0).reserved,
             all_reserved=[m.reserved for m in gpumem.gpu_mem_get_all()],
             fast=gpumem.gpu_mem_get_used_fast(gpumem.gpu_handle(1)),
             bytes=gpumem._native.gpu_mem_get_bytes(1))
    """)
    total, free, used, reserved = result["bytes"]
    assert used == 5 * 2**20 + 123 and reserved == A100_RESERVED * 2**20  # NVML v2's own fields
    # fastai.utils.mem's MB: each of total, free and total - free truncated
    assert result["memory"] == [total >> 20, free >> 20, (total - free) >> 20]
    assert result["memory"] == [A100_IDLE[0], A100_IDLE[1] - 6, A100_RESERVED + 5]
    assert result["fast"] == A100_RESERVED + 5
    assert result["reserved"] == A100_RESERVED
    assert result["reserved0"] == H200_RESERVED
    assert result["all_reserved"] == [H200_RESERVED, A100_RESERVED]


BAD_IDS = ["2", "7", "99", "-1", "-5", "2**40", "-2**70", "1.0", "'cpu'", "'gpu0'", "'1'",
           "'cuda:x'", "'cuda:9'", "'cuda:-1'", "object()", "[0]", "torch.device('cpu')",
           "torch.device('cuda', 5)", "numpy.int64(-1)",
           # absurd ones (issue 24): not numbers of devices, or numbers no device has
           "float('nan')", "float('inf')", "1e300", "1j", "b'0'", "bytearray(b'0')", "'cuda:\\0'",
           "'cuda:' + '9' * 5000", "'cuda:-99999999999999999999'", "2**64",
           "type('Huge', (int,), {})(2**100)"]


def test_ids_that_name_no_gpu_give_zeros_with_a_diagnostic(sim):
    # fastai.utils.mem answered each of these with zeros (its bare except); so does gpumem.
    result = sim.run(f"""
        import numpy, torch, gpumem
        readings = {{}}
        for text in {BAD_IDS!r}:
            bad = eval(text)
            readings[text] = [list(gpumem.gpu_mem_get(bad)), gpumem.gpu_handle(bad).valid,
                              gpumem.gpu_mem_get_used_fast(bad)]
        emit(readings=readings, diagnostics=gpumem.diagnostics())
    """)
    for text in BAD_IDS:
        assert result["readings"][text] == [[0, 0, 0], False, 0], text
    notes = [d for d in result["diagnostics"] if d.startswith("GPU id ")]
    assert "GPU id -1: no such device; zeros returned" in notes
    assert "GPU id 2: no such device (2 visible); zeros returned" in notes
    assert "GPU id 'cpu': not a CUDA device; zeros returned" in notes
    assert "GPU id 1.0: not a device id; zeros returned" in notes


def test_ids_name_devices_as_torch_and_numpy_do(sim):
    result = sim.run("""
        import numpy, torch, gpumem
        from gpumem.testing import allocate
        held = allocate(64, device=1)  # device 1 becomes the current one
        emit(**{name: gpumem.gpu_mem_get(id) for name, id in [
            ("torch1", torch.device("cuda:1")), ("torch0", torch.device("cuda", 0)),
            ("torch_current", torch.device("cuda")), ("string1", "cuda:1"), ("string0", "cuda:0"),
            ("string_current", "cuda"), ("numpy1", numpy.int64(1)), ("numpy0", numpy.uint8(0)),
            ("none", None), ("true", True)]})
    """)
    one, zero = with_allocated(A100_IDLE, 64), list(H200_IDLE)
    for name in ("torch1", "string1", "numpy1", "torch_current", "string_current", "none", "true"):
        assert result[name] == one, name
    for name in ("torch0", "string0", "numpy0"):
        assert result[name] == zero, name


def test_allocations_show_on_their_device_only(sim):
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        with allocate(100, device=1):
            emit(one=gpumem.gpu_mem_get(1), zero=gpumem.gpu_mem_get(0),
                 all=gpumem.gpu_mem_get_all())
        emit(after=gpumem.gpu_mem_get(1))
    """)
    assert result["one"] == with_allocated(A100_IDLE, 100)
    assert result["zero"] == list(H200_IDLE)
    assert result["all"] == [list(H200_IDLE), with_allocated(A100_IDLE, 100)]
    assert result["after"] == list(A100_IDLE)


def test_default_device_is_the_current_cuda_device(sim):
    # Allocating on device 1 makes its primary context current, as cudaSetDevice(1) would.
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        held = allocate(64, device=1)
        emit(used=gpumem.gpu_mem_get_used(), free=gpumem.gpu_mem_get_free(),
             memory=gpumem.gpu_mem_get())
    """)
    assert result["used"] == A100_RESERVED + 64
    assert result["free"] == A100_IDLE[1] - 64
    assert result["memory"] == with_allocated(A100_IDLE, 64)


def test_gpu_with_max_free_mem_picks_the_device_with_most_free(sim):
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        held = allocate(110000, device=0)  # H200 left with 33229 MB free, A100 has 40704
        emit(best=gpumem.gpu_with_max_free_mem())
    """)
    assert result["best"] == [1, A100_IDLE[1]]


def test_gpu_mem_get_used_fast_reads_through_a_handle(sim):
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        handle = gpumem.gpu_handle(1)
        before = gpumem.gpu_mem_get_used_fast(handle)
        with allocate(50, device=1):
            during = gpumem.gpu_mem_get_used_fast(handle)
            by_ordinal = gpumem.gpu_mem_get_used_fast(1)
            by_name = gpumem.gpu_mem_get_used_fast("cuda:1")
        emit(before=before, during=during, by_ordinal=by_ordinal, by_name=by_name,
             valid=bool(handle), device=handle.device,
             invalid=gpumem.gpu_mem_get_used_fast(gpumem.gpu_handle(9)),
             wrong=gpumem.gpu_mem_get_used_fast("gpu0"))
    """)
    assert (result["before"], result["during"]) == (A100_RESERVED, A100_RESERVED + 50)
    assert (result["by_ordinal"], result["by_name"]) == (A100_RESERVED + 50, A100_RESERVED + 50)
    assert result["valid"] is True and result["device"] == 1
    assert result["invalid"] == 0
    assert result["wrong"] == 0


def test_no_cache_reads_are_plain_reads_without_frameworks(sim):
    result = sim.run("""
        import sys, gpumem
        from gpumem.testing import allocate
        held = allocate(30, device=0)
        emit(used=gpumem.gpu_mem_get_used_no_cache(), free=gpumem.gpu_mem_get_free_no_cache(),
             torch="torch" in sys.modules, cupy="cupy" in sys.modules)
    """)
    assert result["used"] == H200_RESERVED + 30
    assert result["free"] == H200_IDLE[1] - 30
    assert result["torch"] is False and result["cupy"] is False


FAKE_TORCH = """
import sys, types, gc
from gpumem.testing import allocate

calls = []
cache = [allocate(100, device=1)]  # what torch's caching allocator would hold on its device

class _Cuda:
    @staticmethod
    def is_available(): return True
    @staticmethod
    def is_initialized(): return True
    @staticmethod
    def current_device(): return 1
    @staticmethod
    def empty_cache():
        calls.append("empty_cache")
        while cache: cache.pop().free()

class _Tensor:
    def cuda(self):
        calls.append("cuda")
        return self

torch = types.ModuleType("torch")
torch.cuda = _Cuda()
torch.ones = lambda shape: calls.append(("ones", shape)) or _Tensor()
sys.modules["torch"] = torch
gc.callbacks.append(lambda phase, info: phase == "start" and calls.append("gc"))
"""


def test_torch_is_detected_for_the_default_device_and_its_cache(sim):
    result = sim.run(FAKE_TORCH + """
import gpumem
emit(used=gpumem.gpu_mem_get_used(), memory=gpumem.gpu_mem_get())
emit(no_cache=gpumem.gpu_mem_get_used_no_cache(), calls=[c for c in calls if c != "gc"],
     collected="gc" in calls)
""")
    assert result["used"] == A100_RESERVED + 100  # torch's current device (1), cache included
    assert result["memory"] == with_allocated(A100_IDLE, 100)
    assert result["no_cache"] == A100_RESERVED
    assert result["calls"] == ["empty_cache"]
    assert result["collected"] is True


def test_cupy_pool_is_emptied_by_no_cache_reads(sim):
    result = sim.run("""
        import sys, types
        from gpumem.testing import allocate
        pool = [allocate(40, device=0)]

        class _Pool:
            def free_all_blocks(self):
                while pool: pool.pop().free()

        cupy = types.ModuleType("cupy")
        cupy.cuda = types.SimpleNamespace(
            is_available=lambda: True,
            runtime=types.SimpleNamespace(getDevice=lambda: 0))
        cupy.get_default_memory_pool = lambda: _Pool()
        sys.modules["cupy"] = cupy
        import gpumem
        emit(cached=gpumem.gpu_mem_get_used(), no_cache=gpumem.gpu_mem_get_used_no_cache(),
             free=gpumem.gpu_mem_get_free_no_cache())
    """)
    assert result["cached"] == H200_RESERVED + 40
    assert result["no_cache"] == H200_RESERVED
    assert result["free"] == H200_IDLE[1]


def test_preload_pytorch_uses_torch_when_loaded(sim):
    result = sim.run(FAKE_TORCH + """
import gpumem
emit(done=gpumem.preload_pytorch(), calls=[c for c in calls if c != "gc"])
""")
    assert result["done"] is True
    assert result["calls"] == [["ones", [1, 1]], "cuda"]


def test_preload_pytorch_creates_the_context_without_torch(sim):
    config = dict(sim.config)
    config["devices"] = [dict(d, context_mib=300) for d in config["devices"]]
    sim.config = config
    result = sim.run("""
        import sys, gpumem
        before = gpumem.gpu_mem_get_used()
        done = gpumem.preload_pytorch()
        emit(before=before, done=done, after=gpumem.gpu_mem_get_used(),
             torch="torch" in sys.modules)
    """)
    assert result["before"] == H200_RESERVED
    assert result["done"] is True
    assert result["after"] == H200_RESERVED + 300
    assert result["torch"] is False


def test_importing_gpumem_never_imports_frameworks(sim, tmp_path):
    # A torch that records being imported: gpumem must not touch it.
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise SystemExit('gpumem imported torch')\n")
    result = sim.run("""
        import sys, gpumem, gpumem.ipython, gpumem.testing
        gpumem.gpu_mem_get(); gpumem.gpu_mem_get_used_no_cache()
        with gpumem.GPUMemTrace(silent=True): pass
        emit(loaded=sorted(m for m in ("torch", "cupy", "numpy", "IPython") if m in sys.modules))
    """, PYTHONPATH=f"{fake.parent}:{__import__('conftest').PYTHONPATH}")
    assert result["loaded"] == []


@pytest.mark.parametrize(
    "visible, expected",
    [
        ("1", [A100_IDLE]),
        ("1,0", [A100_IDLE, H200_IDLE]),
        (A100_UUID, [A100_IDLE]),
        (H200_UUID, [H200_IDLE]),
        ("", []),
    ],
)
def test_cuda_visible_devices_forms(sim, visible, expected):
    result = sim.run("""
        import gpumem
        emit(all=gpumem.gpu_mem_get_all(), count=gpumem.device_count(),
             zero=gpumem.gpu_mem_get(0))
    """, CUDA_VISIBLE_DEVICES=visible)
    assert result["all"] == [list(memory) for memory in expected]
    assert result["count"] == len(expected)
    assert result["zero"] == list(expected[0] if expected else (0, 0, 0))


def test_cuda_visible_devices_maps_allocations_to_the_physical_gpu(sim):
    # Ordinal 0 is the A100 here: the seed would have read NVML 0 for torch's device 0 regardless.
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        with allocate(123, device=0):
            emit(zero=gpumem.gpu_mem_get(0), name=gpumem.devices()[0]["name"])
    """, CUDA_VISIBLE_DEVICES="1")
    assert result["zero"] == with_allocated(A100_IDLE, 123)
    assert result["name"] == "NVIDIA A100-SXM4-40GB"


def test_cuda_device_order_pci_bus_id(sim):
    # Fastest first here puts the A100 (bus 0x3B) first; PCI order puts the H200 (0x19) first.
    # CUDA is initialised first, as torch does: then the driver itself says which is which.
    sim.config = dict(sim.config, cuda_order=[0, 1])
    script = """
        import gpumem
        gpumem.preload_pytorch()
        emit(names=[d["name"] for d in gpumem.devices()], zero=gpumem.gpu_mem_get(0))
    """
    fastest = sim.run(script)
    by_bus = sim.run(script, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    assert fastest["names"] == ["NVIDIA A100-SXM4-40GB", "NVIDIA H200"]
    assert fastest["zero"] == list(A100_IDLE)
    assert by_bus["names"] == ["NVIDIA H200", "NVIDIA A100-SXM4-40GB"]
    assert by_bus["zero"] == list(H200_IDLE)


def test_gpu_mem_get_used_fast_reads_a_pynvml_handle_through_pynvml(sim):
    # Code written for fastai.utils.mem holds pynvml handles (ctypes pointers); they are read
    # through the pynvml the program loaded, as fastai.utils.mem did.
    result = sim.run("""
        import ctypes, sys, types
        class Memory:
            used = 300 * 2**20 + 5
        pynvml = types.ModuleType("pynvml")
        pynvml.nvmlDeviceGetMemoryInfo = lambda handle: Memory
        sys.modules["pynvml"] = pynvml
        import gpumem
        handle = ctypes.pointer(ctypes.c_int(7))
        broken = ctypes.c_void_p(1)
        pynvml_read = gpumem.gpu_mem_get_used_fast(handle)
        pynvml.nvmlDeviceGetMemoryInfo = lambda handle: 1 / 0
        emit(read=pynvml_read, failing=gpumem.gpu_mem_get_used_fast(broken),
             ordinal=gpumem.gpu_mem_get_used_fast(0))
    """)
    assert result["read"] == 300
    assert result["failing"] == 0
    assert result["ordinal"] == H200_RESERVED
