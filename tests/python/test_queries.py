"""The seed's queries, with the simulated devices' numbers (see conftest.TWO_GPUS)."""

import pytest

from conftest import A100_IDLE, A100_UUID, H200_IDLE, H200_UUID


def test_b2mb_truncates_toward_zero_like_the_seed():
    from gpumem import b2mb

    assert b2mb(0) == 0
    assert b2mb(2**20 - 1) == 0
    assert b2mb(2**20) == 1
    assert b2mb(5 * 2**20 + 7) == 5
    assert b2mb(-(2**20 + 1)) == -1  # int(-(2**20+1)/2**20) == -1
    assert b2mb(1.5 * 2**20) == 1
    assert b2mb(2**80 + 2**20) == 2**60 + 1  # exact where float division is not


def test_gpumemory_is_the_seeds_namedtuple():
    from gpumem import GPUMemory

    memory = GPUMemory(1, 2, 3)
    assert memory._fields == ("total", "free", "used")
    assert memory == (1, 2, 3)
    assert (memory.total, memory.free, memory.used) == (1, 2, 3)


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
    assert result["used"] == 0
    assert result["best"] == [0, H200_IDLE[1]]
    assert result["typename"] == "GPUMemory"


@pytest.mark.parametrize("bad_id", [2, 7, -5])
def test_invalid_id_gives_zeros(sim, bad_id):
    result = sim.run(f"""
        import gpumem
        emit(memory=gpumem.gpu_mem_get({bad_id}))
    """)
    assert result["memory"] == [0, 0, 0]


def test_allocations_show_on_their_device_only(sim):
    result = sim.run("""
        import gpumem
        from gpumem.testing import allocate
        with allocate(100, device=1):
            emit(one=gpumem.gpu_mem_get(1), zero=gpumem.gpu_mem_get(0),
                 all=gpumem.gpu_mem_get_all())
        emit(after=gpumem.gpu_mem_get(1))
    """)
    assert result["one"] == [A100_IDLE[0], A100_IDLE[1] - 100, 100]
    assert result["zero"] == list(H200_IDLE)
    assert result["all"] == [list(H200_IDLE), [A100_IDLE[0], A100_IDLE[1] - 100, 100]]
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
    assert result["used"] == 64
    assert result["free"] == A100_IDLE[1] - 64
    assert result["memory"] == [A100_IDLE[0], A100_IDLE[1] - 64, 64]


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
        try:
            gpumem.gpu_mem_get_used_fast("gpu0")
            wrong = None
        except TypeError as error:
            wrong = str(error)
        emit(before=before, during=during, by_ordinal=by_ordinal, valid=bool(handle),
             ordinal=handle.ordinal, invalid=gpumem.gpu_mem_get_used_fast(gpumem.gpu_handle(9)),
             wrong=wrong)
    """)
    assert (result["before"], result["during"], result["by_ordinal"]) == (0, 50, 50)
    assert result["valid"] is True and result["ordinal"] == 1
    assert result["invalid"] == 0
    assert "gpu_handle" in result["wrong"]


def test_no_cache_reads_are_plain_reads_without_frameworks(sim):
    result = sim.run("""
        import sys, gpumem
        from gpumem.testing import allocate
        held = allocate(30, device=0)
        emit(used=gpumem.gpu_mem_get_used_no_cache(), free=gpumem.gpu_mem_get_free_no_cache(),
             torch="torch" in sys.modules, cupy="cupy" in sys.modules)
    """)
    assert result["used"] == 30
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
    assert result["used"] == 100  # torch's current device (1), cache included
    assert result["memory"] == [A100_IDLE[0], A100_IDLE[1] - 100, 100]
    assert result["no_cache"] == 0
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
    assert result["cached"] == 40
    assert result["no_cache"] == 0
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
    assert result["before"] == 0
    assert result["done"] is True
    assert result["after"] == 300
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
    assert result["zero"] == [A100_IDLE[0], A100_IDLE[1] - 123, 123]
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
