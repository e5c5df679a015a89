"""gpumem.StepPeaks: per-step and per-epoch peaks from counters of its own, asserted against what
the simulated device held (each spike's level read from the device while it was held)."""

from conftest import H200_RESERVED

MIB = 2**20

# Weights at rest, then steps whose spike is gone before the step ends: what a between-steps
# reading (the device's used memory, as torch.cuda.memory_allocated() between steps) cannot see.
STEPS = """
import gpumem
from gpumem.testing import allocate
weights = allocate(64)
steps = gpumem.StepPeaks()
trace = gpumem.GPUMemTrace(silent=True, no_cache=False)   # another reader of the peak
between, held, records = [], [], []
steps.start_epoch()
for size in (100, 300, 200):
    steps.start_step()
    with allocate(size):
        held.append(gpumem.gpu_mem_get(0).used)          # what the device held at the spike, MB
    records += [r._asdict() for r in steps.end_step()]
    between.append(gpumem.gpu_mem_get(0).used)
[epoch] = steps.end_epoch()
emit(records=records, held=held, between=between, epoch=epoch._asdict(),
     highest=[r._asdict() for r in steps.take_highest()], again=steps.take_highest(),
     trace=trace.data_bytes().peak - trace.data_bytes().start,
     devices=steps.devices, modes=steps.modes, text=repr(steps))
"""


def test_each_step_has_its_exact_peak_that_a_between_steps_reading_misses(sim):
    config = dict(sim.config)
    config["devices"] = [dict(d, context_mib=300) for d in config["devices"]]
    sim.config = config
    result = sim.run(STEPS)
    records, held = result["records"], result["held"]
    assert [r["number"] for r in records] == [0, 1, 2]
    for record, size, at_spike in zip(records, (100, 300, 200), held):
        assert record["window"] == "step" and record["device"] == 0
        assert record["mode"] == "exact" and record["quantity"] == "process footprint"
        assert "context and modules" in record["covers"]
        # The process footprint at the spike is the device's used memory less the driver's
        # reservation: the context (300), the weights (64) and the spike.
        assert record["peak"] == (at_spike - H200_RESERVED) * MIB == (300 + 64 + size) * MIB
        assert record["rise"] == size * MIB
        assert record["start"] == record["end"] == (300 + 64) * MIB
        assert record["device_used_peak"] == at_spike * MIB
    # Between the steps the device held only the weights: the spikes left no trace there.
    assert result["between"] == [H200_RESERVED + 300 + 64] * 3
    assert result["epoch"]["window"] == "epoch" and result["epoch"]["rise"] == 300 * MIB
    assert [r["number"] for r in result["highest"]] == [1] and result["again"] == []
    # Re-baselining every step left the other reader's peak alone.
    assert result["trace"] == 300 * MIB
    assert result["devices"] == [0] and result["modes"] == ["exact"]
    assert result["text"] == "StepPeaks(GPU 0: exact; 3 steps)"


def test_several_devices_and_overlapping_step_peaks(sim):
    result = sim.run("""
import gpumem
from gpumem.testing import allocate
outer = gpumem.StepPeaks("all")
inner = gpumem.StepPeaks(["cuda:1", 1])            # the same device named twice counts once
outer.start_step()
allocate(50, device=0).free()
inner.start_step()                                 # starts inner's step only
allocate(20, device=1).free()
emit(inner=[(r.device, r.rise) for r in inner.end_step()],
     outer=[(r.device, r.rise) for r in outer.end_step()], empty=inner.end_step())
""")
    assert result["inner"] == [[1, 20 * MIB]]
    assert result["outer"] == [[0, 50 * MIB], [1, 20 * MIB]]
    assert result["empty"] == []  # no step started since


def test_sampled_mode_says_so_in_every_record(sim):
    result = sim.run("""
import gpumem
from gpumem.testing import allocate
held = allocate(10)
steps = gpumem.StepPeaks(source="sampled")
steps.start_step()
[record] = steps.end_step()
emit(mode=record.mode, quantity=record.quantity, peak=record.peak)
""")
    assert result["mode"] == "sampled" and result["quantity"] == "device used"
    assert result["peak"] == (H200_RESERVED + 10) * MIB


def test_without_a_gpu_records_read_zeros_and_say_none(sim):
    result = sim.run("""
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import gpumem
    steps = gpumem.StepPeaks()
    steps.start_step()
    [record] = steps.end_step()
emit(mode=record.mode, peak=record.peak, warned=[str(w.message) for w in caught])
""", GPUMEM_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
       GPUMEM_CUDA_LIBRARY="/nonexistent/libcuda.so.1",
       GPUMEM_CUPTI_LIBRARY="/nonexistent/libcupti.so.13")
    assert result["mode"] == "none" and result["peak"] == 0
    assert len(result["warned"]) == 1 and "StepPeaks: nothing can measure" in result["warned"][0]


def test_bad_arguments_are_clear_errors(sim):
    result = sim.run("""
import gpumem
errors = []
for args, kwargs in (((), {"source": "reported"}), (("cpu",), {})):
    try:
        gpumem.StepPeaks(*args, **kwargs).start_step()
    except ValueError as error:
        errors.append(str(error))
emit(errors=errors)
""")
    assert result["errors"] == [
        "StepPeaks: source must be automatic, exact or sampled, not 'reported'",
        "StepPeaks: GPU id 'cpu' names no GPU",
    ]
