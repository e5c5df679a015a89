"""GPUMemTrace and gpu_mem_trace: the seed's documented usage, with exact numbers.

Allocations are made through the simulated CUDA driver in the scenario's own process, so the
exact (CUPTI) source sees every one of them.
"""

from conftest import SIM_DIR
from reports import line

SETUP = """
from gpumem import GPUMemTrace, gpu_mem_trace
from gpumem.testing import allocate
held = []
def some_code(keep=0, spike=0):
    if keep: held.append(allocate(keep))
    if spike: allocate(spike).free()
"""


def test_example_1_report_and_data(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace()
some_code(keep=100, spike=50)
mtrace.report()
emit(first=mtrace.data())
some_code(keep=20, spike=300)
mtrace.report('2nd run of some_code()')
emit(second=mtrace.data(), source=mtrace.source)
""")
    assert result.lines == [line(100, 50), line(120, 300, " (2nd run of some_code())")]
    assert result["first"] == [100, 50]
    assert result["second"] == [120, 300]
    assert result["source"] == "exact"


def test_example_2_reset_in_a_loop(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace()
some_code(keep=500)
for i in range(3):
    mtrace.reset()
    some_code(spike=10 * (i + 1))
    mtrace.report(f'i={i}')
""")
    assert result.lines == [line(0, 10 * (i + 1), f" (i={i})") for i in range(3)]


def test_example_3_report_n_reset(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace()
mtrace.reset()
for i in range(3):
    some_code(keep=10, spike=5)
    mtrace.report_n_reset(f'i={i}')
emit(after=mtrace.data())
""")
    assert result.lines == [line(10, 5, f" (i={i})") for i in range(3)]
    assert result["after"] == [0, 0]


def test_ctx_and_subctx_strings(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(ctx="foobar")
mtrace.report()
mtrace.report('1st try')
mtrace.report('2nd try')
mtrace.report('')
GPUMemTrace().report('only sub')
emit(ctx=mtrace.ctx)
""")
    assert result.lines == [
        line(0, 0, " (foobar)"),
        line(0, 0, " (foobar: 1st try)"),
        line(0, 0, " (foobar: 2nd try)"),
        line(0, 0, " (foobar: )"),
        line(0, 0, " (only sub)"),
    ]
    assert result["ctx"] == "foobar"


def test_silent_from_the_constructor_and_the_method(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(silent=True)
some_code(keep=8)
mtrace.report()            # nothing
mtrace.report_n_reset()    # nothing, but resets
some_code(keep=4)
mtrace.silent(silent=False)
mtrace.report('loud')
mtrace.silent(silent=True)
mtrace.report('quiet')
mtrace.silent(False)
mtrace.report('loud again')
emit(silent=mtrace.is_silent)
""")
    assert result.lines == [line(4, 0, " (loud)"), line(4, 0, " (loud again)")]
    assert result["silent"] is False


def test_context_manager_reports_on_exit(sim):
    result = sim.run(SETUP + """
with GPUMemTrace():
    some_code(keep=30, spike=70)
with GPUMemTrace(ctx='some context'):
    some_code(spike=12)
def some_func():
    with GPUMemTrace(ctx='some_func'):
        some_code(keep=1)
        return 1
emit(returned=some_func())
""")
    assert result.lines == [
        line(30, 70, " (exit)"),
        line(0, 12, " (some context: exit)"),
        line(1, 0, " (some_func: exit)"),
    ]
    assert result["returned"] == 1


def test_context_manager_reports_and_propagates_exceptions(sim):
    result = sim.run(SETUP + """
try:
    with GPUMemTrace(ctx="boom"):
        some_code(keep=7)
        raise ValueError("inside")
except ValueError as error:
    emit(raised=str(error))
""")
    assert result.lines == [line(7, 0, " (boom: exit)")]
    assert result["raised"] == "inside"


def test_a_ctx_with_a_lone_surrogate_reports_and_lets_the_blocks_exception_through(sim):
    # "\udc80" is what os.fsdecode makes of a file name byte that is not UTF-8: it cannot be
    # encoded, and must neither fail the report nor replace the block's own exception.
    result = sim.run(SETUP + r"""
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with GPUMemTrace(ctx="run-\udc80"):
            some_code(keep=5)
            raise KeyError("mine")
    except KeyError as error:
        emit(raised=repr(error))
    with GPUMemTrace(ctx="\ud800") as mtrace:
        some_code(keep=4)
    mtrace.report("sub-\udfff")
emit(warnings=[str(w.message) for w in caught])
""")
    assert result["raised"] == "KeyError('mine')"
    assert result.lines == [
        line(5, 0, " (run-?: exit)"),
        line(4, 0, " (?: exit)"),
        line(4, 0, " (?: sub-?)"),
    ]
    assert result["warnings"] == []


def test_a_failing_exit_report_never_hides_the_blocks_exception(sim):
    result = sim.run(SETUP + r"""
import warnings
class Unprintable:
    def __str__(self):
        raise RuntimeError("no str")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        with GPUMemTrace(ctx=Unprintable()):
            raise KeyError("mine")
    except KeyError as error:
        emit(raised=repr(error))
emit(warnings=[str(w.message) for w in caught])
""")
    assert result["raised"] == "KeyError('mine')"
    assert result.lines == []
    assert result["warnings"] == [
        "gpumem.GPUMemTrace: the exit report failed (RuntimeError('no str')) while KeyError "
        "propagated"
    ]


def test_on_exit_report_false(sim):
    result = sim.run(SETUP + """
with GPUMemTrace(ctx='some_func', on_exit_report=False) as mtrace:
    some_code(keep=6, spike=2)
print("--")
mtrace.report("measured in ctx")
with GPUMemTrace(on_exit_report=False) as mtrace2:
    some_code(spike=3)
print(mtrace2)
with GPUMemTrace() as mtrace3:
    some_code()
emit(data=mtrace.data(), data2=mtrace2.data(), data3=mtrace3.data(),
     flag=mtrace.on_exit_report)
""")
    assert result.lines == [
        "--",
        line(6, 2, " (some_func: measured in ctx)"),
        line(0, 3),
        line(0, 0, " (exit)"),
    ]
    assert result["data"] == [6, 2]
    assert result["data2"] == [0, 3]
    assert result["data3"] == [0, 0]
    assert result["flag"] is False


def test_decorator_on_functions_methods_and_static_methods(sim):
    result = sim.run(SETUP + """
import asyncio

@gpu_mem_trace
def some_func(n):
    some_code(keep=n)
    return n * 2

class Model:
    @gpu_mem_trace
    def forward(self, n):
        some_code(spike=n)
        return self

    @staticmethod
    @gpu_mem_trace
    def helper():
        return "static"

    @gpu_mem_trace
    @staticmethod
    def helper_outer():
        return "static outer"

    @classmethod
    @gpu_mem_trace
    def make(cls):
        return cls.__name__

def outer():
    @gpu_mem_trace
    def inner():
        some_code(spike=1)
    inner()

@gpu_mem_trace
async def coro():
    some_code(keep=2)
    return "awaited"

values = [some_func(5), type(Model().forward(9)).__name__, Model.helper(), Model().helper(),
          Model.helper_outer(), Model.make()]
outer()
values.append(asyncio.run(coro()))
emit(values=values, name=some_func.__name__, qualname=Model.forward.__qualname__,
     wrapped=some_func.__wrapped__.__name__)
""")
    assert result.lines == [
        line(5, 0, " (some_func: exit)"),
        line(0, 9, " (Model.forward: exit)"),
        line(0, 0, " (Model.helper: exit)"),
        line(0, 0, " (Model.helper: exit)"),
        line(0, 0, " (Model.helper_outer: exit)"),
        line(0, 0, " (Model.make: exit)"),
        line(0, 1, " (outer.<locals>.inner: exit)"),
        line(2, 0, " (coro: exit)"),
    ]
    assert result["values"] == [10, "Model", "static", "static", "static outer", "Model",
                                "awaited"]
    assert result["name"] == "some_func"
    assert result["qualname"] == "Model.forward"
    assert result["wrapped"] == "some_func"


def test_stop_freezes_and_start_rebaselines(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(silent=True)
some_code(keep=10, spike=15)
mtrace.stop()
some_code(keep=20, spike=40)
emit(frozen=mtrace.data(), running=mtrace.is_running)
mtrace.start()
emit(restarted=mtrace.data(), running_again=mtrace.is_running)
some_code(keep=1)
emit(live=mtrace.data())
""")
    assert result["frozen"] == [10, 15]
    assert result["running"] is False
    assert result["restarted"] == [0, 0]
    assert result["running_again"] is True
    assert result["live"] == [1, 0]


def test_data_bytes_are_exact(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(silent=True)
held.append(allocate(nbytes=123456789))
allocate(nbytes=1000).free()
mtrace.stop()
emit(bytes=mtrace.data_bytes()._asdict(), data=mtrace.data())
""")
    reading = result["bytes"]
    assert reading["source"] == "exact"
    assert reading["device"] == 0
    assert reading["end"] - reading["start"] == 123456789
    assert reading["delta_used"] == 123456789
    assert reading["peak"] - reading["start"] == 123456789 + 1000
    assert reading["delta_peaked"] == 1000
    assert result["data"] == [123456789 >> 20, 0]


def test_repr_formats_like_the_seed(sim):
    result = sim.run(SETUP + """
early = allocate(100)
mtrace = GPUMemTrace(silent=True)
emit(idle=repr(mtrace))
early.free()
emit(negative=repr(mtrace), negative_data=mtrace.data())
some_code(keep=1334)
emit(thousands=repr(mtrace))
""")
    assert result["idle"] == line(0, 0)
    assert result["negative"] == line(-100, 0)
    assert result["negative_data"] == [-100, 0]
    assert result["thousands"] == line(1234, 0) == "△Used Peaked MB:  1,234      0"


def test_trace_on_a_chosen_device(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(device=1, silent=True)
held.append(allocate(11, device=1))
held.append(allocate(99, device=0))
emit(data=mtrace.data(), device=mtrace.data_bytes().device)
""")
    assert result["data"] == [11, 0]
    assert result["device"] == 1


def test_sampled_source_sees_other_processes(sim):
    tool = SIM_DIR / "gpumem-sim"
    result = sim.run(SETUP + f"""
import subprocess
mtrace = GPUMemTrace(source="sampled", silent=True)
subprocess.run([{str(tool)!r}, "workload", "device 0; alloc a 200MiB; sleep 300ms; free a"],
               check=True)
mtrace.stop()
emit(data=mtrace.data(), source=mtrace.source)
""")
    assert result["source"] == "sampled"
    assert result["data"] == [0, 200]


def test_busy_cupti_falls_back_to_sampling(sim):
    sim.faults = "cupti_busy"
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(silent=True)
some_code(keep=10)
emit(source=mtrace.source, used=mtrace.data()[0])
""")
    assert result["source"] == "sampled"
    assert result["used"] == 10


def test_concurrent_traces_are_independent(sim):
    result = sim.run(SETUP + """
outer = GPUMemTrace(ctx="outer", silent=True)
some_code(keep=3)
inner = GPUMemTrace(ctx="inner", silent=True)
some_code(spike=50)
inner.stop()
some_code(keep=4)
emit(outer=outer.data(), inner=inner.data())
""")
    assert result["outer"] == [7, 46]  # peak 53 less the 7 still held
    assert result["inner"] == [0, 50]


def test_trace_endpoints_empty_torchs_cache_through_the_native_hook(sim):
    from test_queries import FAKE_TORCH

    result = sim.run(FAKE_TORCH + """
cache.pop().free()   # start empty; torch's current device is 1
from gpumem import GPUMemTrace
mtrace = GPUMemTrace(silent=True)
kept = allocate(30, device=1)
cache.append(allocate(100, device=1))   # torch keeps a freed block cached
mtrace.stop()                           # the hook empties it before the end is measured
emit(data=mtrace.data(), device=mtrace.data_bytes().device, emptied=calls.count("empty_cache"))
""")
    assert result["data"] == [30, 100]
    assert result["device"] == 1
    assert result["emptied"] == 2  # at start and at stop


def test_threads_sharing_a_trace_with_a_python_cache_hook_do_not_deadlock(sim):
    # The hook and the report sink take the GIL from inside native calls made without it.
    from test_queries import FAKE_TORCH

    result = sim.run(FAKE_TORCH + """
import contextlib, io, threading
from gpumem import GPUMemTrace, gpu_mem_get_used_no_cache
mtrace = GPUMemTrace(ctx="shared")
def work():
    for i in range(200):
        mtrace.reset(); mtrace.data(); mtrace.report(str(i)); gpu_mem_get_used_no_cache()
sink = io.StringIO()
with contextlib.redirect_stdout(sink):
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
emit(lines=len(sink.getvalue().splitlines()))
""", timeout=120)
    assert result["lines"] == 800


def test_silent_as_an_attribute_and_as_a_method(sim):
    # fastai.utils.mem's attribute shadowed its method: code assigned it; its docs called it.
    result = sim.run(SETUP + """
mtrace = GPUMemTrace(ctx="t")
states = [bool(mtrace.silent)]
mtrace.silent = True
states.append(bool(mtrace.silent))
mtrace.report("assigned True")        # nothing
mtrace.silent(False)                   # the method still works after an assignment
mtrace.report("called False")
mtrace.silent(silent=True)
mtrace.report_n_reset("called True")   # nothing
mtrace.silent = 0
mtrace.report("assigned 0")
states += [mtrace.silent == False, mtrace.silent == True, repr(mtrace.silent), mtrace.is_silent]
emit(states=states, class_doc=bool(GPUMemTrace.silent.__doc__))
""")
    assert result.lines == [line(0, 0, " (t: called False)"), line(0, 0, " (t: assigned 0)")]
    assert result["states"] == [False, True, True, False, "False", False]
    assert result["class_doc"] is True


def test_ctx_and_on_exit_report_are_assignable(sim):
    result = sim.run(SETUP + """
mtrace = GPUMemTrace()
mtrace.ctx = "renamed"
mtrace.report("sub")
mtrace.ctx = None
mtrace.report()
with GPUMemTrace(ctx="quiet") as quiet:
    quiet.on_exit_report = False
    some_code(keep=2)
with GPUMemTrace(on_exit_report=False) as loud:
    loud.on_exit_report = True
    loud.ctx = "loud"
    some_code(keep=3)
emit(ctx=loud.ctx, flag=quiet.on_exit_report)
""")
    assert result.lines == [line(0, 0, " (renamed: sub)"), line(0, 0), line(3, 0, " (loud: exit)")]
    assert result["ctx"] == "loud" and result["flag"] is False


def test_fastais_attributes_data_set_and_get_ctx(sim):
    result = sim.run(SETUP + """
held.append(allocate(40))
mtrace = GPUMemTrace(silent=True)
start = mtrace.used_start
some_code(keep=10, spike=25)
mtrace.data_set()
after_set = [mtrace.delta_used, mtrace.delta_peaked, mtrace.used_peak - mtrace.used_start]
some_code(keep=5)
unchanged = [mtrace.delta_used, mtrace.delta_peaked]   # as of the last data_set
emit(start_delta=mtrace.used_start - start, after_set=after_set, unchanged=unchanged,
     data=mtrace.data(), after_data=[mtrace.delta_used, mtrace.delta_peaked])
mtrace.stop()
some_code(keep=7)
emit(stopped=[mtrace.delta_used, mtrace.delta_peaked], start_mb=mtrace.used_start,
     start_bytes=mtrace.data_bytes().start,
     ctx=[GPUMemTrace(ctx="a")._get_ctx(), GPUMemTrace()._get_ctx("exit"),
          GPUMemTrace(ctx="a")._get_ctx("exit"), GPUMemTrace(ctx="a")._get_ctx(""),
          GPUMemTrace()._get_ctx()])
""")
    assert result["start_delta"] == 0
    assert result["after_set"] == [10, 25, 35]
    assert result["unchanged"] == [10, 25]
    assert result["data"] == [15, 20] and result["after_data"] == [15, 20]
    assert result["stopped"] == [15, 20]  # frozen at stop
    assert result["start_mb"] == result["start_bytes"] >> 20
    assert result["ctx"] == [" (a)", " (exit)", " (a: exit)", " (a: )", ""]


def test_construction_accepts_what_fastai_accepted(sim):
    # fastai.utils.mem stored its arguments as given; a non-string ctx only failed when reported.
    result = sim.run(SETUP + """
positional = GPUMemTrace(1, "pos", 0)
positional.report("x")           # silent (1 is true)
with positional: pass            # on_exit_report 0: no report
numbered = GPUMemTrace(ctx=3)
numbered.report()
numbered.report(4)
emit(ctx=numbered.ctx, silent=bool(positional.silent), on_exit=positional.on_exit_report)
""")
    assert result.lines == [line(0, 0, " (3)"), line(0, 0, " (3: 4)")]
    assert result["ctx"] == 3 and result["silent"] is True and result["on_exit"] == 0


def test_trace_devices_by_any_id_and_zeros_for_none(sim):
    result = sim.run(SETUP + """
import warnings
warnings.simplefilter("error")   # naming a device must not warn
traces = [GPUMemTrace(device=d, silent=True) for d in ("cuda:1", 1, "cuda:0")]
held.append(allocate(11, device=1))
emit(data=[t.data() for t in traces], devices=[t.data_bytes().device for t in traces])
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    bad = GPUMemTrace(device="cpu", silent=True)
held.append(allocate(5, device=0))
emit(bad=bad.data(), source=bad.source, warned=[str(w.message) for w in caught])
""")
    assert result["data"] == [[11, 0], [11, 0], [0, 0]]
    assert result["devices"] == [1, 1, 0]
    assert result["bad"] == [0, 0] and result["source"] == "none"
    assert "'cpu'" in result["warned"][0]


def test_a_trace_of_an_absurd_device_reports_zeros(sim):
    # Issue 24's absurd arguments: each names no device; the trace says so once and measures
    # nothing, never fails or crashes the program.
    result = sim.run(SETUP + """
import warnings
warnings.simplefilter("ignore")
traces = [GPUMemTrace(device=d, silent=True)
          for d in (float("nan"), 2**64, -2**63, b"0", 1j, "cuda:" + "9" * 5000)]
held.append(allocate(5, device=0))
emit(data=[t.data() for t in traces], sources=sorted({t.source for t in traces}))
""")
    assert result.returncode == 0, result.stderr
    assert result["data"] == [[0, 0]] * 6
    assert result["sources"] == ["none"]


def test_the_trace_measures_the_process_footprint_context_included(sim):
    # fastai.utils.mem's first example traced from before CUDA starts, on a GPU whose contexts
    # cost 500 MB: the context shows, as it did when fastai.utils.mem read the device.
    sim.config = {"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542,
                               "context_mib": 500}]}
    result = sim.run(SETUP + """
mtrace = GPUMemTrace()
some_code(keep=10)
mtrace.report('ctx')
b = mtrace.data_bytes()
emit(quantity=b.quantity, covers=list(b.covers), description=b.description,
     device=[b.device_used_start, b.device_used_end, b.device_used_peak], start=b.start, end=b.end)
""")
    assert result.lines == [line(510, 0, " (ctx)")]
    assert result["quantity"] == "process footprint"
    assert "context and modules" in result["covers"]
    assert result["description"].startswith("process footprint, exact")
    mib = 2**20
    assert result["device"] == [542 * mib, (542 + 510) * mib, (542 + 510) * mib]
    assert (result["start"], result["end"]) == (0, 510 * mib)
