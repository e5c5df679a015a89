#!/usr/bin/env python3
"""Checks that gpumem's rooms depend only downwards (docs/architecture.md, "The rooms").

Each folder of src/ is a room. A room's files may include its own headers and those of the rooms
below it in ROOMS; a public header (include/gpumem/) or a seam (src/ROOM/seam/gpumem/internal/,
beside the room that implements it, included as gpumem/internal/X.hpp) counts as a use of the
room that implements it (PUBLIC_HEADERS, SEAMS), so it obeys the same order. The public headers
and the seams include only each other.

Each folder of tools/ is a tool. A tool's quoted includes name a file of its own folder, a public
header or a seam, or the one entry header of a tool below it in TOOLS; never a room's header, nor
another tool's header through an include path, nor a seam that only the rooms share
(ROOM_SEAMS: libgpumem.so does not export it); the Python extension (python/) likewise uses its
own files, the public headers and the tools' seams. The simulated GPU (sim/) includes its own files
and, of src/, only the ABI declarations it shares with the driver room (src/driver/abi/), which in
turn include only each other.

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
    "procfs": [],  # what /proc says of a process: namespaces, name, stat, cgroup, arguments…
    "driver": ["support"],  # dlopen'ed NVIDIA libraries
    "identity": ["driver"],  # CUDA ordinal -> NVML device
    "query": ["identity"],  # fastai.utils.mem's queries, devices, hooks
    # Stamps its snapshots with the support room's clock; a document names the program's
    # arguments (procfs).
    "attribution": ["support", "procfs"],  # live blocks and their stacks, for peak snapshots
    # The engine of `gpumem run`: the file it shares with the processes it measures (stamped with
    # the support room's clock), the monitor that samples NVML through the queries and the
    # devices' identities (driver: UUIDs), matches pids and reads ranks through procfs, and
    # combines the processes' attribution documents. Each process's part of the file is its exact
    # ledger, the peak room's words (exact_ledger.hpp).
    "run": ["peak", "query", "attribution", "procfs"],
    # The sampler reads memory through query's gpu_handle/gpu_mem_get_*, the footprint and the
    # out-of-memory record ask it for devices and their processes: the engine stands on the
    # queries, which know nothing of peaks. An out-of-memory record names the other processes
    # (procfs).
    "peak": ["query", "attribution", "procfs"],  # the peak engine and its sources
    # A record names its writer by pid, start time and pid namespace, as procfs reads them, and its
    # device by UUID (identity). What it publishes is a trace's bytes, declared apart from the
    # rooms that make them (gpumem/reading.hpp), so publishing stands below the trace room.
    "publish": ["identity", "procfs"],  # the spool files the exporter reads
    "trace": ["peak", "query"],  # GPUMemTrace and its report
}

# The room(s) that define what each public header and each seam declares: including one is a use
# of that room. A header split between rooms lists each; its implementers may include it, any
# other room must be allowed to use them all. [] declares no code (constants, generated). "*": an
# umbrella, a use of whatever it includes. A new header must be placed here.
PUBLIC_HEADERS = {
    "allocate.hpp": ["query"],
    "attribution.hpp": ["attribution"],
    "budget.hpp": ["peak"],
    "cache.hpp": ["query"],
    "device.hpp": ["query"],
    # diagnostics()/last_diagnostic() read the support room's log; nvml_available() and
    # cuda_available() ask query.
    "diagnostics.hpp": ["support", "query"],
    "gpumem.hpp": "*",
    "memory.hpp": ["query"],
    "peak.hpp": ["peak"],
    "publish.hpp": ["publish"],
    "reading.hpp": [],  # what a reading and a trace's bytes hold: declarations, names as text
    "trace.hpp": ["trace"],
    "version.hpp": [],  # generated from cmake/version.hpp.in: constants
}
SEAMS = {
    "attribution_document.hpp": ["attribution"],  # gpumem.attribution/1: model, reader, writer
    "attribution_frames.hpp": ["attribution"],  # the one frame policy of every view
    "torch_snapshot.hpp": ["attribution"],  # PyTorch's memory snapshots: reader, writer
    "byte_size.hpp": ["support"],
    "checked_json.hpp": ["support"],  # the one checked-JSON reader under every file format
    "clock.hpp": ["support"],  # header-only: the support room's clocks
    "device_uuid.hpp": ["driver"],
    "diagnostics_log.hpp": ["support"],
    "environment.hpp": ["support"],  # header-only: the support room's environment reading
    "event_observer.hpp": ["peak"],
    "exact_ledger.hpp": ["peak"],  # where the exact source keeps each ordinal's level
    "exact_source.hpp": ["peak"],
    "output_file.hpp": ["support"],  # the one rule for what gpumem writes to
    "printable_text.hpp": ["support"],  # untrusted text shown on a terminal or in CSV
    "procfs.hpp": ["procfs"],
    "process_list.hpp": ["query"],
    "run_attribution.hpp": ["peak"],
    "run_counters.hpp": ["run"],
    "run_engine.hpp": ["run"],  # the engine of gpumem run: the command launches, it measures
    "run_process.hpp": ["run"],  # the measured side: a CUDA process joins the run
    "run_rank.hpp": ["run"],
    "run_result.hpp": ["run"],  # what a run measured and its headline figure
    "run_document.hpp": ["run"],  # gpumem.run/1: model, writer, reader
    "report_document.hpp": ["run"],  # gpumem.report/1: model, the job's figures, writer, reader
    "run_timeline.hpp": ["run"],
    "shared_library.hpp": ["support"],  # dlopen with a GPUMEM_*_LIBRARY override
    "window_peak.hpp": ["peak"],  # the exporter's sliding-window peaks, sampled by one thread
    "spool.hpp": ["publish"],
}
# The seams only the rooms share, which no tool and not the Python extension includes: libgpumem.so
# does not export them (their headers have no `visibility push(default)`), and a tool that
# includes one fails the check (export what it calls first, and take it off this list).
ROOM_SEAMS = {
    "device_uuid.hpp",  # the driver's UUID of an ordinal: the device map, the monitor, the runs
    "event_observer.hpp",  # the exact source's call and context observers: gpumem run's side
    "exact_ledger.hpp",  # where the exact source keeps its levels: in the process or the run's file
    "exact_source.hpp",  # the exact source's subscription, for the measured process
    "process_list.hpp",  # NVML's processes of a device, a failed reading told from an empty one
    "run_attribution.hpp",  # the attribution slots of a measured process
    "run_counters.hpp",  # the counters file: the engine and the measured processes
    "shared_library.hpp",  # dlopen with an override: the driver and attribution rooms
}
GENERATED_PUBLIC = {"version.hpp"}  # in the build tree, not include/gpumem

# Each tool, the tools it may use, and the one header through which another tool enters it.
TOOLS = {
    "usage": [],  # --help, usage errors and checked options, for every subcommand
    "inject": [],  # libgpumem_inject.so
    "serve": ["usage"],  # the exporter
    "cli": ["serve", "usage"],  # the gpumem command, `gpumem serve` included
}
TOOL_ENTRIES = {"usage": "usage.hpp", "serve": "serve_command.hpp"}

# Known includes that break the rules, each with the move that ends it. The check fails when one
# no longer occurs, so that the list cannot outlive its debt.
DEBTS = {}

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', re.MULTILINE)
ABI = "driver/abi/"


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
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)


# Where an angle-bracket include is looked for (the include paths the targets give): an include
# written <run/monitor.hpp> is the project's header as much as "run/monitor.hpp" is. Each room's
# seam folder (src/ROOM/seam) is one too.
INCLUDE_ROOTS = ("src", "include")
SEAM_FOLDER = "seam"  # src/ROOM/seam/gpumem/internal/X.hpp
_ROOT = [None]  # the tree being checked, for resolving angle-bracket includes


def seam_roots(root):
    """Each room's seam folder, an include path of its own (src/ROOM/seam)."""
    src = root / "src"
    if not src.is_dir():
        return []
    return sorted(p / SEAM_FOLDER for p in src.iterdir() if (p / SEAM_FOLDER).is_dir())


def seam_files(root):
    """gpumem/internal/X.hpp -> its file, for every seam beside every room."""
    found = {}
    for folder in seam_roots(root):
        for path in sorted((folder / "gpumem" / "internal").glob("*.hpp")):
            found.setdefault(path.name, []).append(path)
    return found


def includes(path):
    """The project's headers `path` includes: every quoted include, and every angle-bracket one
    that names a file of the tree (a system or package header, such as <vector> or
    <nlohmann/json.hpp>, is not the project's)."""
    found = []
    for quoted, angled in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
        if quoted:
            found.append(quoted)
        elif _ROOT[0] is not None and (
                angled in ("gpumem/version.hpp",)
                or any((_ROOT[0] / base / angled).is_file() for base in INCLUDE_ROOTS)
                or any((base / angled).is_file() for base in seam_roots(_ROOT[0]))
                or (path.parent / angled).is_file()):
            found.append(angled)
    return found


def header_rooms(root):
    """gpumem/… include name -> the rooms it uses; the problems of an unplaced or stale map."""
    problems = []
    rooms = {}
    public = root / "include" / "gpumem"
    seams = seam_files(root)
    for table, where, present, files in (
            (PUBLIC_HEADERS, "include/gpumem",
             {p.name for p in public.glob("*.hpp")} if public.is_dir() else set(),
             GENERATED_PUBLIC),
            (SEAMS, "src/ROOM/seam/gpumem/internal", set(seams), set())):
        for name in sorted(present - set(table)):
            problems.append(f"{where}/{name}: a header that scripts/check_rooms.py does not place "
                            "(PUBLIC_HEADERS or SEAMS: which room implements it?)")
        for name in sorted(set(table) - present - files):
            problems.append(f"{where}/{name}: placed by scripts/check_rooms.py but gone")
        prefix = "gpumem/" if table is PUBLIC_HEADERS else "gpumem/internal/"
        for name, implementers in table.items():
            if implementers != "*":
                rooms[prefix + name] = set(implementers)
    # A seam lives beside the room that implements it, once.
    for name, paths in sorted(seams.items()):
        owners = [p.parents[3].name for p in paths]
        if len(paths) > 1:
            problems.append(f"gpumem/internal/{name}: a seam in more than one room "
                            f"({', '.join(sorted(owners))})")
        implementers = SEAMS.get(name)
        if implementers and any(owner not in implementers for owner in owners):
            problems.append(f"src/{owners[0]}/seam/gpumem/internal/{name}: implemented by "
                            f"{' and '.join(implementers)}, so it lives in "
                            f"src/{implementers[0]}/seam")
    for name in sorted(ROOM_SEAMS - set(SEAMS)):
        problems.append(f"ROOM_SEAMS names {name}, which SEAMS does not place")
    # An umbrella uses whatever it includes.
    for name, implementers in PUBLIC_HEADERS.items():
        if implementers == "*":
            used = set()
            if (public / name).is_file():
                for inner in includes(public / name):
                    used |= rooms.get(inner, set())
            rooms["gpumem/" + name] = used
    return rooms, problems


def header_reach(root, headers):
    """gpumem/… include name -> the rooms of every header it includes, however indirectly: a room
    that includes a header uses what that header's own includes use."""
    files = {}
    seams = seam_files(root)
    for name in headers:
        if (root / "include" / name).is_file():
            files[name] = root / "include" / name
        elif name.startswith("gpumem/internal/") and name[len("gpumem/internal/"):] in seams:
            files[name] = seams[name[len("gpumem/internal/"):]][0]
    direct = {name: [inner for inner in includes(path) if inner in headers]
              for name, path in files.items()}
    reach = {}
    for name in headers:
        seen, pending, used = {name}, list(direct.get(name, [])), set()
        while pending:
            inner = pending.pop()
            if inner in seen:
                continue
            seen.add(inner)
            used |= headers.get(inner, set())
            pending.extend(direct.get(inner, []))
        reach[name] = used
    return reach


def resolves(path, name, folder):
    """Whether `name`, included from `path`, is a file of `folder` (beside it or from the root)."""
    for candidate in (path.parent / name, folder / name):
        if candidate.is_file() and folder.resolve() in candidate.resolve().parents:
            return True
    # Generated from a .proto of the folder (protobuf_generate: NAME.pb.h beside NAME.proto).
    if name.endswith(".pb.h"):
        return (folder / (name[:-len(".pb.h")] + ".proto")).is_file()
    return False


def check_rooms(root, headers, problems):
    src = root / "src"
    reach = header_reach(root, headers)
    rooms = sorted(p.name for p in src.iterdir() if p.is_dir())
    for room in rooms:
        if room == "internal":
            problems.append("src/internal: the seams live beside the rooms that implement them "
                            "(src/ROOM/seam/gpumem/internal/)")
        elif room not in ROOMS:
            problems.append(f"src/{room}: a room that scripts/check_rooms.py does not place")
    for room in rooms:
        if room not in ROOMS:
            continue
        may = allowed(room)
        below = ", ".join(sorted(may - {room})) or "no other room"
        for path in sources(src / room):
            where = path.relative_to(root)
            abi = (src / "driver" / "abi") in path.parents
            for name in includes(path):
                first = name.split("/", 1)[0]
                if name.startswith("../") or name.startswith("./"):
                    problems.append(f"{where}: includes {name}: a relative path out of its room")
                elif abi and not name.startswith(ABI):
                    problems.append(f"{where}: includes {name}: the ABI declarations, shared "
                                    "with sim/, include only each other")
                elif first == "gpumem":
                    used = headers.get(name)
                    if used is None:
                        problems.append(f"{where}: includes {name}: neither a public header nor "
                                        "a seam")
                    elif room not in used and not used <= may:
                        problems.append(f"{where}: includes {name} (implemented by "
                                        f"{' and '.join(sorted(used))}): {room} may use {below}")
                    elif not reach.get(name, set()) <= may:
                        beyond = sorted(reach[name] - may)
                        problems.append(f"{where}: includes {name}, which includes headers of "
                                        f"{' and '.join(beyond)}: {room} may use {below}")
                elif "/" not in name:
                    problems.append(f"{where}: includes {name}: name its room ({room}/{name})")
                elif first in ROOMS and first not in may:
                    problems.append(f"{where}: includes {name}: {room} may use {below}")
    # The public headers and the seams declare; they include only each other.
    # A public header or a tools' seam that includes a seam only the rooms share would hand the
    # tools what libgpumem.so does not export.
    for folder in [root / "include"] + seam_roots(root):
        for path in sources(folder):
            for name in includes(path):
                if name not in headers:
                    problems.append(f"{path.relative_to(root)}: includes {name}: the public "
                                    "headers and the seams include only each other")
                elif room_seam(name) and not room_seam("gpumem/internal/" + path.name):
                    problems.append(f"{path.relative_to(root)}: includes {name}, a seam only "
                                    "the rooms share (ROOM_SEAMS): the tools would reach it")


def room_seam(name):
    """Whether include `name` is a seam only the rooms share (not exported from libgpumem.so)."""
    prefix = "gpumem/internal/"
    return name.startswith(prefix) and name[len(prefix):] in ROOM_SEAMS


def check_tools(root, headers, problems, debts_seen):
    tools = root / "tools"
    if not tools.is_dir():
        return
    names = sorted(p.name for p in tools.iterdir() if p.is_dir())
    for tool in names:
        if tool not in TOOLS:
            problems.append(f"tools/{tool}: a tool that scripts/check_rooms.py does not place")
    for tool in names:
        if tool not in TOOLS:
            continue
        folder = tools / tool
        entries = {TOOL_ENTRIES[t]: t for t in TOOLS[tool] if t in TOOL_ENTRIES}
        for path in sources(folder):
            where = path.relative_to(root)
            for name in includes(path):
                first = name.split("/", 1)[0]
                if (str(where), name) in DEBTS:
                    debts_seen.add((str(where), name))
                elif name.startswith("../") or name.startswith("./"):
                    problems.append(f"{where}: includes {name}: a relative path out of its tool")
                elif first == "gpumem":
                    if name not in headers:
                        problems.append(f"{where}: includes {name}: tools use the public headers "
                                        "and the seams, and this is neither")
                    elif room_seam(name):
                        problems.append(f"{where}: includes {name}: a seam only the rooms share "
                                        "(ROOM_SEAMS), which libgpumem.so does not export")
                elif resolves(path, name, folder):
                    continue
                elif name in entries and (tools / entries[name] / name).is_file():
                    continue  # a lower tool's entry header
                elif first in ROOMS:
                    problems.append(f"{where}: includes {name}: tools reach src/ only through the "
                                    "public headers and the seams")
                else:
                    owners = [t for t in names if t != tool and (tools / t / name).is_file()]
                    whose = f"tools/{owners[0]}'s" if owners else "not in its folder"
                    problems.append(f"{where}: includes {name}: {whose}; tools/{tool} may use "
                                    "its own files, and of the tools below it only their entry "
                                    "headers")


def check_extension(root, headers, problems):
    """The Python extension uses the library as a tool does: its own files, headers and seams."""
    folder = root / "python"
    for path in sources(folder):
        where = path.relative_to(root)
        for name in includes(path):
            if name.startswith("gpumem/"):
                if name not in headers:
                    problems.append(f"{where}: includes {name}: the extension uses the public "
                                    "headers and the seams, and this is neither")
                elif room_seam(name):
                    problems.append(f"{where}: includes {name}: a seam only the rooms share "
                                    "(ROOM_SEAMS), which libgpumem.so does not export")
            elif name.startswith("../") or name.startswith("./") or not resolves(path, name,
                                                                                  folder):
                problems.append(f"{where}: includes {name}: the extension includes its own "
                                "files, the public headers and the seams")


def check_sim(root, problems):
    sim = root / "sim"
    for path in sources(sim):
        where = path.relative_to(root)
        for name in includes(path):
            if name.startswith(ABI) and (root / "src" / name).is_file():
                continue  # the ABI the stand-ins implement, as the driver room declares it
            if name.startswith("../") or name.startswith("./") or not resolves(path, name, sim):
                problems.append(f"{where}: includes {name}: the simulator includes its own "
                                f"files and, of src/, only {ABI}")


def check(root):
    _ROOT[0] = root
    headers, problems = header_rooms(root)
    check_rooms(root, headers, problems)
    debts_seen = set()
    check_tools(root, headers, problems, debts_seen)
    check_extension(root, headers, problems)
    check_sim(root, problems)
    if (root / "tools").is_dir():
        for where, name in sorted(set(DEBTS) - debts_seen):
            problems.append(f"{where}: no longer includes {name}: take it off DEBTS in "
                            "scripts/check_rooms.py")
    return problems


def self_test():
    """The check must fail on each kind of offending include, and pass a clean tree."""
    public = {f"include/gpumem/{name}": "" for name in PUBLIC_HEADERS if name != "version.hpp"}
    public["include/gpumem/gpumem.hpp"] = '#include "gpumem/trace.hpp"\n#include "gpumem/peak.hpp"'
    seams = {f"src/{rooms[0]}/seam/gpumem/internal/{name}": "" for name, rooms in SEAMS.items()}
    cases = {
        "clean": ({"src/support/log.hpp": "", "src/driver/nvml.cpp": '#include "support/log.hpp"',
                   "src/trace/t.cpp": '#include "driver/nvml.hpp"\n#include "gpumem/trace.hpp"',
                   "src/peak/s.cpp": '#include "gpumem/memory.hpp"',
                   "src/support/d.cpp": '#include "gpumem/diagnostics.hpp"',
                   "src/trace/u.cpp": '#include "gpumem/gpumem.hpp"',
                   "src/driver/abi/cupti.hpp": '#include "driver/abi/cuda.hpp"',
                   "src/driver/abi/cuda.hpp": "",
                   "tools/cli/main.cpp": '#include "a/b.hpp"\n#include "serve_command.hpp"\n'
                                         '#include "gpumem/internal/spool.hpp"\n'
                                         '#include "a/p.pb.h"\n#include "gpumem/version.hpp"',
                   "tools/cli/a/b.hpp": '#include "c.hpp"', "tools/cli/a/c.hpp": "",
                   "tools/cli/a/p.proto": "", "tools/serve/serve_command.hpp": "",
                   "tools/inject/x.cpp": "", "tools/usage/usage.hpp": "",
                   "sim/cuda/api.cpp": '#include "driver/abi/cuda.hpp"\n#include "core/x.hpp"\n'
                                       '#include "y.hpp"',
                   "sim/core/x.hpp": "", "sim/cuda/y.hpp": "",
                   "python/src/m.cpp": '#include "b.hpp"\n#include "gpumem/internal/clock.hpp"',
                   "python/src/b.hpp": ""}, 0),
        "upward": ({"src/driver/nvml.cpp": '#include "query/diagnostics_log.hpp"'}, 1),
        "ground floor": ({"src/support/log.cpp": '#include "driver/nvml.hpp"'}, 1),
        "peers": ({"src/attribution/a.cpp": '#include "publish/spool.hpp"'}, 1),
        "relative": ({"src/query/memory.cpp": '#include "../trace/x.hpp"'}, 1),
        "unplaced room": ({"src/newroom/x.cpp": ""}, 1),
        "public includes src": ({"include/gpumem/peak.hpp": '#include "peak/channel.hpp"'}, 1),
        "seam includes src": ({"src/publish/seam/gpumem/internal/spool.hpp":
                               '#include "publish/spool_files.hpp"'}, 1),
        "upward through a public header": ({"src/identity/map.cpp":
                                            '#include "gpumem/memory.hpp"'}, 1),
        "upward through a seam": ({"src/driver/nvml.cpp":
                                   '#include "gpumem/internal/spool.hpp"'}, 1),
        "sideways through a public header": ({"src/attribution/a.cpp":
                                              '#include "gpumem/peak.hpp"'}, 1),
        "through a split header": ({"src/procfs/p.cpp": '#include "gpumem/diagnostics.hpp"'}, 1),
        "through the umbrella": ({"src/query/q.cpp": '#include "gpumem/gpumem.hpp"'}, 1),
        "no such gpumem header": ({"src/query/q.cpp": '#include "gpumem/internal/nope.hpp"'}, 1),
        "unplaced public header": ({"include/gpumem/new.hpp": ""}, 1),
        "unplaced seam": ({"src/peak/seam/gpumem/internal/new.hpp": ""}, 1),
        "publish through the trace": ({"src/publish/p.cpp": '#include "gpumem/trace.hpp"'}, 1),
        "a seam away from its room": ({"src/query/seam/gpumem/internal/spool.hpp": ""}, 1),
        "the seams' old drawer": ({"src/internal/gpumem/internal/x.hpp": ""}, 1),
        "tool includes a room's seam": ({"tools/cli/main.cpp":
                                         '#include "gpumem/internal/exact_ledger.hpp"'}, 1),
        "extension includes a room's seam": ({"python/src/m.cpp":
                                              '#include "gpumem/internal/run_counters.hpp"'}, 1),
        "a tools' seam hands over a room's seam": (
            {"src/run/seam/gpumem/internal/run_engine.hpp":
             '#include "gpumem/internal/run_counters.hpp"'}, 1),
        "tool cycle": ({"tools/cli/main.cpp": "", "tools/serve/s.cpp": '#include "../cli/x.hpp"'},
                       1),
        "another tool by bare name": ({"tools/cli/main.cpp": '#include "collector.hpp"',
                                       "tools/serve/collector.hpp": ""}, 1),
        "an entry header upwards": ({"tools/serve/s.cpp": '#include "commands.hpp"',
                                     "tools/cli/commands.hpp": ""}, 1),
        "an entry header of an unlisted tool": ({"tools/inject/i.cpp": '#include "usage.hpp"',
                                                 "tools/usage/usage.hpp": ""}, 1),
        "unplaced tool": ({"tools/newtool/n.cpp": ""}, 1),
        "tool includes a room": ({"tools/cli/main.cpp": '#include "peak/channel.hpp"'}, 1),
        "tool includes no such seam": ({"tools/cli/main.cpp": '#include "gpumem/internal/x.hpp"'},
                                       1),
        "extension includes a room": ({"python/src/m.cpp": '#include "peak/channel.hpp"'}, 1),
        "extension includes a tool": ({"python/src/m.cpp": '#include "usage.hpp"'}, 1),
        "sim includes a room": ({"sim/cuda/api.cpp": '#include "peak/channel.hpp"'}, 1),
        "sim includes the public API": ({"sim/cuda/api.cpp": '#include "gpumem/memory.hpp"'}, 1),
        "sim includes beyond the ABI": ({"sim/cuda/api.cpp": '#include "driver/cuda.hpp"',
                                         "src/driver/cuda.hpp": ""}, 1),
        "upward through angle brackets": ({"src/driver/nvml.cpp": '#include <query/x.hpp>',
                                           "src/query/x.hpp": ""}, 1),
        "a room's private header in angle brackets": ({"src/peak/p.cpp": '#include <run/m.hpp>',
                                                       "src/run/m.hpp": ""}, 1),
        "a system header in angle brackets": ({"src/driver/nvml.cpp": '#include <vector>\n'
                                               '#include <nlohmann/json.hpp>'}, 0),
        "upward through a public header's own include": (
            {"include/gpumem/allocate.hpp": '#include "gpumem/trace.hpp"',
             "src/query/q.cpp": '#include "gpumem/allocate.hpp"'}, 1),
        "ABI includes the driver": ({"src/driver/abi/cuda.hpp": '#include "driver/cuda.hpp"'},
                                    1),
    }
    # Every other case starts from the clean tree, so that only its own include can fail it.
    debts = {}
    for where, name in DEBTS:
        debts[where] = debts.get(where, "") + f'#include "{name}"\n'
    base = {**public, **seams, **debts}
    failed = 0
    for label, (files, want) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "src" / "support").mkdir(parents=True)
            tree = dict(base)
            if label != "clean":
                tree.update(cases["clean"][0])
            tree.update(files)
            for name, text in tree.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text + "\n")
            found = check(root)
            if bool(found) != bool(want):
                print(f"self-test '{label}': {len(found)} problem(s), expected {want}")
                for problem in found:
                    print("  " + problem)
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
        print(f"rooms: every include in {root} points downwards")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
