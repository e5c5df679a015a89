#!/usr/bin/env python3
"""Every RUNPATH (or RPATH) entry of gpumem's executables and libraries is absolute or starts
with $ORIGIN: an empty entry (CMake's build trees end theirs with one) or a relative one makes
the dynamic loader search the current directory, where anyone may have put a library of the
same name.

usage: runpath.py FILE...
"""
import subprocess
import sys


def search_paths(path: str) -> list[str]:
    dynamic = subprocess.run(["readelf", "-d", path], check=True, capture_output=True,
                             text=True).stdout
    entries = []
    for line in dynamic.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            value = line.split("[", 1)[1].rsplit("]", 1)[0]
            entries.extend(value.split(":"))
    return entries


def main() -> int:
    wrong = []
    for path in sys.argv[1:]:
        for entry in search_paths(path):
            if not (entry.startswith("/") or entry.startswith("$ORIGIN")):
                wrong.append(f"{path}: search path entry {entry!r} is the current directory"
                             if entry in ("", ".") else f"{path}: relative search path {entry!r}")
    for line in wrong:
        print(line)
    if not wrong:
        print(f"{len(sys.argv) - 1} files: every search path entry is absolute or $ORIGIN")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
