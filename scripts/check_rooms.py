#!/usr/bin/env python3
"""Checks that gpumem's rooms depend only downwards (docs/architecture.md, "The rooms").

Each folder of src/ is a room. A room's files may include its own headers, the public API
(include/gpumem/), and the headers of the rooms below it in ROOMS; nothing else of the project.
The public headers include nothing of src/, and no tool includes another tool's folder.

    check_rooms.py [ROOT]    check the tree at ROOT (default: this script's repository)
    check_rooms.py --self-test

Exit status 0 when every include points downwards, 1 with one line per offending include.
"""

import re
import sys
import tempfile
from pathlib import Path

# Each room and the rooms it may use, ground floor first. A room may use what its rooms use.
ROOMS = {
    "support": [],  # diagnostics log, clocks, environment
    "procfs": [],  # pid namespaces as /proc shows them
    "internal": [],  # the seams the tools use (gpumem_internal), declared for the rooms above
    "driver": ["support"],  # dlopen'ed NVIDIA libraries
    "identity": ["driver"],  # CUDA ordinal -> NVML device
    "query": ["identity"],  # fastai.utils.mem's queries, devices, hooks
    "attribution": [],  # live blocks and their stacks, for peak snapshots
    "peak": ["identity", "attribution"],  # the peak engine and its sources
    "publish": ["identity"],  # the spool files the exporter reads
    "trace": ["peak", "query"],  # GPUMemTrace and its report
}

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def allowed(room):
    """Every room `room` may include: itself and everything below it."""
    seen = {room}
    pending = list(ROOMS[room])
    while pending:
        lower = pending.pop()
        if lower not in seen:
            seen.add(lower)
            pending.extend(ROOMS[lower])
    return seen


def sources(folder):
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def includes(path):
    return INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace"))


def check(root):
    problems = []
    src = root / "src"
    rooms = sorted(p.name for p in src.iterdir() if p.is_dir())
    for room in rooms:
        if room not in ROOMS:
            problems.append(f"src/{room}: a room that scripts/check_rooms.py does not place")
    for room in rooms:
        if room not in ROOMS:
            continue
        may = allowed(room)
        for path in sources(src / room):
            where = path.relative_to(root)
            for name in includes(path):
                first = name.split("/", 1)[0]
                if name.startswith("../") or name.startswith("./"):
                    problems.append(f"{where}: includes {name}: a relative path out of its room")
                elif first == "gpumem":
                    continue  # the public API
                elif "/" not in name:
                    problems.append(f"{where}: includes {name}: name its room ({room}/{name})")
                elif first in ROOMS and first not in may:
                    below = ", ".join(sorted(may - {room})) or "no other room"
                    problems.append(f"{where}: includes {name}: {room} may use {below}")
    for path in sources(root / "include"):
        for name in includes(path):
            if not name.startswith("gpumem/"):
                problems.append(f"{path.relative_to(root)}: includes {name}: the public API "
                                "includes only itself")
    tools = root / "tools"
    if tools.is_dir():
        names = {p.name for p in tools.iterdir() if p.is_dir()}
        for tool in sorted(names):
            for path in sources(tools / tool):
                for name in includes(path):
                    parts = Path(name).parts
                    for other in names - {tool}:
                        if other in parts and (".." in parts or parts[0] == "tools"):
                            problems.append(f"{path.relative_to(root)}: includes {name}: "
                                            f"tools/{tool} may not use tools/{other}")
    return problems


def self_test():
    """The check must fail on an upward include, a new unplaced room, and a tool cycle."""
    cases = {
        "clean": ({"src/support/log.hpp": "", "src/driver/nvml.cpp": '#include "support/log.hpp"',
                   "src/trace/t.cpp": '#include "driver/nvml.hpp"\n#include "gpumem/trace.hpp"'},
                  0),
        "upward": ({"src/driver/nvml.cpp": '#include "query/diagnostics_log.hpp"'}, 1),
        "ground floor": ({"src/support/log.cpp": '#include "driver/nvml.hpp"'}, 1),
        "peers": ({"src/peak/sampler.cpp": '#include "query/memory_read.hpp"'}, 1),
        "relative": ({"src/query/memory.cpp": '#include "../trace/x.hpp"'}, 1),
        "unplaced room": ({"src/newroom/x.cpp": ""}, 1),
        "public includes src": ({"include/gpumem/peak.hpp": '#include "peak/channel.hpp"'}, 1),
        "tool cycle": ({"tools/cli/main.cpp": "", "tools/serve/s.cpp": '#include "../cli/x.hpp"'},
                       1),
    }
    failed = 0
    for label, (files, want) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "src" / "support").mkdir(parents=True)
            for name, text in files.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text + "\n")
            got = len(check(root))
            if (got > 0) != (want > 0):
                print(f"self-test '{label}': {got} problem(s), expected {want}")
                failed += 1
    print("check_rooms self-test: " + ("ok" if failed == 0 else f"{failed} case(s) failed"))
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    problems = check(root)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"rooms: every include in {root / 'src'} points downwards")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
