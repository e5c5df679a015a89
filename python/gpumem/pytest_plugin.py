"""gpumem's pytest plugin: every test's GPU memory peak, and budgets for it (docs/ci.md).

Enabled by ``--gpumem`` (or ``gpumem = true`` in the ini file); while it is off the markers
``limit_gpu_memory`` and ``limit_gpu_leaks`` do nothing. Per test and per visible device it
records the process footprint at the test's start, its peak and its end (exact where CUPTI
works, sampled otherwise, as the trace's ``source`` says), fails a test whose peak rose above
its start by more than its ``limit_gpu_memory``, or that ends holding more than its
``limit_gpu_leaks`` above its start, and prints the tests with the highest peaks per device.

What is measured is the test function's call, as pytest-memray measures it: fixtures' set-up and
tear-down are outside it. One trace per device lives for the whole session (the exact source's
subscription stays up); each test only re-baselines and reads it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Generator, List, Optional, Tuple

import pytest

from . import _attribution, _diagnosis, _framework, _native

LIMIT_MARK = "limit_gpu_memory"
LEAKS_MARK = "limit_gpu_leaks"
JSON_SCHEMA = "gpumem.pytest/1"
# A worker's report, as the controller reads it under pytest-xdist: one JSON line per test, each at
# most this long (a test's figures take a few hundred bytes per device), read one at a time.
_WORKER_LINE_CAP = 1 << 20
_WORKER_KEY = "gpumem"
_PROBLEMS_SHOWN = 3  # per worker: the lines of a bad report named, then how many more
_STACKS_SHOWN = 5
_MIB = 2**20


def _mib(size: int) -> str:
    return f"{size / _MIB:.1f} MiB"


def _how(source: str) -> str:
    if source == "exact":
        return "measured exactly"
    if source == "sampled":
        return "sampled: the peak may have been higher"
    return f"source {source}"


@dataclass
class _Limit:
    """One marker's budget: ``size`` bytes (written as ``text``) on ``device`` (None: each
    measured device)."""

    mark: str
    text: str
    size: int
    device: Optional[int]

    def applies_to(self, device: int) -> bool:
        return self.device is None or self.device == device


@dataclass
class _DeviceFigures:
    """One test's readings on one device, in bytes: the process footprint at the test's start,
    its peak during the test and its level at the end (after the frameworks' caches were
    released), with where the peak came from."""

    device: int
    source: str
    quantity: str
    start: int
    peak: int
    end: int
    top: Optional[str] = None  # with --gpumem-attribute: who held the most at the peak

    @property
    def rise(self) -> int:
        return max(self.peak - self.start, 0)

    @property
    def held(self) -> int:
        return self.end - self.start


@dataclass
class _TestFigures:
    nodeid: str
    devices: List[_DeviceFigures] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)
    worker: Optional[str] = None

    def as_json(self) -> Dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "worker": self.worker,
            "over_limit": bool(self.failures),
            "devices": [
                dict(asdict(figures), peak_above_start=figures.rise, held_at_end=figures.held)
                for figures in self.devices
            ],
        }

    @staticmethod
    def from_json(document: object) -> "_TestFigures":
        """A worker's record of one test (``as_json``), checked field by field: ValueError saying
        what is wrong with it."""
        if not isinstance(document, dict):
            raise ValueError("a test's record is not an object")
        devices = document.get("devices", [])
        if not isinstance(devices, list):
            raise ValueError("its devices are not a list")
        figures = _TestFigures(nodeid=_text(document.get("nodeid"), "nodeid"),
                               worker=_text(document.get("worker"), "worker", optional=True))
        for entry in devices:
            if not isinstance(entry, dict):
                raise ValueError("a device's figures are not an object")
            figures.devices.append(_DeviceFigures(
                device=_whole(entry.get("device"), "device"),
                source=_text(entry.get("source"), "source"),
                quantity=_text(entry.get("quantity"), "quantity"),
                start=_whole(entry.get("start"), "start"), peak=_whole(entry.get("peak"), "peak"),
                end=_whole(entry.get("end"), "end"),
                top=_text(entry.get("top"), "top", optional=True)))
        if document.get("over_limit") is True:
            figures.failures.append("over a limit")
        return figures


def _text(value: object, name: str, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if type(value) is not str:
        raise ValueError(f"its {name} is not text")
    return value


def _whole(value: object, name: str) -> int:
    if type(value) is not int or not -2**63 <= value < 2**64:
        raise ValueError(f"its {name} is not a whole number of bytes")
    return value


def _worker_records(text: object) -> Generator[Tuple[int, Any], None, None]:
    """A worker's report (one JSON line per test), one ``(line number, record or ValueError)`` at
    a time: no line is decoded beyond ``_WORKER_LINE_CAP`` characters, and nothing but the line
    being read is held besides what the caller keeps."""
    if not isinstance(text, str):
        yield 0, ValueError("its report is not text")
        return
    at, number = 0, 0
    while at < len(text):
        end = text.find("\n", at, at + _WORKER_LINE_CAP + 1)
        number += 1
        if end < 0:
            if len(text) - at > _WORKER_LINE_CAP:
                yield number, ValueError(f"line {number} is over {_WORKER_LINE_CAP} characters")
                end = text.find("\n", at + _WORKER_LINE_CAP)
                at = len(text) if end < 0 else end + 1
                continue
            end = len(text)
        line = text[at:end]
        at = end + 1
        if not line.strip():
            continue
        try:
            yield number, _TestFigures.from_json(json.loads(line))
        except (ValueError, RecursionError) as error:
            yield number, ValueError(f"line {number}: {error}")


def parse_size(text: object) -> int:
    """``text`` ("2 GiB", "512MB") as bytes, by gpumem's one parser of sizes (the one of
    ``gpumem run --max-peak``); ValueError saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"expected a size as text, such as \"2 GiB\", not "
                         f"{_framework.shown(text)}")
    return int(_native.parse_byte_size(str.__str__(text)))


def _limit(marker: Any) -> _Limit:
    """A marker's budget; ValueError saying what is wrong with it (whatever its arguments do:
    an object whose ``__repr__``, ``__index__`` or ``__getattr__`` raises is a bad argument)."""
    if len(marker.args) != 1 or set(marker.kwargs) - {"device"}:
        raise ValueError(f"takes one size and an optional device= "
                         f"(@pytest.mark.{marker.name}(\"2 GiB\", device=0))")
    text = marker.args[0]
    try:
        size = parse_size(text)
    except Exception as error:  # noqa: BLE001 - a hostile size object's own errors included
        raise ValueError(f"bad size {_framework.shown(text)}: {error}") from None
    device: Optional[int] = None
    named = marker.kwargs.get("device")
    if named is not None:
        device = _framework.resolve_device(named)  # never raises: None for what names no GPU
        if device is None:
            raise ValueError(f"device={_framework.shown(named)} names no GPU")
    return _Limit(marker.name, str.__str__(text), size, device)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpumem", "GPU memory of each test (gpumem)")
    group.addoption(
        "--gpumem", action="store_true", default=False,
        help="measure each test's GPU memory peak (process footprint, per device) and enforce "
             "the limit_gpu_memory and limit_gpu_leaks markers")
    group.addoption(
        "--gpumem-top", type=int, default=5, metavar="N",
        help="after the session, list the N tests with the highest peaks per device (default 5; "
             "0: none)")
    group.addoption(
        "--gpumem-json", metavar="FILE", default=None,
        help="write every test's figures to FILE (JSON, gpumem.pytest/1; a regular file, new or "
             "replaced, or '-' for stdout: checked before the first test)")
    group.addoption(
        "--gpumem-attribute", action="store_true", default=False,
        help="record the allocating stacks of every test (tests with a limit_gpu_memory marker "
             "always have them)")
    parser.addini("gpumem", type="bool", default=False,
                  help="measure each test's GPU memory, as --gpumem does")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{LIMIT_MARK}(size, device=None): fail the test when its GPU memory peak rises more than "
        "size (\"2 GiB\", \"500 MB\") above its start, on the device or on any (with --gpumem)")
    config.addinivalue_line(
        "markers",
        f"{LEAKS_MARK}(size, device=None): fail the test when it ends holding more than size of "
        "GPU memory above its start, on the device or on any (with --gpumem)")
    if config.getoption("gpumem") or config.getini("gpumem"):
        config.pluginmanager.register(GPUMemPlugin(config), "gpumem-measure")


def _check_json_path(config: pytest.Config, path: str) -> None:
    """``--gpumem-json``'s file by gpumem's rule for every output (the library's: ``-`` or a
    regular file, new or replaced; never through a link or into a special file), checked before
    the first test rather than after the last; and not the file of pytest's own ``--junitxml``."""
    if path == "-":
        return
    outputs = [("--gpumem-json", os.fsencode(path))]
    refusal = _native.check_outputs(outputs)
    junit = getattr(config.option, "xmlpath", None)
    if refusal is None and junit and (_native.output_identity(os.fsencode(junit))
                                      == _native.output_identity(os.fsencode(path))):
        refusal = f"--junitxml and --gpumem-json both name {path}: each needs a file of its own"
    if refusal is not None:  # it quotes the path: shown as gpumem shows untrusted text
        raise pytest.UsageError(f"gpumem: {_native.printable(refusal.encode('utf-8', 'replace'))}")


class _Session:
    """The session's traces, one per visible device: alive from the first test to the end, so
    the exact source stays subscribed and each test costs a re-baseline and a read."""

    def __init__(self, attribute: bool) -> None:
        _framework.ensure_cache_hook()
        self.devices = list(range(_native.device_count()))
        # The first trace releases the frameworks' caches before its endpoints; the others read
        # right after it, so they need not release them again.
        self.traces = [
            _native.Trace(silent=True, on_exit_report=False, device=device, no_cache=index == 0,
                          attribute=attribute)
            for index, device in enumerate(self.devices)
        ]
        self.attribute = attribute

    def reset(self) -> None:
        for trace in self.traces:
            trace.reset()

    def read(self) -> List[_DeviceFigures]:
        figures = []
        for device, trace in zip(self.devices, self.traces):
            data = trace.data_bytes()
            figures.append(_DeviceFigures(
                device=device, source=str(data["source"]), quantity=str(data["quantity"]),
                start=int(data["start"]), peak=int(data["peak"]), end=int(data["end"])))
        return figures

    def close(self) -> None:
        for trace in self.traces:
            trace.stop()


def _peak_snapshot(trace: Any) -> Optional[_attribution.AttributionSnapshot]:
    try:
        return _attribution._wrap(trace.peak_snapshot())
    except (RuntimeError, MemoryError):  # nothing recorded: the failure says there are no stacks
        return None


def _top_allocation(snapshot: Optional[_attribution.AttributionSnapshot]) -> Optional[str]:
    """Where the stack that held the most at the peak allocated, as ``function (file:line)``."""
    by_stack = snapshot.bytes_by_stack() if snapshot is not None else []
    return snapshot.allocated_by(by_stack[0][0]) if snapshot is not None and by_stack else None


class GPUMemPlugin:
    """What ``--gpumem`` registers: measures each test, enforces the markers, reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.top = int(config.getoption("gpumem_top"))
        self.json_path: Optional[str] = config.getoption("gpumem_json")
        self.problems: List[str] = []
        self.attribute_all = bool(config.getoption("gpumem_attribute"))
        self.limits: Dict[str, List[_Limit]] = {}
        self.bad_markers: Dict[str, str] = {}
        self.results: List[_TestFigures] = []
        self.session: Optional[_Session] = None
        self.worker: Optional[str] = None
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            self.worker = str(workerinput.get("workerid"))
        elif self.json_path:
            _check_json_path(config, self.json_path)

    # Collection: every marker's size is read once, and a bad one stops the session (under
    # pytest-xdist, where a worker cannot stop it, it is an error of each test that has it).
    def pytest_collection_modifyitems(self, items: List[pytest.Item]) -> None:
        problems: List[str] = []
        for item in items:
            before = len(problems)
            limits = []
            for name in (LIMIT_MARK, LEAKS_MARK):
                for marker in item.iter_markers(name):
                    try:
                        limits.append(_limit(marker))
                    except Exception as error:  # noqa: BLE001 - any bad marker is the test's
                        problems.append(f"{item.nodeid}: @pytest.mark.{name}: {error}")
            visible = _native.device_count() if limits else 0
            for limit in limits:
                if limit.device is not None and visible and limit.device >= visible:
                    problems.append(f"{item.nodeid}: @pytest.mark.{limit.mark}: device="
                                    f"{limit.device} names no visible GPU ({visible} visible)")
            if limits:
                self.limits[item.nodeid] = limits
            if self.worker is not None and len(problems) > before:
                self.bad_markers[item.nodeid] = "\n".join(problems[before:])
        if problems and self.worker is None:
            raise pytest.UsageError("gpumem: " + "\ngpumem: ".join(problems))

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        problem = self.bad_markers.get(item.nodeid)
        if problem is not None:
            pytest.fail(f"gpumem: {problem}", pytrace=False)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        if self.session is None:
            self.session = _Session(self.attribute_all)
        session = self.session
        limits = self.limits.get(item.nodeid, [])
        memory_limits = [limit for limit in limits if limit.mark == LIMIT_MARK]
        session.reset()
        # A test with a budget gets a trace that attributes, so that its failure names the
        # stacks live at its peak (the session's traces attribute with --gpumem-attribute).
        attributing: Dict[int, Any] = {}
        if memory_limits and not session.attribute:
            for device in session.devices:
                if any(limit.applies_to(device) for limit in memory_limits):
                    attributing[device] = _native.Trace(
                        silent=True, on_exit_report=False, device=device, no_cache=False,
                        attribute=True)
        try:
            yield
        finally:
            figures = _TestFigures(item.nodeid, session.read(), worker=self.worker)
            snapshots: Dict[int, Any] = {}
            for reading, trace in zip(figures.devices, session.traces):
                source = attributing.get(reading.device, trace if session.attribute else None)
                if source is not None and reading.rise > 0:
                    snapshots[reading.device] = _peak_snapshot(source)
                    if session.attribute:
                        reading.top = _top_allocation(snapshots[reading.device])
            for trace in attributing.values():
                trace.stop()
            figures.failures = self._check(figures, limits, snapshots)
            self.results.append(figures)

    def _check(self, figures: _TestFigures, limits: List[_Limit],
               snapshots: Dict[int, Any]) -> List[str]:
        failures = []
        for limit in limits:
            for reading in figures.devices:
                if not limit.applies_to(reading.device):
                    continue
                if limit.mark == LIMIT_MARK:
                    # The library's verdict (gpumem::judge_peak), as `gpumem run --max-peak`'s.
                    verdict = _native.judge_peak(reading.rise, limit.size,
                                                 reading.source == "exact")
                    if verdict.exceeded:
                        failures.append(self._over_limit(figures.nodeid, reading, limit, verdict,
                                                         snapshots.get(reading.device)))
                elif limit.mark == LEAKS_MARK:
                    # What was held at the end is read, not a peak between samples: exact.
                    verdict = _native.judge_peak(reading.held, limit.size, True)
                    if verdict.exceeded:
                        failures.append(
                            f"gpumem: {figures.nodeid} ended holding {_mib(reading.held)} above "
                            f"its start on GPU {reading.device},\n"
                            f"  over its {LEAKS_MARK} of {_mib(limit.size)} ({limit.text!r}) by "
                            f"{_mib(verdict.over_bytes)}\n"
                            f"  ({reading.quantity} {_mib(reading.start)} -> "
                            f"{_mib(reading.end)}, frameworks' caches released)")
        return failures

    def _over_limit(self, nodeid: str, reading: _DeviceFigures, limit: _Limit, verdict: Any,
                    snapshot: Optional[_attribution.AttributionSnapshot]) -> str:
        lines = [
            f"gpumem: {nodeid} peaked {_mib(reading.rise)} above its start on GPU "
            f"{reading.device},",
            f"  over its {LIMIT_MARK} of {_mib(limit.size)} ({limit.text!r}) by "
            f"{_mib(verdict.over_bytes)}",
            f"  ({reading.quantity} {_mib(reading.start)} -> peak {_mib(reading.peak)}, "
            f"{_how(reading.source)})"]
        if snapshot is None:
            lines.append("  (no allocating stacks: attribution needs the exact source)")
            return "\n".join(lines)
        count = len(snapshot.blocks)
        lines.append(f"  allocations live at the peak, the largest first "
                     f"({_mib(snapshot.live_bytes)} in {count} block{'s' if count != 1 else ''}):")
        for stack, held in snapshot.bytes_by_stack()[:_STACKS_SHOWN]:
            lines.append(f"    {_mib(held):>12}  {snapshot.allocated_by(stack) or '(unknown)'}")
        unknown = snapshot.live_bytes - sum(held for _, held in snapshot.bytes_by_stack())
        if unknown > 0:
            lines.append(f"    {_mib(unknown):>12}  no stack: allocated while attribution was off "
                         "(--gpumem-attribute)")
        outside = reading.peak - snapshot.live_bytes
        if outside > 0:
            lines.append(f"    {_mib(outside):>12}  in no block: the CUDA context, modules, the "
                         "driver's rounding")
        return "\n".join(lines)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        if call.when != "call" or not self.results or self.results[-1].nodeid != item.nodeid:
            return
        failures = self.results[-1].failures
        if not failures:
            return
        report = outcome.get_result()
        text = "\n".join(failures)
        if report.passed:
            report.outcome = "failed"
            report.longrepr = text
        else:  # failed on its own: the budget's verdict goes beside its traceback
            report.sections.append(("gpumem", text))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.session is not None:
            self.session.close()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            # Under pytest-xdist each worker measures its own tests; the controller combines them,
            # reading one line (one test) at a time.
            workeroutput[_WORKER_KEY] = "".join(
                json.dumps(r.as_json()) + "\n" for r in self.results)
            return
        if self.json_path and not self._write_json(self.json_path):
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the figures were lost

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if _WORKER_KEY not in output:
            return
        name = str(getattr(getattr(node, "gateway", None), "id", None) or "a worker")
        skipped = 0
        for _, record in _worker_records(output[_WORKER_KEY]):
            if isinstance(record, _TestFigures):
                self.results.append(record)
                continue
            skipped += 1
            if skipped <= _PROBLEMS_SHOWN:
                self.problems.append(f"gpumem: {name}'s report: {record} (skipped)")
        if skipped > _PROBLEMS_SHOWN:
            self.problems.append(f"gpumem: {name}'s report: {skipped - _PROBLEMS_SHOWN} more lines "
                                 "skipped")

    def _write_json(self, path: str) -> bool:
        document = {
            "schema": JSON_SCHEMA,
            "devices": self._device_names(),
            "tests": [r.as_json() for r in self.results],
        }
        text = json.dumps(document, indent=1) + "\n"
        if path == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
            return True
        # By the rule checked at the session's start, again now (the path may have changed).
        refusal = _native.write_output(os.fsencode(path), text.encode("utf-8"))
        if refusal is not None:
            self.problems.append(f"gpumem: --gpumem-json: {_native.printable(refusal.encode())}")
        return refusal is None

    def _device_names(self) -> Dict[str, str]:
        try:
            return {str(d["device"]): str(d.get("name") or "") for d in _native.devices()}
        except Exception:  # noqa: BLE001 - names are a courtesy; the figures are the document
            return {}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker is not None:
            return
        write = terminalreporter.write_line
        for problem in self.problems:
            write(problem)
        if self.top <= 0:
            return
        terminalreporter.write_sep("=", "GPU memory peaks (gpumem)")
        if not self.results:
            write("gpumem: no test ran")
            return
        names = self._device_names()
        by_device: Dict[int, List[Tuple[_TestFigures, _DeviceFigures]]] = {}
        for result in self.results:
            for reading in result.devices:
                by_device.setdefault(reading.device, []).append((result, reading))
        if not by_device:
            # A job without a GPU runs its tests; its budgets are not checked, and it says so.
            unchecked = sum(1 for r in self.results if r.nodeid in self.limits)
            write(f"gpumem: no GPU measured ({_diagnosis.no_gpu_reason()}); the limits of "
                  f"{unchecked} test{'s' if unchecked != 1 else ''} were not checked")
        for device in sorted(by_device):
            rows = [row for row in by_device[device] if row[1].rise > 0]
            label = f"GPU {device}" + (f" ({names[str(device)]})" if names.get(str(device)) else "")
            sources = sorted({reading.source for _, reading in by_device[device]})
            how = " and ".join("exactly" if s == "exact" else s for s in sources)
            if not rows:
                write(f"{label}, measured {how}: no test raised its footprint")
                continue
            rows.sort(key=lambda row: -row[1].rise)
            shown = rows[: self.top]
            write(f"{label}, measured {how}: the {len(shown)} highest peaks of "
                  f"{len(by_device[device])} tests")
            write(f"  {'above start':>12}  {'peak':>12}  test  (process footprint)")
            for result, reading in shown:
                mark = "  over its limit" if result.failures else ""
                sampled = "" if reading.source == "exact" else f" ({reading.source})"
                write(f"  {_mib(reading.rise):>12}  {_mib(reading.peak):>12}  "
                      f"{result.nodeid}{sampled}{mark}")
                if reading.top:
                    write(f"  {'':>12}  {'':>12}    most held by {reading.top}")
        if self.json_path:
            write(f"gpumem: every test's figures in {self.json_path}")
