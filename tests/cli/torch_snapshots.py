#!/usr/bin/env python3
"""PyTorch memory snapshots for the tests, and PyTorch's own viewer reading what gpumem writes.

  torch_snapshots.py make DIR      writes, with Python's pickle and plain dicts built to the schema
                                   torch/cuda/memory.py documents for _snapshot():
                                   before.pickle, after.pickle (the current form, pickle's default
                                   protocol, as torch.cuda.memory._dump_snapshot() writes it),
                                   older.pickle (PyTorch 1.13's list of segments, protocol 2)
                                   and p2.pickle … p5.pickle (before's content at each protocol)
  torch_snapshots.py summary FILE  loads FILE with Python's pickle and prints each segment and
                                   block as PyTorch's viewers see them
  torch_snapshots.py viz ACTION FILE [FILE]
                                   runs Debian's python3-torch torch/cuda/_memory_viz.py (loaded
                                   by its path: it imports only the standard library) ACTION
                                   (segments, memory, compare, stats) on the files; the flame
                                   graph's input lines are printed instead of an SVG (drawing one
                                   needs flamegraph.pl, which it would download)
"""
import importlib.util
import pickle
import pprint
import sys

MIB = 1 << 20
BASE = 0x7F0000000000
MEMORY_VIZ = "/usr/lib/python3/dist-packages/torch/cuda/_memory_viz.py"


def frames(*names):
    # Innermost first, as PyTorch records them.
    lines = {"load_weights": 12, "forward": 30, "main": 90}
    return [{"filename": "/home/me/train.py", "line": lines[n], "name": n} for n in names]


def block(address, size, state, stack):
    return {"address": address, "size": size, "requested_size": size, "state": state,
            "frames": stack}


def segment(device, address, blocks):
    total = sum(b["size"] for b in blocks)
    allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    return {"device": device, "address": address, "total_size": total,
            "allocated_size": allocated, "active_size": allocated, "requested_size": allocated,
            "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": [], "blocks": blocks}


def before():
    return {"segments": [
        segment(0, BASE, [
            block(BASE, 512 * MIB, "active_allocated", frames("load_weights", "main")),
            block(BASE + 512 * MIB, 256 * MIB, "active_allocated", frames("forward", "main")),
            block(BASE + 768 * MIB, 256 * MIB, "inactive", [])]),
    ], "device_traces": [[]], "allocator_settings": {}}


def after():
    return {"segments": [
        segment(0, BASE, [
            block(BASE, 512 * MIB, "active_allocated", frames("load_weights", "main")),
            block(BASE + 512 * MIB, 512 * MIB, "active_allocated", frames("forward", "main"))]),
        segment(0, BASE + 1024 * MIB, [
            block(BASE + 1024 * MIB, 256 * MIB, "active_allocated", frames("forward", "main")),
            block(BASE + 1280 * MIB, 256 * MIB, "active_pending_free", frames("forward", "main"))]),
    ], "device_traces": [[]], "allocator_settings": {}}


def older():
    # PyTorch 1.13: a list of segments; each block's allocations in its `history`.
    segments = []
    for seg in before()["segments"]:
        seg = dict(seg)
        seg["blocks"] = [{"size": b["size"], "state": b["state"],
                          "history": [{"addr": b["address"], "real_size": b["size"],
                                       "frames": b["frames"]}] if b["frames"] else []}
                         for b in seg["blocks"]]
        segments.append(seg)
    return segments


def make(folder):
    def write(name, value, protocol=None):
        with open(f"{folder}/{name}", "wb") as f:
            pickle.dump(value, f, protocol=protocol)
    write("before.pickle", before())
    write("after.pickle", after())
    write("older.pickle", older(), protocol=2)
    for protocol in (2, 3, 4, 5):
        write(f"p{protocol}.pickle", before(), protocol=protocol)


def viz(action, files):
    spec = importlib.util.spec_from_file_location("_memory_viz", MEMORY_VIZ)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    loaded = []
    for name in files:
        with open(name, "rb") as f:
            loaded.append(pickle.load(f))
    if action == "stats":
        pprint.pprint(module.stats(*loaded))
    else:
        print(getattr(module, action)(*loaded, format_flamegraph=lambda lines: lines), end="")


def summary(name):
    with open(name, "rb") as f:
        loaded = pickle.load(f)
    if isinstance(loaded, dict):
        print("dict:", ", ".join(sorted(loaded)))
        print("device_traces:", [[(e["action"], hex(e["addr"]), e["size"], e["time_us"])
                                  for e in trace] for trace in loaded["device_traces"]])
        segments = loaded["segments"]
    else:
        print("list")
        segments = loaded
    for seg in segments:
        print(f"segment device {seg['device']} {hex(seg['address'])} {seg['total_size']} "
              f"stream {seg['stream']} {seg['segment_type']}")
        for b in seg["blocks"]:
            names = "; ".join(f"{f['name']} {f['filename']}:{f['line']}" for f in b["frames"])
            history = f" history {len(b['history'])}" if "history" in b else ""
            print(f"  {b['state']} {hex(b['address'])} {b['size']}{history}: {names}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "summary":
        summary(sys.argv[2])
    else:
        viz(sys.argv[2], sys.argv[3:])
