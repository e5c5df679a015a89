"""A Python program that never imports gpumem: it allocates through the CUDA driver with ctypes
(which releases the GIL around each call, as PyTorch's bindings do). Under
`gpumem run --attribute a.json -- python3 train.py` each block is named by the line of this file
that allocated it (docs/attribution.md, "Python frames")."""
import ctypes
import os

cuda = ctypes.CDLL(os.environ.get("GPUMEM_CUDA_LIBRARY", "libcuda.so.1"))
MiB = 1 << 20
held = []


def check(status):
    if status != 0:
        raise SystemExit(f"CUDA error {status}")


def load_weights():
    weights = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(weights), ctypes.c_size_t(768 * MiB)))
    held.append(weights)


def activations():
    buffer = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(buffer), ctypes.c_size_t(256 * MiB)))
    held.append(buffer)


check(cuda.cuInit(0))
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0))
context = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
check(cuda.cuCtxSetCurrent(context))
load_weights()
activations()
