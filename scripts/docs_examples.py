#!/usr/bin/env python3
"""Runs the console examples of README.md and docs/*.md on the simulated GPU.

Every fenced block that shows a console session (``console`` blocks, and any block with a line
starting with "$ " or ">>> ") carries a marker on the line before its fence, an HTML comment a
reader of the rendered page does not see:

    <!-- example: sim=two-gpus env=COLUMNS=120 -->
    <!-- example: not run (needs a Kubernetes cluster) -->

In a shell block, each line starting with "$ " is a command (a line ending in a backslash goes on
to the next) and the lines up to the next command are what it printed, stdout and stderr as a
terminal shows them. The commands run in one shell, one after another: $?, cd, variables and
background jobs ("&", "$ wait") carry over; a background job's output must be redirected for the
example to be deterministic. In a
Python block (">>> " and "... " lines) each statement runs in one interpreter, as in doctest.

Marker keys (values may be quoted, shell-like):
  sim=NAME         the simulated GPUs: tests/docs/sim/NAME.json, "default" (the simulator's own
                   two devices), a .json path from the repository root, or inline JSON
  env=NAME=VALUE   set in the commands' environment (repeatable; {build} and {source} expand)
  bg=COMMAND       started before the commands, in the example's folder; the example starts once
                   it printed its first line (`gpumem-sim workload '...; print ready; sleep 60s'`),
                   and it is killed at the end (repeatable)
  copy=PATH        copy that file (from the repository root) into the example's folder first
  dir=NAME         examples of one file with the same NAME share their folder, in document order
                   (a later example reads the files an earlier one wrote)
  volatile=REGEX   what matches is normalised too: figures that depend on when a sample fell
                   (say so in the prose; never the figures the example is about)
  groups=REGEX     the output's parts that start with a line matching REGEX may come in any
                   order (processes that finish together); they are compared sorted
  setup=CODE       Python only: run before the statements, its output not shown
  needs=userns     runs only where unprivileged user namespaces work (`unshare -Uru true`):
                   tests/cli/launchers/fake-srun names each node through one; elsewhere (a
                   chroot, a locked-down container) the example is not run, and says why
  python           the block is Python (implied by ">>> " lines)

Commands run in a fresh temporary folder with this build's binaries first on PATH (<build>/bin,
<build>/sim, <build>/tests/cli, tests/cli/launchers), gpumem's libraries pointing at the
simulated GPU on a private state file, COLUMNS=80 and a UTF-8 locale.

What the tool prints is first written as a reader would see it anywhere: the example's folder is
".", the build folder "build", a source file named in debug information is named from the
repository root, this machine's host name is "myhost". Then both the page and the run are
normalised by these rules, and only these, before they are compared: a run's duration ("ran 53
ms"), times since a run's start ("at 3 ms", "2 ms before the failure"), clock times (12:34:56),
process ids ("pid 4242", "process 4242", a PID column), with the spaces that align them, where
gpumem wrapped a summary line ("gpumem:   " goes on with it: the digits of a pid move the break),
and what the marker's volatile= matches. Every other character must match, and a documented line
wider than the example's COLUMNS is a difference when the tool now fits its output to them.
`--update` writes the real output, with real pids and durations, where an example differs.

usage: scripts/docs_examples.py [--check | --update] [--build DIR] [--source DIR] [FILE...]
  --check   (default) exit 1, with a unified diff per example that differs, an unmarked example,
            or a command that failed to run
  --update  rewrite each example that differs with what the tool printed now
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_TIMEOUT_S = 180
BACKGROUND_READY_TIMEOUT_S = 60
MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")


@dataclass
class Example:
    path: Path
    marker_line: int | None  # 0-based line of the marker, None when unmarked
    fence_line: int  # 0-based line of the opening fence
    close_line: int  # 0-based line of the closing fence
    indent: str
    lang: str
    body: list[str]
    options: dict = field(default_factory=dict)
    skip_reason: str | None = None
    python: bool = False

    @property
    def where(self) -> str:
        return f"{self.path}:{self.fence_line + 1}"


def parse_marker(text: str) -> tuple[dict, str | None]:
    """The marker's options, or the reason it is not run."""
    skip = re.match(r"not run\s*\((.*)\)\s*$", text, re.S)
    if skip:
        return {}, skip.group(1).strip()
    if text.startswith("not run"):
        raise ValueError("a 'not run' marker needs its reason in parentheses")
    options: dict = {"env": [], "bg": [], "copy": []}
    for word in shlex.split(text):
        key, eq, value = word.partition("=")
        if key == "python" and not eq:
            options["python"] = True
        elif key in ("env", "bg", "copy") and eq:
            options[key].append(value)
        elif key in ("sim", "dir", "setup", "volatile", "groups", "needs") and eq:
            options[key] = value
        else:
            raise ValueError(f"unknown marker option {word!r}")
    return options, None


def looks_like_console(lang: str, body: list[str]) -> bool:
    return lang in ("console", "shell-session") or any(
        line.startswith("$ ") or line.startswith(">>> ") for line in body
    )


def find_examples(path: Path) -> tuple[list[str], list[Example]]:
    lines = path.read_text(encoding="utf-8").split("\n")
    examples = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, lang = fence.groups()
        close = i + 1
        while close < len(lines) and lines[close].strip() != ticks:
            close += 1
        body = [line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[i + 1 : close]]
        marker_line = i - 1 if i > 0 and MARKER.match(lines[i - 1]) else None
        if marker_line is not None or looks_like_console(lang, body):
            example = Example(path, marker_line, i, close, indent, lang, body)
            if marker_line is not None:
                try:
                    example.options, example.skip_reason = parse_marker(MARKER.match(lines[marker_line]).group(1))
                except ValueError as error:
                    raise SystemExit(f"{example.where}: bad example marker: {error}")
                example.python = bool(example.options.get("python")) or any(line.startswith(">>> ") for line in body)
            examples.append(example)
        i = close + 1
    return lines, examples


# --- What an example says: its steps (a command or a statement) and what each printed. ---


@dataclass
class Step:
    source: list[str]  # the prompt lines as written ("$ ..." and continuations, or ">>> "/"... ")
    output: list[str]

    def command(self, python: bool) -> str:
        if python:
            return "\n".join(line[4:] if len(line) > 3 else "" for line in self.source)
        return "\n".join(self.source)[2:]


def split_steps(body: list[str], python: bool) -> tuple[list[str], list[Step]]:
    """The lines before the first prompt (kept as they are), then the steps."""
    prefix: list[str] = []
    steps: list[Step] = []
    i = 0
    while i < len(body):
        line = body[i]
        if (python and line.startswith(">>> ")) or (not python and line.startswith("$ ")):
            source = [line]
            if python:
                while i + 1 < len(body) and (body[i + 1] == "..." or body[i + 1].startswith("... ")):
                    i += 1
                    source.append(body[i])
            else:
                while source[-1].endswith("\\") and i + 1 < len(body):
                    i += 1
                    source.append(body[i])
            steps.append(Step(source, []))
        elif steps:
            steps[-1].output.append(line)
        else:
            prefix.append(line)
        i += 1
    return prefix, steps


def output_lines(body: list[str], python: bool) -> list[str]:
    return [line for step in split_steps(body, python)[1] for line in step.output]


# --- Normalisation: the only differences a real run may have from its example. ---


def normalise_example(lines: list[str], example: Example) -> list[str]:
    """An example's text as compared: normalise(), the example's own volatile parts, and its
    groups sorted."""
    out = normalise(lines)
    volatile = example.options.get("volatile")
    if volatile:
        out = [re.sub(volatile, "<volatile>", line) for line in out]
    groups = example.options.get("groups")
    if groups:
        result: list[str] = []
        run: list[list[str]] = []
        for line in out + ["$ "]:
            if line.startswith("$ "):
                result += [line for group in sorted(run) for line in group]
                run = []
                result.append(line)
            elif re.search(groups, line) or not run:
                run.append([line])
            else:
                run[-1].append(line)
        out = result[:-1]
    return out


def normalise(lines: list[str]) -> list[str]:
    # A summary line gpumem wrapped ("gpumem:   " continues it) is compared whole: a pid's digits
    # or a duration's may move where it wraps.
    joined: list[str] = []
    for line in lines:
        if line.startswith("gpumem:   ") and joined:
            joined[-1] += " " + line[len("gpumem:   "):]
        else:
            joined.append(line)
    out = []
    pid_header_ends: list[int] = []
    for text in joined:
        text = re.sub(r"\bran [0-9.]+ (?:µs|us|ms|s|min)\b", "ran <duration>", text)
        text = re.sub(r"\b\d\d:\d\d:\d\d\b", "<clock>", text)
        text = re.sub(r", at -?[0-9.]+ (?:µs|ms|s)\b", ", at <time>", text)
        # "2 ms before the failure", also where a fitted line breaks after "the".
        text = re.sub(r"\b[0-9.]+ (?:µs|ms|s) (before|after) the\b", r"<time> \1 the", text)
        volatile = False
        # A PID column: the numbers that end where the header's "PID" ends.
        if re.search(r"(^|\s)PID(\s|$)", text):
            pid_header_ends = [m.end() for m in re.finditer(r"\bPID\b", text)]
            volatile = True
        elif not text.strip():
            pid_header_ends = []
        elif pid_header_ends:
            for end in pid_header_ends:
                for m in re.finditer(r"\d+", text):
                    if m.end() == end:
                        text = text[: m.start()] + "<pid>" + text[m.end() :]
                        volatile = True
                        break
        text, count = re.subn(r"\b((?:pid|pids|process|processes|nvml_pid)\b\"?:? \(?)\d+", r"\1<pid>", text)
        text, more = re.subn(r"(\(pid(?: \d+,)*) \d+\)", r"\1 <pid>)", text)
        if count or more or volatile:
            # A pid's digits move the columns after it: compare such lines without alignment.
            text = re.sub(r"\s+", " ", text.strip())
        out.append(text)
    return out


# --- Running an example. ---


@dataclass
class Context:
    source: Path
    build: Path
    host: str
    python: str = "/usr/bin/python3"


def sim_config(value: str | None, source: Path) -> str | None:
    if value is None or value == "default":
        return None
    if value.startswith("{"):
        return value
    path = source / value if "/" in value else source / "tests" / "docs" / "sim" / f"{value}.json"
    if not path.is_file():
        raise SystemExit(f"no simulated GPU config {value!r} ({path})")
    return path.read_text(encoding="utf-8")


def base_environment(context: Context, workdir: Path, example: Example) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GPUMEM_", "CUDA_", "LC_", "SLURM", "OMPI_", "PMI"))
        and key not in ("COLUMNS", "LINES", "NO_COLOR", "LANG", "LANGUAGE", "RANK", "LOCAL_RANK",
                        "WORLD_SIZE", "PYTHONPATH", "FAKE_SRUN_SIM_CONFIGS", "TMPDIR")
    }
    build, source = context.build, context.source
    env["PATH"] = os.pathsep.join(
        [str(build / "bin"), str(build / "sim"), str(build / "tests" / "cli"),
         str(source / "tests" / "cli" / "launchers"), "/usr/local/bin", "/usr/bin", "/bin"]
    )
    env.update(
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        COLUMNS="80",
        TERM="dumb",
        TMPDIR=str(workdir),
        GPUMEM_NVML_LIBRARY=str(build / "sim" / "libnvidia-ml.so.1"),
        GPUMEM_CUDA_LIBRARY=str(build / "sim" / "libcuda.so.1"),
        GPUMEM_CUPTI_LIBRARY=str(build / "sim" / "libcupti.so.13"),
        GPUMEM_SIM_DIR=str(build / "sim"),
        GPUMEM_SIM_STATE=str(workdir / "sim.state"),
        PYTHONPATH=str(build / "python"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    config = sim_config(example.options.get("sim"), source)
    if config is not None:
        env["GPUMEM_SIM_CONFIG"] = config
    for assignment in example.options.get("env", []):
        name, _, value = assignment.partition("=")
        env[name] = value.replace("{build}", str(build)).replace("{source}", str(source))
    return env


def start_background(command: str, workdir: Path, env: dict) -> subprocess.Popen:
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=workdir, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, text=True,
    )
    # The first line (a workload's "print ready") says it holds what it allocated.
    ready, _, _ = select.select([process.stdout], [], [], BACKGROUND_READY_TIMEOUT_S)
    line = process.stdout.readline() if ready else ""
    if not line or process.poll() is not None:
        stop(process)
        raise RuntimeError(f"background command not ready ({line.strip() or 'no output'}): {command}")
    return process


def stop(process: subprocess.Popen) -> None:
    """Ends a command started in a session of its own, with everything it started."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


STEP_END = "\x1edocs-example-step-end\x1e"


def run_shell(steps: list[Step], workdir: Path, env: dict) -> list[list[str]]:
    """Runs the commands in one shell, as a terminal session would ($?, cd, variables and
    background jobs carry over), and splits its output at a mark printed after each command."""
    script = workdir / ".docs-example.sh"
    lines = []
    for step in steps:
        lines.append(step.command(python=False))
        # The mark, then the command's status restored for the next one ($?).
        lines.append(f"__docs_status=$?; printf '{STEP_END}\\n'; (exit $__docs_status)")
    lines.append("wait")
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    process = subprocess.Popen(
        ["bash", str(script)], cwd=workdir, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    limit = COMMAND_TIMEOUT_S + 10 * len(steps)
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        stop(process)
        raise RuntimeError(f"still running after {limit} s")
    finally:
        script.unlink()
    chunks = output.decode("utf-8", errors="replace").split(STEP_END + "\n")
    if len(chunks) != len(steps) + 1:
        raise RuntimeError(f"the shell stopped after {len(chunks) - 1} of {len(steps)} commands")
    return [chunk.rstrip("\n").split("\n") if chunk else [] for chunk in chunks[:-1]]


PYTHON_DRIVER = r"""
import contextlib, io, json, sys
statements, setup = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    exec(compile(setup, "<setup>", "exec"), namespace)
outputs = []
real_stdout = sys.stdout
for statement in statements:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            exec(compile(statement + "\n", "<example>", "single"), namespace)
        except Exception:
            import traceback
            buffer.write("Traceback (most recent call last):\n")
            buffer.write(traceback.format_exception_only(*sys.exc_info()[:2])[-1])
    outputs.append(buffer.getvalue())
real_stdout.write(json.dumps(outputs))
"""


def run_python(steps: list[Step], workdir: Path, env: dict, setup: str, python: str) -> list[list[str]]:
    statements = [step.command(python=True) for step in steps]
    result = subprocess.run(
        [python, "-c", PYTHON_DRIVER], cwd=workdir, env=env,
        input=json.dumps([statements, setup]), capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the Python driver failed:\n{result.stderr}")
    return [text.rstrip("\n").split("\n") if text else [] for text in json.loads(result.stdout)]


def run_example(example: Example, context: Context, workdir: Path) -> list[str]:
    """The example's body as this build prints it."""
    prefix, steps = split_steps(example.body, example.python)
    if not steps:
        raise RuntimeError("no command in a marked example")
    env = base_environment(context, workdir, example)
    for name in example.options.get("copy", []):
        shutil.copy(context.source / name, workdir / Path(name).name)
    background = []
    try:
        for command in example.options.get("bg", []):
            background.append(start_background(command, workdir, env))
        if example.python:
            outputs = run_python(steps, workdir, env, example.options.get("setup", ""), context.python)
        else:
            outputs = run_shell(steps, workdir, env)
    finally:
        for process in background:
            stop(process)
    body = list(prefix)
    for step, output in zip(steps, outputs):
        body += step.source + output
    return body


SOURCE_PATH = re.compile(r"(?<![\w/.])(?:\.\./|/[^\s():]*/)((?:tests|src|tools|sim|python|bench|examples)/[\w./+-]+)")


def source_relative(line: str, source: Path) -> str:
    """A source file named in debug information, relative to the repository root: where the build
    compiled it from (../, an absolute path, a ccache of another checkout) is the machine's."""

    def relative(match: re.Match) -> str:
        name = match.group(1)
        return name if (source / name).exists() else match.group(0)

    return SOURCE_PATH.sub(relative, line)


def display(path: Path, source: Path) -> str:
    try:
        return str(path.relative_to(source))
    except ValueError:
        return str(path)


def as_a_reader_sees_it(lines: list[str], context: Context, workdir: Path) -> list[str]:
    """The output with this machine's folders and name as the docs write them: the example's
    folder is the current one, the build is build/, source files are named from the root."""
    replacements = [(str(workdir) + "/", ""), (str(workdir), "."), (str(context.build), "build"),
                    (str(context.source), ".")]
    out = []
    for line in lines:
        line = source_relative(line.rstrip(), context.source)
        for folder, name in replacements:
            line = line.replace(folder, name)
        if context.host:
            line = re.sub(rf"\b{re.escape(context.host)}\b", "myhost", line)
        out.append(line)
    return out


@dataclass
class Tally:
    ran: int = 0
    skipped: int = 0
    updated: int = 0
    failures: int = 0


def columns(example: Example) -> int:
    settings = dict(assignment.partition("=")[::2] for assignment in example.options.get("env", []))
    return int(settings.get("COLUMNS", 80))


def user_namespaces() -> bool:
    """Whether this process may make a user namespace (fake-srun's node names need one)."""
    try:
        return subprocess.run(["unshare", "-Uru", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


def process_file(path: Path, context: Context, update: bool, has_python: bool, tally: Tally) -> None:
    lines, examples = find_examples(path)
    shared: dict[str, Path] = {}
    replacements: list[tuple[int, int, list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="gpumem-docs-") as scratch:
        for example in examples:
            name = f"{display(path, context.source)}:{example.fence_line + 1}"
            if example.marker_line is None:
                print(f"{name}: unmarked example: add <!-- example: sim=... --> before it, "
                      "or <!-- example: not run (why) -->")
                tally.failures += 1
                continue
            if example.skip_reason is not None:
                tally.skipped += 1
                continue
            if example.python and not has_python:
                print(f"{name}: not run here: this build has no Python package")
                tally.skipped += 1
                continue
            if example.options.get("needs") == "userns" and not user_namespaces():
                print(f"{name}: not run here: no user namespaces (unshare -Uru true fails)")
                tally.skipped += 1
                continue
            tally.ran += 1
            shared_name = example.options.get("dir")
            if shared_name and shared_name in shared:
                workdir = shared[shared_name]
            else:
                workdir = Path(tempfile.mkdtemp(prefix="ex-", dir=scratch))
                if shared_name:
                    shared[shared_name] = workdir
            started = time.monotonic()
            try:
                actual = as_a_reader_sees_it(run_example(example, context, workdir), context, workdir)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as error:
                print(f"{name}: could not run: {error}")
                tally.failures += 1
                continue
            # At the example's width the tool wraps or fits what it can; a documented line wider
            # than what it prints now is a difference too (an example written before it wrapped).
            width = columns(example)
            wide = sum(len(line) > width for line in output_lines(actual, example.python))
            if wide:
                print(f"{name}: note: {wide} output line(s) wider than {width} columns")
            documented_wide = any(len(line) > width for line in output_lines(example.body, example.python))
            if normalise_example(example.body, example) == normalise_example(actual, example) and (
                    wide or not documented_wide):
                continue
            if update:
                body = [(example.indent + line) if line else line for line in actual]
                replacements.append((example.fence_line + 1, example.close_line, body))
                tally.updated += 1
                print(f"{name}: updated ({time.monotonic() - started:.1f} s)")
            else:
                tally.failures += 1
                print(f"{name}: differs from what the tool prints now "
                      "(durations, times, pids are not compared):")
                sys.stdout.writelines(difflib.unified_diff(
                    [line + "\n" for line in example.body], [line + "\n" for line in actual],
                    f"{name} (documented)", f"{name} (this build)"))
    if replacements:
        # A new body moves the lines below it: replace from the last example back.
        for begin, end, body in reversed(replacements):
            lines[begin:end] = body
        path.write_text("\n".join(lines), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare (the default)")
    mode.add_argument("--update", action="store_true", help="rewrite the examples that differ")
    parser.add_argument("--build", type=Path, help="the build folder (default: <source>/build)")
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="the interpreter of the Python examples (the build's extension's)")
    parser.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    args = parser.parse_args()
    source = args.source.resolve()
    build = (args.build or source / "build").resolve()
    for needed in (build / "bin" / "gpumem", build / "sim" / "gpumem-sim"):
        if not needed.exists():
            print(f"docs_examples: {needed} is missing: build the tree first", file=sys.stderr)
            return 77
    files = [f.resolve() for f in args.files] or [
        source / "README.md", *sorted((source / "docs").glob("*.md"))]
    context = Context(source, build, socket.gethostname(), args.python)
    has_python = (build / "python" / "gpumem").is_dir() and shutil.which(args.python) is not None
    tally = Tally()
    for path in files:
        process_file(path, context, args.update, has_python, tally)
    done = (f"ran {tally.ran} examples ({tally.updated} updated)" if args.update
            else f"checked {tally.ran} examples")
    print(f"docs_examples: {done}, {tally.skipped} not run, {tally.failures} problem(s)")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
