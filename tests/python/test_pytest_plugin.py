"""gpumem's pytest plugin (gpumem.pytest_plugin, docs/ci.md), run by pytester in pytest
processes of their own on a private simulated GPU (conftest.py's two GPUs, contexts of 0 MiB:
a test's footprint is exactly what it allocated). Entry points are not installed in the build
tree, so the plugin is loaded with ``-p gpumem.pytest_plugin``."""

from __future__ import annotations

import importlib.util
import json
import re
import textwrap

import pytest

from gpumem import _native

pytest_plugins = ("pytester",)

MiB = 2**20
PLUGIN = ("-p", "gpumem.pytest_plugin", "-p", "no:cacheprovider")


@pytest.fixture
def run(pytester, monkeypatch, tmp_path):
    """Runs pytest on the given test file's text in a subprocess; returns its RunResult."""
    monkeypatch.setenv("GPUMEM_SIM_STATE", str(tmp_path / "sim.state"))

    def run_pytest(source: str, *args: str):
        pytester.makepyfile(test_suite=textwrap.dedent(source))
        return pytester.runpytest_subprocess(*PLUGIN, *args)

    return run_pytest


def figures(path) -> dict:
    """nodeid -> device -> that device's entry in the plugin's JSON."""
    document = json.loads(path.read_text())
    assert document["schema"] == "gpumem.pytest/1"
    return {
        test["nodeid"].split("::")[-1]: {d["device"]: d for d in test["devices"]}
        for test in document["tests"]
    }


def line_of(source: str, text: str) -> int:
    """The 1-based line of ``text`` in the dedented ``source`` (as pytester writes it)."""
    lines = textwrap.dedent(source).splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


OVER_LIMIT = """\
    import pytest
    from gpumem.testing import allocate

    @pytest.mark.limit_gpu_memory("200 MiB")
    def test_over():
        weights = allocate(300)
        weights.free()
    """


def test_a_test_over_its_limit_fails_naming_the_limit_the_peak_and_the_allocating_line(run):
    result = run(OVER_LIMIT, "--gpumem")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert ("test_suite.py::test_over peaked 300.0 MiB above its start on GPU 0,\n"
            "  over its limit_gpu_memory of 200.0 MiB ('200 MiB') by 100.0 MiB\n"
            "  (process footprint 0.0 MiB -> peak 300.0 MiB, measured exactly)") in out
    line = line_of(OVER_LIMIT, "weights = allocate(300)")
    assert re.search(rf"300\.0 MiB  test_over \(\S*test_suite\.py:{line}\)", out), out


def test_markers_do_nothing_without_gpumem_and_are_registered(run):
    result = run(OVER_LIMIT, "--strict-markers")
    result.assert_outcomes(passed=1)
    assert "GPU memory peaks" not in result.stdout.str()


def test_the_ini_option_turns_the_plugin_on(run, pytester):
    pytester.makeini("[pytest]\ngpumem = true\n")
    run(OVER_LIMIT).assert_outcomes(failed=1)


def test_a_test_within_its_limits_passes_and_its_figures_are_exact(run, tmp_path):
    out = tmp_path / "figures.json"
    result = run("""\
        import pytest
        from gpumem.testing import allocate

        @pytest.mark.limit_gpu_memory("1 GiB")
        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_within():
            allocate(100).free()
            global kept
            kept = allocate(8)  # held past the test's end, under its leak budget

        def test_on_device_1():
            allocate(70, device=1).free()
        """, "--gpumem", f"--gpumem-json={out}")
    result.assert_outcomes(passed=2)
    tests = figures(out)
    within = tests["test_within"][0]
    assert within["source"] == "exact"
    assert within["quantity"] == "process footprint"
    assert (within["start"], within["peak"], within["end"]) == (0, 100 * MiB, 8 * MiB)
    assert (within["peak_above_start"], within["held_at_end"]) == (100 * MiB, 8 * MiB)
    assert tests["test_within"][1]["peak"] == 0
    # The next test starts where the first ended (8 MiB still held on GPU 0).
    later = tests["test_on_device_1"]
    assert (later[0]["start"], later[0]["peak_above_start"]) == (8 * MiB, 0)
    assert (later[1]["start"], later[1]["peak"], later[1]["end"]) == (0, 70 * MiB, 0)


def test_a_leak_over_its_budget_fails(run):
    result = run("""\
        import pytest
        from gpumem.testing import allocate

        kept = []

        @pytest.mark.limit_gpu_leaks("16 MiB")
        def test_leaks():
            kept.append(allocate(64))
            allocate(200).free()  # peaks do not count against a leak budget
        """, "--gpumem")
    result.assert_outcomes(failed=1)
    assert ("test_suite.py::test_leaks ended holding 64.0 MiB above its start on GPU 0,\n"
            "  over its limit_gpu_leaks of 16.0 MiB ('16 MiB') by 48.0 MiB\n"
            "  (process footprint 0.0 MiB -> 64.0 MiB, frameworks' caches released)"
            ) in result.stdout.str()


NESTED = """\
    import pytest
    from gpumem.testing import allocate

    def inner():
        with allocate(25):
            return allocate(50)

    def outer():
        held = allocate(100)
        block = inner()
        block.free()
        held.free()

    @pytest.mark.limit_gpu_memory("170 MiB")
    def test_nested():
        outer()
    """


def test_nested_allocations_add_up_and_each_stack_is_named(run):
    result = run(NESTED, "--gpumem")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "peaked 175.0 MiB above its start on GPU 0" in out
    assert "by 5.0 MiB" in out
    for size, text in ((100, "held = allocate(100)"), (50, "return allocate(50)"),
                       (25, "with allocate(25)")):
        function = "outer" if size == 100 else "inner"
        line = line_of(NESTED, text)
        assert re.search(rf"{size}\.0 MiB  {function} \(\S*test_suite\.py:{line}\)", out), out


def test_a_budget_exceeded_only_by_a_short_spike_is_caught(run):
    result = run("""\
        import pytest
        from gpumem.testing import allocate

        @pytest.mark.limit_gpu_memory("100 MiB")
        def test_spike():
            steady = allocate(10)
            allocate(200).free()  # held for microseconds: no sampler would see it
            steady.free()
        """, "--gpumem")
    result.assert_outcomes(failed=1)
    assert "peaked 210.0 MiB above its start on GPU 0" in result.stdout.str()


def test_a_device_limit_holds_that_device_only(run):
    result = run("""\
        import pytest
        from gpumem.testing import allocate

        @pytest.mark.limit_gpu_memory("50 MiB", device=1)
        def test_big_on_0():
            allocate(300, device=0).free()

        @pytest.mark.limit_gpu_memory("50 MiB", device="cuda:1")
        def test_big_on_1():
            allocate(60, device=1).free()
        """, "--gpumem")
    result.assert_outcomes(passed=1, failed=1)
    assert "test_big_on_1 peaked 60.0 MiB above its start on GPU 1" in result.stdout.str()


TOP = """\
    from gpumem.testing import allocate

    def test_10():
        allocate(10).free()

    def test_40():
        allocate(40).free()

    def test_20():
        allocate(20).free()

    def test_30():
        allocate(30).free()

    def test_none():
        pass
    """


def test_the_top_n_report_lists_the_highest_peaks_per_device(run):
    result = run(TOP, "--gpumem", "--gpumem-top", "2")
    result.assert_outcomes(passed=5)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*= GPU memory peaks (gpumem) =*",
        "GPU 0 (NVIDIA H200), measured exactly: the 2 highest peaks of 5 tests",
        "   above start          peak  test  (process footprint)",
        "      40.0 MiB      40.0 MiB  test_suite.py::test_40",
        "      30.0 MiB      30.0 MiB  test_suite.py::test_30",
        "GPU 1 (NVIDIA A100-SXM4-40GB), measured exactly: no test raised its footprint",
    ])
    assert "test_20" not in out and "test_10" not in out


def test_a_bad_size_is_a_usage_error_naming_the_marker_and_the_text(run):
    result = run("""\
        import pytest

        @pytest.mark.limit_gpu_memory("2 GiBs")
        def test_bad():
            pass

        @pytest.mark.limit_gpu_leaks("16")
        def test_no_unit():
            pass
        """, "--gpumem")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "test_suite.py::test_bad: @pytest.mark.limit_gpu_memory: bad size '2 GiBs': unknown unit" in err
    assert "test_suite.py::test_no_unit: @pytest.mark.limit_gpu_leaks: bad size '16': no unit" in err


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                    reason="pytest-xdist is not installed (python3-pytest-xdist)")
def test_under_xdist_a_bad_size_is_an_error_of_its_test(run):
    result = run("""\
        import pytest

        @pytest.mark.limit_gpu_memory("2 GiBs")
        def test_bad():
            pass

        def test_good():
            pass
        """, "--gpumem", "-n", "2")
    result.assert_outcomes(passed=1, errors=1)
    assert ("gpumem: test_suite.py::test_bad: @pytest.mark.limit_gpu_memory: bad size '2 GiBs': "
            "unknown unit") in result.stdout.str()


def test_parse_byte_size_is_the_librarys_parser():
    assert _native.parse_byte_size("2 GiB") == 2 * 2**30
    assert _native.parse_byte_size("1.5GB") == 1_500_000_000
    assert _native.parse_byte_size("512 MiB") == 512 * MiB
    with pytest.raises(ValueError, match="no unit"):
        _native.parse_byte_size("512")


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                    reason="pytest-xdist is not installed (python3-pytest-xdist)")
def test_the_verdict_on_a_limit_is_the_librarys():
    over = _native.judge_peak(150 * MiB, 100 * MiB, True)
    assert (over.exceeded, over.over_bytes, over.may_be_higher) == (True, 50 * MiB, False)
    at = _native.judge_peak(100 * MiB, 100 * MiB, True)
    assert (at.exceeded, at.over_bytes, at.may_be_higher) == (False, 0, False)
    sampled = _native.judge_peak(99 * MiB, 100 * MiB, False)
    assert (sampled.exceeded, sampled.over_bytes, sampled.may_be_higher) == (False, 0, True)


def test_under_xdist_the_controller_combines_the_workers_figures(run, tmp_path):
    out = tmp_path / "figures.json"
    result = run(TOP, "--gpumem", "-n", "2", f"--gpumem-json={out}")
    result.assert_outcomes(passed=5)
    tests = figures(out)
    assert {name: devices[0]["peak_above_start"] // MiB for name, devices in tests.items()} == {
        "test_10": 10, "test_40": 40, "test_20": 20, "test_30": 30, "test_none": 0}
    document = json.loads(out.read_text())
    assert {test["worker"] for test in document["tests"]} <= {"gw0", "gw1"}
    assert "      40.0 MiB      40.0 MiB  test_suite.py::test_40" in result.stdout.str()


PRIOR = """\
    import pytest
    from gpumem.testing import allocate

    kept = []

    def test_first():
        kept.append(allocate(64))

    @pytest.mark.limit_gpu_memory("100 MiB")
    def test_second():
        allocate(120).free()
    """


def test_blocks_held_from_before_the_test_count_at_the_peak_but_not_against_the_limit(run):
    result = run(PRIOR, "--gpumem")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "(process footprint 64.0 MiB -> peak 184.0 MiB, measured exactly)" in out
    assert "by 20.0 MiB" in out
    assert "allocations live at the peak, the largest first (184.0 MiB in 2 blocks):" in out
    assert "64.0 MiB  no stack: allocated while attribution was off" in out


def test_with_attribution_on_every_test_names_who_held_the_most(run, tmp_path):
    out = tmp_path / "figures.json"
    result = run(PRIOR, "--gpumem", "--gpumem-attribute", f"--gpumem-json={out}")
    result.assert_outcomes(passed=1, failed=1)
    first, second = line_of(PRIOR, "allocate(64)"), line_of(PRIOR, "allocate(120)")
    text = result.stdout.str()
    assert re.search(rf"64\.0 MiB  test_first \(\S*test_suite\.py:{first}\)", text), text
    assert re.search(rf"most held by test_second \(\S*test_suite\.py:{second}\)", text), text
    tests = figures(out)
    assert re.fullmatch(rf"test_first \(\S*test_suite\.py:{first}\)", tests["test_first"][0]["top"])
    assert tests["test_first"][1]["top"] is None


def test_a_device_no_gpu_has_is_a_usage_error(run):
    result = run("""\
        import pytest

        @pytest.mark.limit_gpu_memory("1 GiB", device=5)
        def test_far():
            pass
        """, "--gpumem")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("test_suite.py::test_far: @pytest.mark.limit_gpu_memory: device=5 names no visible "
            "GPU (2 visible)") in result.stderr.str()


def test_without_a_gpu_the_tests_run_and_the_summary_says_the_limits_went_unchecked(
        run, monkeypatch):
    monkeypatch.setenv("GPUMEM_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    monkeypatch.setenv("GPUMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
    monkeypatch.setenv("GPUMEM_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13")
    result = run("""\
        import pytest

        @pytest.mark.limit_gpu_memory("1 GiB")
        def test_limited():
            pass

        def test_plain():
            pass
        """, "--gpumem")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["gpumem: no GPU measured (*); the limits of 1 test were not "
                                 "checked"])
