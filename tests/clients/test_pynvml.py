"""pynvml (nvidia-ml-py, the binding fastai.utils.mem used) against the simulated NVML: every
call gpumem makes through libnvidia-ml (src/driver/nvml.cpp) reads what the simulator holds."""

import json

from conftest import CONFIG, MIB

READ_ALL = """
import pynvml as n
n.nvmlInit()
devices = []
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    pci = n.nvmlDeviceGetPciInfo(h)  # _v3
    uuid = n.nvmlDeviceGetUUID(h)
    v1 = n.nvmlDeviceGetMemoryInfo(h)
    v2 = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
    def procs(entries):
        return sorted([p.pid, p.usedGpuMemory] for p in entries)
    devices.append(dict(
        index=n.nvmlDeviceGetIndex(h), name=n.nvmlDeviceGetName(h), uuid=uuid,
        bus_id=pci.busId, bus_id_legacy=pci.busIdLegacy,
        domain=pci.domain, bus=pci.bus, device=pci.device,
        by_uuid=n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByUUID(uuid)),
        by_pci=n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByPciBusId(pci.busId)),
        mig=n.nvmlDeviceGetMaxMigDeviceCount(h),
        v1=[v1.total, v1.free, v1.used],
        v2=[v2.version, v2.total, v2.reserved, v2.free, v2.used],
        compute_v3=procs(n.nvmlDeviceGetComputeRunningProcesses(h)),
        compute_v2=procs(n.nvmlDeviceGetComputeRunningProcesses_v2(h)),
        graphics_v3=procs(n.nvmlDeviceGetGraphicsRunningProcesses(h)),
        detail=procs(n.nvmlDeviceGetRunningProcessDetailList(
            h, n.nvmlProcessDetailList_v1, n.NVML_PROCESS_MODE_COMPUTE)),
    ))
emit(driver=n.nvmlSystemGetDriverVersion(), devices=devices)
n.nvmlShutdown()
"""


def test_pynvml_reads_what_the_simulator_holds(gpu):
    # A CUDA program holding memory on both devices: CUDA 0 is NVML 1 (H200), CUDA 1 is NVML 0.
    workload = gpu.start_workload(
        "device 0; alloc a 256MiB; device 1; alloc b 64MiB; print ready; sleep 30s")
    try:
        held = gpu.show()
        read = gpu.run(READ_ALL)
        after = gpu.show()
    finally:
        workload.kill()
        workload.wait()
    assert held == after  # nothing moved while pynvml read

    assert read["driver"] == CONFIG["driver_version"] == held["driver_version"]
    assert len(read["devices"]) == len(held["devices"]) == 2
    # What the workload allocated, plus its context, on each device (NVML order).
    expected = {0: (300 + 64) * MIB, 1: (500 + 256) * MIB}
    for mine, sim in zip(read["devices"], held["devices"]):
        index = sim["index"]
        assert mine["index"] == mine["by_uuid"] == mine["by_pci"] == index
        assert mine["name"] == sim["name"] == CONFIG["devices"][index]["name"]
        assert mine["uuid"] == sim["uuid"] == CONFIG["devices"][index]["uuid"]
        assert mine["bus_id"] == sim["pci_bus_id"] == CONFIG["devices"][index]["pci_bus_id"]
        domain, bus, rest = sim["pci_bus_id"].split(":")
        assert (mine["domain"], mine["bus"], mine["device"]) == (
            int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16))
        assert mine["bus_id_legacy"] == sim["pci_bus_id"][4:]  # 0000:3B:00.0
        assert mine["mig"] == 0

        assert sim["processes"] == [{"pid": workload.pid, "used_bytes": expected[index]}]
        assert sim["used_bytes"] == expected[index]
        # v2: total = reserved + used + free; v1: used includes reserved.
        version, total, reserved, free, used = mine["v2"]
        assert version == 0x02000028
        assert (total, reserved, free, used) == (
            sim["total_bytes"], sim["reserved_bytes"], sim["free_bytes"], sim["used_bytes"])
        assert total == reserved + used + free
        assert total == CONFIG["devices"][index]["total_mib"] * MIB
        assert mine["v1"] == [total, free, used + reserved]

        listed = [[workload.pid, expected[index]]]
        assert mine["compute_v3"] == mine["compute_v2"] == mine["detail"] == listed
        assert mine["graphics_v3"] == []


def test_pynvml_sees_an_idle_gpu(gpu):
    read = gpu.run(READ_ALL)
    idle = gpu.show()
    for mine, sim in zip(read["devices"], idle["devices"]):
        assert sim["used_bytes"] == 0 and sim["processes"] == []
        assert mine["v2"][1:] == [sim["total_bytes"], sim["reserved_bytes"], sim["free_bytes"], 0]
        assert mine["compute_v3"] == mine["detail"] == []


def test_pynvml_reaches_mig_instances_under_their_gpu(gpu):
    gpu.env["GPUMEM_SIM_CONFIG"] = json.dumps({
        "devices": [
            {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-cccccccc-3333-4000-8000-000000000000",
             "total_mib": 81559, "reserved_mib": 512},
            {"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "parent": 0,
             "uuid": "MIG-dddddddd-4444-4000-8000-000000000000", "total_mib": 40192},
        ],
    })
    read = gpu.run("""
import pynvml as n
n.nvmlInit()
gpu = n.nvmlDeviceGetHandleByIndex(0)
count = n.nvmlDeviceGetMaxMigDeviceCount(gpu)
mig = n.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0)
try:
    n.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 1)
    second = "found"
except n.NVMLError as e:
    second = e.value
memory = n.nvmlDeviceGetMemoryInfo(mig, version=n.nvmlMemory_v2)
emit(devices=n.nvmlDeviceGetCount(), count=count, uuid=n.nvmlDeviceGetUUID(mig),
     by_uuid=n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByUUID(n.nvmlDeviceGetUUID(mig))),
     index=n.nvmlDeviceGetIndex(mig), second=second, total=memory.total)
""")
    held = gpu.show()
    mig = held["devices"][1]
    assert read["devices"] == 1  # NVML's index enumeration leaves MIG instances out
    assert read["count"] >= 1
    assert read["uuid"] == read["by_uuid"] == mig["uuid"]
    assert read["index"] == 0
    assert read["second"] == 6  # NVML_ERROR_NOT_FOUND
    assert read["total"] == mig["total_bytes"] == 40192 * MIB
