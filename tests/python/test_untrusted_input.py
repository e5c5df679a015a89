"""Issue 30's second round on the Python side, and issue 31's findings on the way: the documented
API never raises for a device argument (hostile ``__index__``, ``__getattr__``, ``__eq__``,
``__repr__``, recursion), device strings are read strictly (``cuda:N``, ASCII digits), the
pytest plugin turns a bad marker into an error of its test (also under pytest-xdist), writes its
JSON by gpumem's one output rule (checked at the session's start) and reads its workers' reports
one bounded line at a time; ``gpumem.testing.allocate`` says in one short line what is wrong with
a size and leaves the current device alone when it fails; a trace of a device that is not there
says so rather than "no GPU"."""

from __future__ import annotations

import importlib.util
import json
import os
import stat

import pytest

from conftest import A100_IDLE, H200_IDLE
from test_pytest_plugin import run  # noqa: F401 - the plugin's tests' fixture: pytest in pytester

pytest_plugins = ("pytester",)
needs_xdist = pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                                 reason="pytest-xdist is not installed (python3-pytest-xdist)")

# Objects a caller could pass as a device: each raises (or recurses) in the hook Python calls.
HOSTILE = """
import sys

class RaisingIndex:
    def __index__(self):
        raise RuntimeError("index")

class RaisingGetattr:
    def __getattr__(self, name):
        raise RuntimeError("getattr " + name)

class RecursingIndex:
    def __index__(self):
        return self.__index__()

class RaisingClass:
    @property
    def __class__(self):
        raise RuntimeError("__class__")

class RaisingType:
    index = 0
    @property
    def type(self):
        raise KeyError("type")

class EqualsRaises(str):
    def __eq__(self, other):
        raise RuntimeError("eq")
    __hash__ = str.__hash__

class TypeWithHostileEq:
    type = EqualsRaises("cuda")
    index = 0

class RaisingRepr:
    def __index__(self):
        raise ValueError("index")
    def __repr__(self):
        raise RuntimeError("repr")

class IntWithHostileCompare(int):
    def __le__(self, other):
        raise RuntimeError("le")
    def __ge__(self, other):
        raise RuntimeError("ge")

class StrWithHostileMethods(str):
    def partition(self, sep):
        raise RuntimeError("partition")
    def strip(self, *a):
        raise RuntimeError("strip")
    def __str__(self):
        raise RuntimeError("str")

HOSTILE = {
    "RaisingIndex": RaisingIndex(), "RaisingGetattr": RaisingGetattr(),
    "RecursingIndex": RecursingIndex(), "RaisingClass": RaisingClass(),
    "RaisingType": RaisingType(), "RaisingRepr": RaisingRepr(),
}
"""


def test_hostile_device_objects_give_zeros_and_never_raise(sim):
    result = sim.run(HOSTILE + """
import gpumem
readings = {}
for name, bad in HOSTILE.items():
    try:
        readings[name] = [list(gpumem.gpu_mem_get(bad)), gpumem.gpu_handle(bad).valid,
                          gpumem.gpu_mem_get_used_fast(bad)]
    except BaseException as error:
        readings[name] = f"raised {type(error).__name__}: {error}"
emit(readings=readings, diagnostics=gpumem.diagnostics(),
     one=list(gpumem.gpu_mem_get(IntWithHostileCompare(1))),
     # A type that is the text "cuda" names CUDA, whatever its class's __eq__ does.
     zero=list(gpumem.gpu_mem_get(TypeWithHostileEq())),
     text=list(gpumem.gpu_mem_get(StrWithHostileMethods("cuda:1"))))
""")
    for name, reading in result["readings"].items():
        assert reading == [[0, 0, 0], False, 0], name
    notes = result["diagnostics"]
    assert "GPU id <RaisingRepr object>: not a device id (ValueError); zeros returned" in notes
    assert any(n.startswith("GPU id <__main__.RaisingIndex object at") and
               n.endswith(": not a device id (RuntimeError); zeros returned") for n in notes), notes
    assert any("(RecursionError)" in n for n in notes), notes
    # What names a device still does, whatever its class does on the side.
    assert result["one"] == list(A100_IDLE)
    assert result["text"] == list(A100_IDLE)
    assert result["zero"] == list(H200_IDLE)


def test_a_trace_of_a_hostile_device_reports_zeros(sim):
    result = sim.run(HOSTILE + """
import warnings
import gpumem
warnings.simplefilter("ignore")
traces = [gpumem.GPUMemTrace(device=bad, silent=True) for bad in HOSTILE.values()]
emit(data=[t.data() for t in traces], sources=sorted({t.source for t in traces}))
""")
    assert result["data"] == [[0, 0]] * 6
    assert result["sources"] == ["none"]


# Issue 30: int() reads "0_1", "+1", " 1" and other scripts' digits as numbers, so these named
# GPU 1; torch refuses them, and so does gpumem.
STRICT = ["cuda:0_1", "cuda:\u0661", "cuda:+1", "cuda: 1", "cuda:1 ", " cuda:1", "cuda:01",
          "cuda:\uff11", "CUDA:1", "cuda:1.0", "cuda:", "cuda:-1", "cuda::1", "cuda:1:0"]


def test_device_strings_are_read_strictly(sim):
    result = sim.run(f"""
import gpumem
emit(readings={{text: list(gpumem.gpu_mem_get(text)) for text in {STRICT!r}}},
     one=list(gpumem.gpu_mem_get("cuda:1")), zero=list(gpumem.gpu_mem_get("cuda:0")),
     notes=gpumem.diagnostics())
""")
    for text in STRICT:
        assert result["readings"][text] == [0, 0, 0], text
    assert result["one"] == list(A100_IDLE)
    assert result["zero"] == list(H200_IDLE)
    assert "GPU id 'cuda:0_1': not a device id; zeros returned" in result["notes"]
    assert "GPU id 'cuda:\u0661': not a device id; zeros returned" in result["notes"]


# Issue 31: GPUMemTrace(device='cuda:5') on two GPUs warned "nothing can measure GPU memory here
# (no GPU)".
def test_a_trace_of_a_device_that_is_not_there_says_so(sim):
    result = sim.run("""
import warnings
import gpumem
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    trace = gpumem.GPUMemTrace(device="cuda:5", silent=True)
emit(warned=[str(w.message) for w in caught], source=trace.source, data=trace.data(),
     notes=gpumem.diagnostics())
""")
    assert result["warned"] == ["gpumem.GPUMemTrace: GPU id 'cuda:5' names none of the 2 visible "
                                "GPUs; the trace reports zeros"]
    assert result["source"] == "none" and result["data"] == [0, 0]
    assert "GPU id 5: no such device (2 visible); zeros returned" in result["notes"]


# Issue 31: allocate("1GiB") failed with a 4 MB message ("1GiB" * 2**20 handed to int()).
def test_allocate_reads_a_size_as_text_and_says_what_is_wrong_in_one_short_line(sim):
    result = sim.run("""
import gpumem
from gpumem.testing import allocate
block = allocate("3 MiB", device=1)
errors = {}
for size in ("1GiBs", "12", [1], "-1 GiB", float("inf")):
    try:
        allocate(size)
    except (TypeError, ValueError) as error:
        errors[repr(size)] = f"{type(error).__name__}: {error}"
emit(size=block.size, used=gpumem.gpu_mem_get(1).used, errors=errors)
""")
    assert result["size"] == 3 * 2**20
    assert result["used"] == A100_IDLE[2] + 3
    errors = result["errors"]
    assert errors["'1GiBs'"].startswith("ValueError: allocate: bad size '1GiBs': unknown unit")
    assert errors["'12'"].startswith("ValueError: allocate: bad size '12': no unit")
    assert errors["[1]"] == ('TypeError: allocate: mb must be a number of MB or a size as text '
                             '("1 GiB"), not [1]')
    assert errors["'-1 GiB'"].startswith("ValueError: allocate: bad size '-1 GiB'")
    assert errors["inf"] == "ValueError: allocate needs a positive size, not inf MB"
    assert all(len(text) < 200 for text in errors.values())


# Issue 31: a failed allocate left the device it chose current.
def test_a_failed_allocation_leaves_the_current_device_as_it_was(sim):
    result = sim.run("""
import gpumem
from gpumem.testing import allocate
held = allocate(5, device=0)  # device 0 is current now
try:
    allocate(10**9, device=1)  # more than the A100 has
except MemoryError as error:
    refused = str(error)
emit(refused=refused, current=list(gpumem.gpu_mem_get()), zero=list(gpumem.gpu_mem_get(0)))
""")
    assert result["refused"].startswith("cannot allocate")
    assert result["current"] == result["zero"]


HOSTILE_MARKER = """\
    import pytest

    class Hostile:
        def __index__(self):
            raise RuntimeError("hostile")
        def __getattr__(self, name):
            raise RuntimeError("hostile " + name)
        def __repr__(self):
            raise RuntimeError("hostile repr")

    @pytest.mark.limit_gpu_memory("1 GiB", device=Hostile())
    def test_hostile_device():
        pass

    @pytest.mark.limit_gpu_memory(Hostile())
    def test_hostile_size():
        pass

    def test_good():
        pass
    """


# Issue 30: a device object that raises gave pytest an INTERNALERROR.
def test_a_hostile_marker_is_a_usage_error_naming_its_test_not_an_internal_error(run):
    result = run(HOSTILE_MARKER, "--gpumem")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "INTERNALERROR" not in err + result.stdout.str()
    assert ("test_suite.py::test_hostile_device: @pytest.mark.limit_gpu_memory: "
            "device=<Hostile object> names no GPU") in err
    assert ("test_suite.py::test_hostile_size: @pytest.mark.limit_gpu_memory: bad size "
            "<Hostile object>: expected a size as text") in err


# Issue 30: under xdist it killed the session with an empty JSON.
@needs_xdist
def test_under_xdist_a_hostile_marker_is_an_error_of_its_test(run, tmp_path):
    out = tmp_path / "figures.json"
    result = run(HOSTILE_MARKER, "--gpumem", "-n", "2", f"--gpumem-json={out}")
    result.assert_outcomes(passed=1, errors=2)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    document = json.loads(out.read_text())
    assert document["schema"] == "gpumem.pytest/1"
    assert [t["nodeid"] for t in document["tests"]] == ["test_suite.py::test_good"]


PASSING = """\
    def test_one():
        pass
    """


# Issue 30: --gpumem-json wrote through links, /dev/stdout and /proc/self/fd/1, hung on a FIFO at
# the session's end and failed on a directory only after every test ran. Each is refused before
# the first test, and what it names is left alone.
def test_the_json_is_refused_before_any_test_where_it_must_not_be_written(run, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    marker = tmp_path / "ran"
    source = f"""\
        def test_one():
            open({str(marker)!r}, "w").close()
        """
    for path, why in [(link, "it is a symbolic link"), ("/dev/stdout", "it is a symbolic link"),
                      ("/proc/self/fd/1", "it is a symbolic link"), (fifo, "it is a FIFO"),
                      (folder, "it is a directory")]:
        result = run(source, "--gpumem", f"--gpumem-json={path}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, path
        assert f"gpumem: --gpumem-json: cannot write {path}: {why}" in result.stderr.str(), path
        assert not marker.exists(), path
    assert victim.read_text() == "precious"
    assert link.is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode) and folder.is_dir()


def test_the_json_replaces_a_file_keeping_its_mode_and_says_schema(run, tmp_path):
    out = tmp_path / "figures.json"
    out.write_text("old")
    out.chmod(0o600)
    run(PASSING, "--gpumem", f"--gpumem-json={out}").assert_outcomes(passed=1)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    document = json.loads(out.read_text())
    # Issue 31: it said "format" where every other document says "schema".
    assert document["schema"] == "gpumem.pytest/1" and "format" not in document
    assert [t["nodeid"] for t in document["tests"]] == ["test_suite.py::test_one"]


def test_the_json_and_junitxml_cannot_name_one_file(run, tmp_path):
    result = run(PASSING, "--gpumem", f"--gpumem-json={tmp_path}/r.xml",
                 f"--junitxml={tmp_path}/./r.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--junitxml and --gpumem-json both name" in result.stderr.str()


# A worker's report is read one line (one test) at a time, each line capped, each field checked:
# a malformed or oversized report is named and skipped, never an INTERNALERROR.
def test_worker_reports_are_read_line_by_line_with_a_cap():
    from gpumem import pytest_plugin

    good = {"nodeid": "t.py::a", "worker": "gw0", "over_limit": False,
            "devices": [{"device": 0, "source": "exact", "quantity": "process footprint",
                         "start": 0, "peak": 5, "end": 0, "top": None}]}
    huge = "x" * (pytest_plugin._WORKER_LINE_CAP + 10)
    text = "\n".join([json.dumps(good), "not json", json.dumps([1]), huge,
                      json.dumps(dict(good, nodeid=7)),
                      json.dumps(dict(good, devices=[dict(good["devices"][0], peak="5")])),
                      "[" * 100000, "", json.dumps(dict(good, nodeid="t.py::b"))])
    records = list(pytest_plugin._worker_records(text))
    kept = [r.nodeid for _, r in records if isinstance(r, pytest_plugin._TestFigures)]
    problems = [str(r) for _, r in records if not isinstance(r, pytest_plugin._TestFigures)]
    assert kept == ["t.py::a", "t.py::b"]
    assert problems[0].startswith("line 2: ")
    assert problems[1] == "line 3: a test's record is not an object"
    assert problems[2] == f"line 4 is over {pytest_plugin._WORKER_LINE_CAP} characters"
    assert problems[3] == "line 5: its nodeid is not text"
    assert problems[4] == "line 6: its peak is not a whole number of bytes"
    assert problems[5].startswith("line 7: ")
    assert list(pytest_plugin._worker_records(None)) and not list(pytest_plugin._worker_records(""))


@needs_xdist
def test_a_worker_that_sends_a_bad_report_is_named_and_the_rest_kept(run, pytester, tmp_path):
    out = tmp_path / "figures.json"
    # A conftest that spoils the report each worker hands the controller after gpumem made it.
    pytester.makeconftest("""
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(session):
            output = getattr(session.config, "workeroutput", None)
            if output is not None and "gpumem" in output:
                output["gpumem"] = "{not json\\n" + output["gpumem"] + "[" * 100000 + "\\n"
        """)
    result = run(PASSING, "--gpumem", "-n", "1", f"--gpumem-json={out}")
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "gpumem: gw0's report: line 1: " in text and "(skipped)" in text
    assert "INTERNALERROR" not in text + result.stderr.str()
    tests = json.loads(out.read_text())["tests"]
    assert [t["nodeid"] for t in tests] == ["test_suite.py::test_one"]
