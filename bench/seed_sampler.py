#!/usr/bin/env python3
"""The seed's peak sampler (fastai.utils.mem.GPUMemTrace.peak_monitor_func), re-implemented
with ctypes against NVML (GPUMEM_NVML_LIBRARY: the simulator's), as the baseline for gpumem's
sampled source: a Python thread that reads NVML used memory in MB and sleeps 1 ms.

Reports the share of spikes it catches (spikes made by gpumem_bench_spiker in another process),
with the main thread idle (blocked on the spiker) or busy running Python, and the thread's CPU
cost. Usage: seed_sampler.py SPIKER [spikes per duration]
"""
import ctypes
import os
import random
import resource
import select
import subprocess
import sys
import threading
import time


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


nvml = ctypes.CDLL(os.environ.get("GPUMEM_NVML_LIBRARY", "libnvidia-ml.so.1"))
assert nvml.nvmlInit_v2() == 0, "nvmlInit failed"
handle = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0


def b2mb(num):
    return int(num / 2**20)


def gpu_mem_get_used_fast(h):
    info = Memory()
    nvml.nvmlDeviceGetMemoryInfo(h, ctypes.byref(info))
    return b2mb(info.used)


class Trace:
    """The seed's sampling part of GPUMemTrace: reset(), and the monitoring thread."""

    def __init__(self):
        self.used_peak = 0
        self.peak_monitoring = True
        self.thread = threading.Thread(target=self.peak_monitor_func, daemon=True)
        self.thread.start()

    def reset(self):
        self.used_start = gpu_mem_get_used_fast(handle)
        self.used_peak = self.used_start

    def peak_monitor_func(self):
        self.used_peak = 0
        while True:
            self.used_peak = max(gpu_mem_get_used_fast(handle), self.used_peak)
            if not self.peak_monitoring:
                break
            time.sleep(0.001)

    def stop(self):
        self.peak_monitoring = False
        self.thread.join()


def busy_python(pipe):
    """The main thread runs Python (holding the GIL) until the spiker answers."""
    while not select.select([pipe], [], [], 0)[0]:
        sum(i * i for i in range(200))


def capture(spiker, trace, spike_mb, micros, n, busy):
    caught = 0
    for _ in range(n):
        trace.reset()
        time.sleep(random.uniform(0, 0.002))
        spiker.stdin.write(f"{spike_mb * 2**20} {micros}\n")
        spiker.stdin.flush()
        if busy:
            busy_python(spiker.stdout)
        assert spiker.stdout.readline().strip() == "done"
        if trace.used_peak - trace.used_start >= spike_mb:
            caught += 1
    return caught


def main():
    spiker_path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    spiker = subprocess.Popen([spiker_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1)
    assert spiker.stdout.readline().strip() == "ready"
    trace = Trace()
    for busy in (False, True):
        for micros in (2000, 1000):
            caught = capture(spiker, trace, 8, micros, n, busy)
            mode = "busy" if busy else "idle"
            print(f"seed python thread, main {mode}: {micros // 1000} ms spikes caught "
                  f"{caught}/{n} = {100.0 * caught / n:.1f}%", flush=True)
    spiker.stdin.close()
    spiker.wait()
    # The thread's CPU while nothing happens, as % of one core.
    seconds = 2.0
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    time.sleep(seconds)
    after = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - start
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"seed python thread CPU at its 1 ms sleep: {100.0 * cpu / wall:.1f}% of one core",
          flush=True)
    trace.stop()


if __name__ == "__main__":
    main()
