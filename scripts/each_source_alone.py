#!/usr/bin/env python3
"""Compiles every source of the library, the command, the Python extension and the examples on
its own (no unity build), for its syntax and warnings only (-fsyntax-only): a source that leans
on another's includes, or a warning of this compiler, fails here.

usage: scripts/each_source_alone.py BUILD_DIR

BUILD_DIR is a tree configured with CMAKE_UNITY_BUILD=OFF and CMAKE_EXPORT_COMPILE_COMMANDS=ON
whose generated sources (pprof's profile.pb.h) are built. Code generation is left out: it finds
nothing that the full builds of the other trees do not, and it is four fifths of the time.
"""

import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# What is checked: the sources of what users build and link (tests, benchmarks and the
# simulated GPU are built in the other trees).
CHECKED = ("src/", "tools/", "python/", "examples/")


def syntax_only(entry: dict) -> list[str]:
    """The entry's compile command, without its output, its dependency file or its launcher."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if Path(args[0]).name == "ccache":
        args = args[1:]
    kept: list[str] = []
    skip = 0
    for arg in args:
        if skip:
            skip -= 1
        elif arg in ("-o", "-MT", "-MF"):
            skip = 1
        elif arg in ("-c", "-MD", "-MMD"):
            pass
        else:
            kept.append(arg)
    return kept + ["-fsyntax-only"]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: scripts/each_source_alone.py BUILD_DIR", file=sys.stderr)
        return 2
    build = Path(sys.argv[1]).resolve()
    root = Path(__file__).resolve().parent.parent
    try:
        entries = json.loads((build / "compile_commands.json").read_text())
    except (OSError, ValueError) as error:
        print(f"each_source_alone: {build}/compile_commands.json: {error}", file=sys.stderr)
        return 1
    chosen: dict[str, dict] = {}  # one command per source (a library built shared and static)
    for entry in entries:
        source = Path(entry["directory"], entry["file"]).resolve()
        try:
            relative = source.relative_to(root).as_posix()
        except ValueError:
            continue  # generated code
        if relative.startswith(CHECKED) and source.suffix in (".cpp", ".cc", ".c"):
            chosen.setdefault(relative, entry)
    if not chosen:
        print(f"each_source_alone: no source of {', '.join(CHECKED)} in {build}", file=sys.stderr)
        return 1

    def check(item: tuple[str, dict]) -> tuple[str, int, str]:
        relative, entry = item
        done = subprocess.run(syntax_only(entry), cwd=entry["directory"], capture_output=True,
                              text=True)
        return relative, done.returncode, done.stdout + done.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for relative, status, output in pool.map(check, sorted(chosen.items())):
            if status != 0 or output.strip():
                failed += 1
                print(f"== {relative}\n{output}", end="" if output.endswith("\n") else "\n")
    if failed:
        print(f"each_source_alone: {failed} of {len(chosen)} sources failed alone", file=sys.stderr)
        return 1
    print(f"{len(chosen)} sources compile alone, warning-free")
    return 0


if __name__ == "__main__":
    sys.exit(main())
