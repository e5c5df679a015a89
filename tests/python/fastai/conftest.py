"""As fastai's tests/conftest.py did for this suite: tests marked ``cuda`` are skipped where
there is no GPU. (gpumem runs this folder in its own pytest processes: see
tests/python/test_fastai_suite.py.)"""

import pytest

from utils.mem import use_gpu


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a GPU")


def pytest_collection_modifyitems(config, items):
    if not use_gpu:
        skip_cuda = pytest.mark.skip(reason="CUDA is not available")
        for item in items:
            if "cuda" in item.keywords:
                item.add_marker(skip_cuda)
