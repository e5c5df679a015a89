"""Compares gpumem's readings with nvidia-smi's and with PyTorch's (tests/device/run.sh)."""
import csv
import io
import json
import sys

MiB = 2**20


def compare_list(smi_csv, gpumem_json):
    smi = list(csv.reader(io.StringIO(open(smi_csv).read())))
    ours = json.load(open(gpumem_json))
    devices = ours.get("devices", ours if isinstance(ours, list) else [])
    failures = 0
    for row in smi[1:]:
        index, uuid, total, used, free = [c.strip() for c in row]
        mib = lambda s: int(s.split()[0])
        match = [d for d in devices if d.get("uuid") == uuid]
        if not match:
            print(f"FAIL nvidia-smi GPU {index} {uuid}: not listed by gpumem")
            failures += 1
            continue
        d = match[0]
        ours_total = d["memory"]["total_bytes"] // MiB if "memory" in d else d["total_bytes"] // MiB
        ours_used = (d["memory"]["used_bytes"] if "memory" in d else d["used_bytes"]) // MiB
        ok = ours_total == mib(total) and abs(ours_used - mib(used)) <= 2
        print(f"{'PASS' if ok else 'FAIL'} GPU {index} {uuid}: nvidia-smi total/used {mib(total)}/{mib(used)} MiB,"
              f" gpumem {ours_total}/{ours_used} MiB")
        failures += not ok
    return failures


def mib(value):
    return "null" if value is None else f"{value / MiB:.1f} MiB"


def compare_torch(run_json, torch_out, label):
    """gpumem run's headline process footprint against torch.cuda.max_memory_reserved() and
    against NVML's per-process peak that gpumem sampled: it must reach both."""
    run = json.load(open(run_json))
    lines = [line for line in open(torch_out).read().splitlines() if line.startswith("{")]
    if not lines:
        print(f"FAIL {label}: the workload printed no statistics")
        return 1
    stats = json.loads(lines[-1])
    dev = max(run["devices"], key=lambda d: d.get("peak_bytes") or 0)
    headline = dev.get("peak_bytes") or 0
    reserved = stats["max_memory_reserved"]
    sampled = dev.get("sampled_peak_bytes")
    print(f"{label}: backend {stats.get('backend')} (PYTORCH_CUDA_ALLOC_CONF={stats.get('alloc_conf')}); "
          f"gpumem mode {run['mode']}, {dev.get('quantity', 'peak')} {mib(headline)}"
          f" (exact events {mib(dev.get('exact_peak_bytes'))}, NVML per-process sampled {mib(sampled)},"
          f" device used {mib(dev.get('device_used_start_bytes'))} -> {mib(dev.get('device_used_peak_bytes'))});"
          f" torch max_memory_reserved {mib(reserved)}, max_memory_allocated"
          f" {mib(stats.get('max_memory_allocated'))}; profiler events {stats.get('profiler_events')};"
          f" fallback {run.get('fallback_reason')}")
    failures = 0
    ok = headline >= reserved
    print(f"{'PASS' if ok else 'FAIL'} {label}: footprint >= max_memory_reserved"
          f" (difference {mib(headline - reserved)}: context, modules, rounding)")
    failures += not ok
    if sampled:
        ok = headline >= sampled
        print(f"{'PASS' if ok else 'FAIL'} {label}: footprint >= NVML per-process peak"
              f" (difference {mib(headline - sampled)})")
        failures += not ok
    else:
        print(f"INFO {label}: no NVML per-process figure was sampled")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "list":
        sys.exit(compare_list(sys.argv[2], sys.argv[3]))
    sys.exit(compare_torch(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "torch"))
