"""Docs are tests: every public name's docstring shows an example, and the examples run, on two
simulated GPUs (CUDA 0 an idle H200, 1 an A100 40GB: conftest.TWO_GPUS), printing what they
show."""

import inspect
import re

import pytest

import gpumem
import gpumem.testing

PUBLIC = [f"gpumem.{name}" for name in gpumem.__all__] + ["gpumem.testing.allocate"]


def _object(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(gpumem.testing if module == "gpumem.testing" else gpumem, name)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_shows_an_example(name):
    doc = inspect.getdoc(_object(name)) or ""
    assert re.search(r"^\s*>>> \S", doc, re.MULTILINE), f"{name}'s docstring has no example"


# Each docstring's examples run in one fresh interpreter on the simulated GPUs, in the order of
# __all__, with only ``gpumem`` imported beforehand (as help() readers have it).
RUN_EXAMPLES = """
import doctest, io
import gpumem, gpumem.testing
finder = doctest.DocTestFinder(recurse=False)
runner = doctest.DocTestRunner()
ran, failures = {}, []
for dotted in NAMES:
    module, _, name = dotted.rpartition(".")
    value = getattr(gpumem.testing if module == "gpumem.testing" else gpumem, name)
    for test in finder.find(value, dotted, module=False, globs={"gpumem": gpumem}):
        out = io.StringIO()
        result = runner.run(test, out=out.write)
        ran[dotted] = ran.get(dotted, 0) + result.attempted
        if result.failed:
            failures.append(out.getvalue())
emit(ran=ran, failures=failures)
"""


def test_the_examples_run_and_print_what_they_show(sim):
    result = sim.run(RUN_EXAMPLES.replace("NAMES", repr(PUBLIC)), timeout=120)
    assert result["failures"] == [], "\n".join(result["failures"])
    assert sorted(result["ran"]) == sorted(PUBLIC)
    assert all(count > 0 for count in result["ran"].values()), result["ran"]


def test_errors_name_values_as_the_docstrings_do():
    # A device is a "GPU id" in errors as in the docstrings.
    with pytest.raises(ValueError, match=r"^allocate: GPU id 'cpu' names no GPU$"):
        gpumem.testing.allocate(1, device="cpu")
    assert "GPU ``id``" in gpumem.gpu_mem_get.__doc__
