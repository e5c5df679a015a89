"""Compares gpumem's readings with nvidia-smi's and with PyTorch's (tests/device/run.sh)."""
import csv
import io
import json
import sys


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
        ours_total = d["memory"]["total_bytes"] // 2**20 if "memory" in d else d["total_bytes"] // 2**20
        ours_used = (d["memory"]["used_bytes"] if "memory" in d else d["used_bytes"]) // 2**20
        ok = ours_total == mib(total) and abs(ours_used - mib(used)) <= 2
        print(f"{'PASS' if ok else 'FAIL'} GPU {index} {uuid}: nvidia-smi total/used {mib(total)}/{mib(used)} MiB,"
              f" gpumem {ours_total}/{ours_used} MiB")
        failures += not ok
    return failures


def compare_torch(run_json, torch_line):
    run = json.load(open(run_json))
    torch_stats = json.loads(open(torch_line).read().strip().splitlines()[-1])
    dev = max(run["devices"], key=lambda d: d.get("peak_bytes") or 0)
    exact = dev.get("exact_peak_bytes") or dev.get("peak_bytes") or 0
    reserved = torch_stats["max_memory_reserved"]
    print(f"gpumem run mode={run['mode']} peak={exact} B; torch max_memory_reserved={reserved} B "
          f"(difference {exact - reserved} B); torch profiler events={torch_stats['profiler_events']}; "
          f"fallback={run.get('fallback_reason')}")
    if run["mode"] == "exact":
        ok = exact == reserved
        print(f"{'PASS' if ok else 'FAIL'} exact peak equals max_memory_reserved")
    else:
        # Sampled: the process's usage also holds its CUDA context (some hundreds of MiB).
        ok = reserved <= exact <= reserved + 2 * 1024**3
        print(f"{'PASS' if ok else 'FAIL'} sampled peak is max_memory_reserved plus at most 2 GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "list":
        sys.exit(compare_list(sys.argv[2], sys.argv[3]))
    sys.exit(compare_torch(sys.argv[2], sys.argv[3]))
