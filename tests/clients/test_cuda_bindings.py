"""cuda-bindings (cuda.bindings.driver, NVIDIA's driver API binding, which resolves every function
through cuGetProcAddress) against the simulated driver: each call gpumem makes through libcuda
(src/driver/cuda.cpp, src/driver/abi/cuda.hpp) agrees with what the simulator holds."""

from conftest import CONFIG, MIB

# Helpers of the scenarios: a call that must succeed, and the simulator's view from inside.
PRELUDE = """
import json, os, subprocess
from cuda.bindings import driver as d

def ok(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    assert err == d.CUresult.CUDA_SUCCESS, (err, values)
    return values[0] if len(values) == 1 else values

def show():
    out = subprocess.run([os.environ["GPUMEM_SIM_TOOL"], "show"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)

def mine(state, nvml):
    '''This process's memory on an NVML device, as the simulator holds it (0: none).'''
    for p in state["devices"][nvml]["processes"]:
        if p["pid"] == os.getpid():
            return p["used_bytes"]
    return 0
"""


def test_identity_and_version(gpu):
    values = gpu.run(PRELUDE + """
ok(d.cuInit(0))
devices = []
for ordinal in range(ok(d.cuDeviceGetCount())):
    dev = ok(d.cuDeviceGet(ordinal))
    devices.append(dict(
        name=ok(d.cuDeviceGetName(256, dev)).split(b"\\0")[0].decode(),
        uuid=bytes(ok(d.cuDeviceGetUuid(dev)).bytes).hex(),
        pci=ok(d.cuDeviceGetPCIBusId(64, dev)).split(b"\\0")[0].decode(),
        total=ok(d.cuDeviceTotalMem(dev)),
    ))
import pynvml
pynvml.nvmlInit()
emit(version=ok(d.cuDriverGetVersion()), devices=devices,
     nvml_cuda_version=pynvml.nvmlSystemGetCudaDriverVersion(),
     error_name=ok(d.cuGetErrorName(d.CUresult.CUDA_ERROR_INVALID_VALUE)).decode(),
     error_string=ok(d.cuGetErrorString(d.CUresult.CUDA_ERROR_OUT_OF_MEMORY)).decode())
""")
    # The driver and NVML name the same CUDA version.
    assert values["version"] == values["nvml_cuda_version"] == CONFIG["cuda_driver_version"]
    assert values["error_name"] == "CUDA_ERROR_INVALID_VALUE"
    assert values["error_string"] == "out of memory"
    held = gpu.show()
    assert len(values["devices"]) == 2
    for ordinal, device in enumerate(values["devices"]):
        nvml = CONFIG["cuda_order"][ordinal]
        sim = held["devices"][nvml]
        assert device["name"] == sim["name"]
        # The 16 bytes of the NVML UUID "GPU-xxxxxxxx-xxxx-...".
        assert device["uuid"] == sim["uuid"][4:].replace("-", "")
        assert device["pci"].lower() == sim["pci_bus_id"][4:].lower()
        assert device["total"] == sim["total_bytes"]


def test_contexts_and_memory(gpu):
    values = gpu.run(PRELUDE + """
ok(d.cuInit(0))
dev = ok(d.cuDeviceGet(0))                      # CUDA 0 = NVML 1 (H200)
before = show()
ctx = ok(d.cuDevicePrimaryCtxRetain(dev))
ok(d.cuCtxSetCurrent(ctx))
assert int(ok(d.cuCtxGetCurrent())) == int(ctx)
assert int(ok(d.cuCtxGetDevice())) == int(dev)
flags, active = ok(d.cuDevicePrimaryCtxGetState(dev))
with_context = show()
info_context = ok(d.cuMemGetInfo())

ptr = ok(d.cuMemAlloc(256 << 20))
base, size = ok(d.cuMemGetAddressRange(ptr))
allocated = show()
info_allocated = ok(d.cuMemGetInfo())

pitched, pitch = ok(d.cuMemAllocPitch(1000, 100, 4))
pitched_state = show()
ok(d.cuMemFree(pitched))

prop = d.CUmemAllocationProp()
prop.type = d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
prop.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
prop.location.id = int(dev)
handle = ok(d.cuMemCreate(64 << 20, prop, 0))
created = show()
ok(d.cuMemRelease(handle))
released = show()

async_ptr = ok(d.cuMemAllocAsync(64 << 20, d.CUstream(0)))
async_held = show()
info_async = ok(d.cuMemGetInfo())
ok(d.cuMemFreeAsync(async_ptr, d.CUstream(0)))

ok(d.cuMemFree(ptr))
freed = show()
info_freed = ok(d.cuMemGetInfo())

pool = ok(d.cuDeviceGetMemPool(dev))
pool_reserved = int(ok(d.cuMemPoolGetAttribute(
    pool, d.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)))
ok(d.cuDevicePrimaryCtxRelease(dev))
_, active_after = ok(d.cuDevicePrimaryCtxGetState(dev))
after = show()
ok(d.cuMemPoolTrimTo(pool, 0))
trimmed = show()
emit(mine=[mine(s, 1) for s in (before, with_context, allocated, pitched_state, created,
                                released, async_held, freed, after, trimmed)],
     pool_reserved=pool_reserved,
     free=[s["devices"][1]["free_bytes"] for s in (with_context, allocated, async_held, freed)],
     total=before["devices"][1]["total_bytes"],
     info=[list(i) for i in (info_context, info_allocated, info_async, info_freed)],
     active=[active, active_after], flags=flags, range=[int(base) == int(ptr), size],
     pitch=pitch, other=after["devices"][0]["processes"])
""")
    context, total = 500 * MIB, values["total"]
    (before, with_context, allocated, pitched, created, released, async_held, freed,
     after, trimmed) = values["mine"]
    assert before == 0
    assert with_context == context  # the primary context's memory, charged at retain
    assert values["active"] == [1, 0] and values["flags"] == 0
    assert allocated == context + 256 * MIB
    assert values["range"] == [True, 256 * MIB]
    assert values["pitch"] >= 1000  # WidthInBytes
    assert pitched == allocated + values["pitch"] * 100
    assert created == allocated + 64 * MIB  # physical memory from cuMemCreate
    assert released == allocated  # released while unmapped: gone
    assert async_held >= allocated + 64 * MIB
    assert freed <= async_held - 256 * MIB
    # The context went with its last reference, and its cuMemAlloc memory with it, but not the
    # default pool's reservation: "cuCtxDestroy() will not destroy memory allocations by
    # cuMemCreate(), cuMemAllocAsync() and cuMemAllocFromPoolAsync(). These memory allocations are
    # not associated with any CUDA context" (cuda.h 13.0). With no synchronize since
    # cuMemFreeAsync the pool still holds the freed 64 MiB (RELEASE_THRESHOLD 0 releases "on the
    # next call to stream, event or context synchronize").
    assert values["pool_reserved"] >= 64 * MIB
    assert after == values["pool_reserved"] and values["other"] == []
    assert trimmed == 0  # cuMemPoolTrimTo(0) with nothing allocated releases everything
    # cuMemGetInfo answers the device's free memory and total, as NVML does.
    for (free, info_total), sim_free in zip(values["info"], values["free"]):
        assert (free, info_total) == (sim_free, total)
    assert values["info"][0][0] - values["info"][1][0] == 256 * MIB


def test_second_device(gpu):
    values = gpu.run(PRELUDE + """
ok(d.cuInit(0))
dev = ok(d.cuDeviceGet(1))                      # CUDA 1 = NVML 0 (A100)
ctx = ok(d.cuDevicePrimaryCtxRetain(dev))
ok(d.cuCtxSetCurrent(ctx))
assert int(ok(d.cuCtxGetDevice())) == 1
ptr = ok(d.cuMemAlloc(32 << 20))
held = show()
ok(d.cuMemFree(ptr))
ok(d.cuDevicePrimaryCtxRelease(dev))
emit(a100=mine(held, 0), h200=mine(held, 1))
""")
    assert values == {"a100": (300 + 32) * MIB, "h200": 0}


def test_get_proc_address_follows_the_documented_rules(gpu):
    values = gpu.run(PRELUDE + """
import ctypes
lib = ctypes.CDLL("libcuda.so.1")     # the very library the binding loaded
def address(symbol):
    return ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
F = d.CUdriverProcAddress_flags
def ask(name, version, flags=F.CU_GET_PROC_ADDRESS_DEFAULT):
    err, pfn, status = d.cuGetProcAddress(name.encode(), version, flags)
    return [int(err), int(pfn or 0), -1 if status is None else int(status)]
cases = {
    "cuMemAlloc@3020": (ask("cuMemAlloc", 3020), address("cuMemAlloc_v2")),
    "cuMemAlloc@2000": (ask("cuMemAlloc", 2000), 0),   # CUDA 2's 32-bit variant: not provided
    "cuDeviceGetUuid@9020": (ask("cuDeviceGetUuid", 9020), address("cuDeviceGetUuid")),
    "cuDeviceGetUuid@11040": (ask("cuDeviceGetUuid", 11040), address("cuDeviceGetUuid_v2")),
    "cuDevicePrimaryCtxRelease@11000": (ask("cuDevicePrimaryCtxRelease", 11000),
                                        address("cuDevicePrimaryCtxRelease_v2")),
    "cuMemAllocAsync@11000": (ask("cuMemAllocAsync", 11000), 0),
    "cuMemAllocAsync@11020": (ask("cuMemAllocAsync", 11020), address("cuMemAllocAsync")),
    "cuMemAllocAsync@11020/ptds": (
        ask("cuMemAllocAsync", 11020, F.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
        address("cuMemAllocAsync_ptsz")),
    "cuInit@2000/ptds": (ask("cuInit", 2000, F.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
                         address("cuInit")),
    "cuGetProcAddress@12000": (ask("cuGetProcAddress", 12000), address("cuGetProcAddress_v2")),
    "cuNoSuchFunction@13000": (ask("cuNoSuchFunction", 13000), 0),
    "cuInit@13010": (ask("cuInit", 13010), 0),
}
emit(cases={k: [v[0], v[1]] for k, v in cases.items()})
""")
    cases = values["cases"]
    found, missing, too_new = 0, 1, 2  # CUdriverProcAddressQueryResult
    for name in ("cuMemAlloc@3020", "cuDeviceGetUuid@9020", "cuDeviceGetUuid@11040",
                 "cuDevicePrimaryCtxRelease@11000", "cuMemAllocAsync@11020",
                 "cuMemAllocAsync@11020/ptds", "cuInit@2000/ptds", "cuGetProcAddress@12000"):
        (err, pfn, status), expected = cases[name]
        assert (err, status) == (0, found), name
        assert pfn == expected != 0, name
    assert cases["cuMemAllocAsync@11020"][1] != cases["cuMemAllocAsync@11020/ptds"][1]
    assert cases["cuMemAlloc@2000"][0] == [0, 0, missing]
    assert cases["cuNoSuchFunction@13000"][0] == [0, 0, missing]
    assert cases["cuMemAllocAsync@11000"][0] == [0, 0, too_new]
    # "If the specified CUDA version is greater than the driver version": INVALID_VALUE (1).
    assert cases["cuInit@13010"][0][:2] == [1, 0]


# The entry points a scenario needs, each reachable through cuGetProcAddress as cuda-bindings
# resolves it: the simulated driver exports them all, so one missing is a failure, not a skip.
NEEDS = """
VERSIONS = (2000, 3020, 4000, 10020, 11000, 11020, 11040, 12000, 13000)
def resolvable(*names):
    missing = [n for n in names
               if not any(d.cuGetProcAddress(n.encode(), v, 0)[1] for v in VERSIONS)]
    assert not missing, "the simulated driver lacks " + ", ".join(missing)
"""


def test_vmm_memory_lives_until_unmapped(gpu):
    values = gpu.run(PRELUDE + NEEDS + """
resolvable("cuMemCreate", "cuMemRelease", "cuMemAddressReserve", "cuMemMap", "cuMemUnmap",
           "cuMemAddressFree", "cuMemRetainAllocationHandle")
ok(d.cuInit(0))
dev = ok(d.cuDeviceGet(0))
ok(d.cuCtxSetCurrent(ok(d.cuDevicePrimaryCtxRetain(dev))))
prop = d.CUmemAllocationProp()
prop.type = d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
prop.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
prop.location.id = int(dev)
size = 64 << 20
handle = ok(d.cuMemCreate(size, prop, 0))
va = ok(d.cuMemAddressReserve(size, 0, 0, 0))
ok(d.cuMemMap(va, size, 0, handle, 0))
retained = ok(d.cuMemRetainAllocationHandle(va))
ok(d.cuMemRelease(retained))
ok(d.cuMemRelease(handle))            # the last handle, while still mapped
mapped = show()
ok(d.cuMemUnmap(va, size))
unmapped = show()
ok(d.cuMemAddressFree(va, size))
emit(mapped=mine(mapped, 1), unmapped=mine(unmapped, 1))
""")
    # cuMemRelease: "the memory is freed when all outstanding mappings to it are unmapped".
    assert values == {"mapped": (500 + 64) * MIB, "unmapped": 500 * MIB}


def test_stream_ordered_pool_agrees(gpu):
    values = gpu.run(PRELUDE + NEEDS + """
resolvable("cuDeviceGetMemPool", "cuMemPoolGetAttribute", "cuMemPoolTrimTo", "cuMemAllocAsync",
           "cuMemFreeAsync", "cuCtxSynchronize")
A = d.CUmemPool_attribute
ok(d.cuInit(0))
dev = ok(d.cuDeviceGet(0))
ok(d.cuCtxSetCurrent(ok(d.cuDevicePrimaryCtxRetain(dev))))
pool = ok(d.cuDeviceGetMemPool(dev))
def attribute(name):
    return int(ok(d.cuMemPoolGetAttribute(pool, getattr(A, name))))
def reading():
    return dict(mine=mine(show(), 1), reserved=attribute("CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT"),
                used=attribute("CU_MEMPOOL_ATTR_USED_MEM_CURRENT"))
ptr = ok(d.cuMemAllocAsync(64 << 20, d.CUstream(0)))
held = reading()
ok(d.cuMemFreeAsync(ptr, d.CUstream(0)))
ok(d.cuCtxSynchronize())
synchronized = reading()
ok(d.cuMemPoolTrimTo(pool, 0))
trimmed = reading()
emit(held=held, synchronized=synchronized, trimmed=trimmed)
""")
    context = 500 * MIB
    held = values["held"]
    assert held["used"] == 64 * MIB and held["reserved"] >= held["used"]
    # The process holds what the pool reserves, not only its live blocks.
    for reading in (held, values["synchronized"], values["trimmed"]):
        assert reading["mine"] == context + reading["reserved"], reading
    assert values["synchronized"]["used"] == 0
    # cuMemPoolTrimTo(0) with nothing allocated releases everything.
    assert values["trimmed"]["reserved"] == 0
