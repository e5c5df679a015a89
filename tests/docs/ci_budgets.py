# docs/ci.md's pytest example: GPU memory budgets on tests (run by scripts/docs_examples.py).
import pytest

from gpumem.testing import allocate  # device memory in MB, as a framework would allocate it


def load_weights():
    return allocate(300)


@pytest.mark.limit_gpu_memory("256 MiB")
def test_inference():
    weights = load_weights()
    activations = allocate(40)
    activations.free()
    weights.free()


cache = []


@pytest.mark.limit_gpu_leaks("16 MiB")
def test_cached_batches():
    cache.append(allocate(64))  # still held when the test ends


@pytest.mark.limit_gpu_memory("1 GiB")
def test_small_model():
    allocate(120).free()
