"""The package's shape: stubs that match the exports, and the seed's names all present."""

import ast
from pathlib import Path

import gpumem

SEED_NAMES = [
    "GPUMemory", "b2mb", "gpu_mem_get", "gpu_mem_get_all", "gpu_mem_get_free",
    "gpu_mem_get_used", "gpu_mem_get_free_no_cache", "gpu_mem_get_used_no_cache",
    "gpu_mem_get_used_fast", "gpu_with_max_free_mem", "preload_pytorch", "GPUMemTrace",
    "gpu_mem_trace",
]


def _stub_names(stub: Path) -> set:
    names = set()
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:  # re-exports, not typing
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def test_the_seeds_names_are_exported():
    for name in SEED_NAMES:
        assert name in gpumem.__all__
        assert callable(getattr(gpumem, name))


def test_stubs_declare_every_export():
    package = Path(gpumem.__file__).parent
    assert (package / "py.typed").exists()
    declared = _stub_names(package / "__init__.pyi")
    assert set(gpumem.__all__) <= declared
    native = _stub_names(package / "_native.pyi")
    exported = {name for name in dir(gpumem._native) if not name.startswith("_")}
    assert exported == native


def test_public_functions_have_docstrings():
    for name in gpumem.__all__:
        assert getattr(gpumem, name).__doc__, name
    for method in ("start", "stop", "reset", "data", "report", "report_n_reset", "silent"):
        assert getattr(gpumem.GPUMemTrace, method).__doc__, method


def _public_docstrings():
    import inspect

    import gpumem.ipython
    import gpumem.testing

    for module in (gpumem, gpumem.ipython, gpumem.testing, gpumem._native):
        yield module.__name__, module.__doc__ or ""
        for name in dir(module):
            if name.startswith("__"):
                continue
            value = getattr(module, name)
            yield f"{module.__name__}.{name}", getattr(value, "__doc__", None) or ""
            if inspect.isclass(value):
                for member, attribute in vars(value).items():
                    doc = getattr(attribute, "__doc__", None)
                    if isinstance(doc, str):
                        yield f"{module.__name__}.{name}.{member}", doc


def test_public_text_names_fastai_utils_mem():
    # Users meet the docstrings, the stubs and the README (the wheel's long description).
    for where, doc in _public_docstrings():
        assert "seed" not in doc.lower(), where
    package = Path(gpumem.__file__).parent
    for stub in package.glob("*.pyi"):
        assert "seed" not in stub.read_text().lower(), stub.name
    readme = Path(__file__).resolve().parents[2] / "README.md"
    if readme.exists():  # the checkout's README, which pyproject.toml makes the long description
        assert "the seed" not in readme.read_text().lower()


def test_the_trace_docstring_says_what_it_measures():
    doc = gpumem.GPUMemTrace.__doc__
    assert "process footprint" in doc and "fastai.utils.mem" in doc
    assert 'source="sampled"' in doc
