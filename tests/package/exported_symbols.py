#!/usr/bin/env python3
"""libgpumem.so exports gpumem's public API (include/gpumem) and the seams that gpumem's tools and
its Python extension call (src/ROOM/seam/gpumem/internal, the tools' seams of
scripts/check_rooms.py), and nothing else of gpumem: its internals, and the seams only the rooms
share (ROOM_SEAMS there: the exact ledger, the event observers, the exact source's subscription,
NVML's process lists, the driver's UUIDs, the run's attribution slots and counters file), are
hidden (-fvisibility=hidden). The C++ standard library's template instantiations it emits are exported
as they are by any C++ shared library (libstdc++ declares them with default visibility).

With the binaries that link libgpumem.so given too (the gpumem command, the injection library,
the Python extension), each function of a seam that the library exports must be called by one of
them (UNCALLED lists the exceptions, each with why): a seam's function no tool calls is declared
hidden (`__attribute__((visibility("hidden")))`), or the whole seam is, if no tool calls any of it.

usage: exported_symbols.py path/to/libgpumem.so [CALLER…]
"""
import re
import subprocess
import sys

# gpumem namespaces that are internal: nothing of them may be exported but the seams below.
INTERNAL = re.compile(r"^gpumem::(detail|peak|driver|identity|abi|query|trace|publish|support|procfs|run|cli)::")
SEAMS = {
    "gpumem::detail::spool_directory_refusal",
    "gpumem::detail::read_spool",
    "gpumem::detail::process_running",
    "gpumem::detail::parse_byte_size",
    "gpumem::detail::byte_size_text",  # the one way a byte count is shown (byte_size.hpp)
    "gpumem::detail::check_outputs",  # the output rule (output_file.hpp)
    "gpumem::detail::output_identity",
    "gpumem::detail::write_output",
    "gpumem::detail::printable",  # untrusted text shown safely (printable_text.hpp)
    # inline (implicit) members of a seam's struct, emitted where they are used
    "gpumem::detail::PublishedTrace::PublishedTrace",
    "gpumem::detail::PublishedTrace::~PublishedTrace",
    "gpumem::detail::attribution::read_document",
    "gpumem::detail::attribution::document_json",
    "gpumem::detail::attribution::to_document",
    "gpumem::detail::attribution::Document::device",
    "gpumem::support::record_diagnostic",
    "gpumem::procfs::pid_namespace",
    "gpumem::procfs::pid_namespace_text",
    "gpumem::procfs::namespace_pids",
    "gpumem::procfs::command_name",
    "gpumem::procfs::parent_pid",
    "gpumem::procfs::cgroups",
    "gpumem::procfs::executable",
    "gpumem::procfs::process_ids",
    "gpumem::procfs::own_name",
    "gpumem::run::join_run",
    # gpumem run's engine (gpumem/internal/run_engine.hpp, run_result.hpp, run_timeline.hpp,
    # run_rank.hpp), and the implicit members of the result's structs
    "gpumem::run::Engine::Engine",
    "gpumem::run::Engine::~Engine",
    "gpumem::run::Engine::count_exactly",
    "gpumem::run::Engine::exact",
    "gpumem::run::Engine::collect_attribution",
    "gpumem::run::Engine::child_environment",
    "gpumem::run::Engine::baseline",
    "gpumem::run::Engine::start",
    "gpumem::run::Engine::stop",
    "gpumem::run::Engine::finish",
    "gpumem::run::Engine::attribution",
    "gpumem::run::temporary_folder",
    "gpumem::run::command_peak",
    "gpumem::run::command_peak_time",
    "gpumem::run::command_peak_at_most",
    "gpumem::run::device_rise",
    "gpumem::run::device_used",
    "gpumem::run::rank_rows",
    "gpumem::run::to_string",
    "gpumem::run::level_at",
    "gpumem::run::footprint_steps",
    "gpumem::run::series_steps",
    "gpumem::run::StepCoalescer::StepCoalescer",
    "gpumem::run::StepCoalescer::add",
    "gpumem::run::StepCoalescer::steps",
    "gpumem::run::StepCoalescer::add_coalesced",
    "gpumem::run::StepCoalescer::close_bucket",
    "gpumem::run::StepCoalescer::coarsen",
    "gpumem::run::StepCoalescer::open_count",
    "gpumem::run::StepCoalescer::emit",
    "gpumem::run::rank_variables",
    "gpumem::run::local_rank_variables",
    "gpumem::run::rank_from_environment_block",
    "gpumem::run::process_rank",
    "gpumem::run::own_rank",
    "gpumem::run::host_name",
    # gpumem.run/1 and gpumem.report/1 (gpumem/internal/run_document.hpp, report_document.hpp)
    "gpumem::run::signal_name",
    "gpumem::run::run_document",
    "gpumem::run::run_document_text",
    "gpumem::run::read_run_document",
    "gpumem::run::combine_runs",
    "gpumem::run::report_document_text",
    "gpumem::run::read_report_document",
    # the sliding-window peaks the exporter serves (gpumem/internal/window_peak.hpp)
    "gpumem::detail::WindowPeak::WindowPeak",
    "gpumem::detail::WindowPeak::~WindowPeak",
    "gpumem::detail::WindowPeak::peak",
    "gpumem::detail::WindowPeak::note",
    "gpumem::detail::WindowPeak::sample_loop",
    "gpumem::detail::WindowPeak::sample_all",
    "gpumem::detail::WindowPeak::rotate_all",
}
# Seams' functions exported though no caller given calls them, each with why.
UNCALLED = {
    # gpumem run's result and ranks: the run document is moving into the library (issue 34 item
    # 1), which reshapes what the command calls of them; hide what stays uncalled then.
    "gpumem::run::temporary_folder",
    "gpumem::run::level_at",
    "gpumem::run::series_steps",
    "gpumem::run::process_rank",
    "gpumem::run::rank_from_environment_block",
}
# The namespaces of the seams' free functions (what is not in one of them is a class's member,
# exported with its class).
SEAM_FUNCTION_NAMESPACES = {"gpumem::detail", "gpumem::detail::attribution", "gpumem::detail::json",
                            "gpumem::run", "gpumem::procfs", "gpumem::driver", "gpumem::peak",
                            "gpumem::support"}

# Structs of the seams whose implicit members (constructors, destructor, assignments) the
# compiler emits where they are used, so whether one is exported depends on how the library's
# sources are grouped into translation units: allowed, never required.
SEAM_STRUCTS = ("gpumem::run::ProcessPeak", "gpumem::run::RankPeaks", "gpumem::run::RankRow",
                "gpumem::run::RankInfo", "gpumem::run::RunDocument", "gpumem::run::RunDocDevice",
                "gpumem::run::RunDocProcess", "gpumem::run::RunDocRank",
                "gpumem::run::RunDocRankDevice", "gpumem::run::RunDocPidNamespace",
                "gpumem::run::RunDocOwnRank", "gpumem::run::RunDocBudget", "gpumem::run::RunFile",
                "gpumem::run::JobReport", "gpumem::run::JobInput", "gpumem::run::JobDevice",
                "gpumem::run::JobRank", "gpumem::run::JobNode", "gpumem::run::DeviceTrack")


def implicit_member(base: str) -> bool:
    for struct in SEAM_STRUCTS:
        name = struct.rsplit("::", 1)[1]
        if base in (f"{struct}::{name}", f"{struct}::~{name}", f"{struct}::operator="):
            return True
    return False


# The attribution document's model (gpumem/internal/attribution_document.hpp): its structs'
# implicit members are emitted where they are used, so any of the seam's namespace is the seam.
# Likewise the one checked-JSON reader under every format (gpumem/internal/checked_json.hpp).
SEAM_NAMESPACES = ("gpumem::detail::attribution::", "gpumem::detail::json::")
# Mangled names of entities of namespace std (`St`) and __gnu_cxx, functions and members, const
# or not: _ZSt…, _ZNSt…, _ZNKSt…, _ZN9__gnu_cxx…, _ZNK9__gnu_cxx…
STANDARD_PREFIXES = ("_ZSt", "_ZNSt", "_ZNKSt", "_ZN9__gnu_cxx", "_ZNK9__gnu_cxx")
# What the linker itself defines.
LINKER = {"_init", "_fini", "__bss_start", "_edata", "_end"}
PREFIXES = ("typeinfo for ", "typeinfo name for ", "vtable for ", "VTT for ",
            "guard variable for ", "non-virtual thunk to ", "virtual thunk to ")
# A (template) function's demangled name may start with its return type.
RETURN_TYPE = re.compile(r"^(?:void|bool|char|int|long|unsigned|double|float|auto) ")


def entity(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    return RETURN_TYPE.sub("", name)


def qualified(name: str) -> str:
    """gpumem::support::record_diagnostic(std::string const&) -> gpumem::support::record_diagnostic"""
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        if depth == 0 and ch not in "<>":
            out.append(ch)
    return re.sub(r"\[abi:[^]]*\]", "", "".join(out)).strip()


def called(callers: list) -> set:
    """The mangled names the callers take from a shared library (their undefined symbols)."""
    names = set()
    for caller in callers:
        listing = subprocess.run(["nm", "-D", "--undefined-only", caller],
                                 check=True, capture_output=True, text=True).stdout
        names |= {line.split()[-1].split("@")[0] for line in listing.splitlines() if line.strip()}
    return names


def main() -> int:
    library, callers = sys.argv[1], sys.argv[2:]
    taken = called(callers)
    listing = subprocess.run(["nm", "-D", "--defined-only", library],
                             check=True, capture_output=True, text=True).stdout
    mangled = [line.split(" ", 2)[2] for line in listing.splitlines() if line.count(" ") >= 2]
    # Defined out of line (T): a weak definition (W) is an inline function of a header, which each
    # caller compiles for itself where the optimiser does not inline it.
    strong = {line.split(" ", 2)[2] for line in listing.splitlines()
              if line.count(" ") >= 2 and line.split(" ", 2)[1] == "T"}
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), check=True,
                               capture_output=True, text=True).stdout.splitlines()
    public, seams, wrong = set(), set(), []
    for symbol, name in zip(mangled, demangled):
        # An instantiation of a standard library template (on any type, gpumem's internal ones
        # included: GCC gives a member template of std's default visibility where the optimiser
        # does not inline it) is the standard library's entity, whatever its return type says.
        if symbol.startswith(STANDARD_PREFIXES):
            continue
        what = entity(name)
        if what in LINKER or what.startswith(("std::", "__gnu_cxx::")):
            continue
        if not what.startswith("gpumem::"):
            wrong.append(name)
            continue
        base = qualified(what)
        if (callers and symbol in strong and INTERNAL.match(base) and "(" in name
                and base.rsplit("::", 1)[0] in SEAM_FUNCTION_NAMESPACES
                and symbol not in taken and base not in UNCALLED):
            wrong.append(f"{name}: a seam's function no caller calls (declare it hidden)")
        if base in SEAMS:
            seams.add(base)
        elif base.startswith(SEAM_NAMESPACES) or implicit_member(base):
            continue
        elif INTERNAL.match(base):
            wrong.append(name)
        else:
            public.add(base)
    for needed in ("gpumem::gpu_mem_get", "gpumem::PeakCounter::read", "gpumem::GPUMemTrace::report"):
        if needed not in public:
            wrong.append(f"{needed} (public API) is not exported")
    for seam in sorted(SEAMS - seams):
        wrong.append(f"{seam} (a seam) is not exported")
    if wrong:
        print(f"{library}: {len(wrong)} symbols wrongly exported or missing:")
        for name in wrong:
            print("  " + name)
        return 1
    print(f"{library}: {len(public)} public names and {len(seams)} seams exported, nothing else of gpumem"
          + (f"; each seam's function called by {len(callers)} callers" if callers else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
