#include <cmath>
#include <limits>

#include "attribution/stacks.hpp"
#include "attribution/views.hpp"
#include "fitted_table.hpp"
#include "format.hpp"
#include "table.hpp"
#include "text_width.hpp"

namespace gpumem::cli::attribution {
namespace {

std::string plural(std::size_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// A line of facts (the level, the failed request): wrapped to the width, never cut.
std::string fact_line(const std::string& text, const TextOptions& options) {
  return options.width ? wrap_line(text, *options.width, "  ") : text + "\n";
}

// When NVML's list of the other processes was read, against the failure, in one form whichever
// reading it was: the failing process's own (0 ms before) or the monitor's last before it (its
// age, which the machine's load decides), so that the sentence says the same thing either way.
std::string when_listed(double age_s) {
  return format_seconds(std::abs(age_s)) +
         (age_s >= 0 ? " before the failure" : " after the failure");
}

// Who else held the device at an out-of-memory failure, as NVML listed them.
std::string others_table(const Snapshot& snapshot, const TextOptions& options,
                         const std::string& ellipsis) {
  const bool read = snapshot.other_processes_age_s || !snapshot.other_processes.empty();
  if (!read)
    return fact_line("Other processes on the device: unknown (NVML was not read at the failure).",
                     options);
  // A document from elsewhere may list them without saying when.
  const std::string when = snapshot.other_processes_age_s
                               ? " " + when_listed(*snapshot.other_processes_age_s)
                               : std::string();
  if (snapshot.other_processes.empty())
    return fact_line("No other process held the device (NVML's list" + when + ").", options);
  std::int64_t held = 0;
  FitLayout others{{{">PID"}, {"OTHER PROCESS ON THE DEVICE", {}, {}, 8}, {">MEMORY"}}, {}};
  for (const OtherProcess& process : snapshot.other_processes) {
    std::string name = process.name.empty() ? "?" : printable(process.name);
    if (process.in_run.value_or(false))
      name +=
          process.rank ? " (this run, rank " + std::to_string(*process.rank) + ")" : " (this run)";
    others.columns[0].cells.push_back(std::to_string(process.pid));
    others.columns[1].cells.push_back(std::move(name));
    others.columns[2].cells.push_back(process.used_bytes ? format_bytes(*process.used_bytes)
                                                         : "n/a");
    // A document's figures may be anything its checks let through: saturate, never overflow.
    if (__builtin_add_overflow(held, process.used_bytes.value_or(0), &held))
      held = std::numeric_limits<std::int64_t>::max();
  }
  return fact_line(plural(snapshot.other_processes.size(), "other process", "other processes") +
                       " held " + format_bytes(held) + " on the device (NVML's list" + when + "):",
                   options) +
         fit_table(others, options.width, ellipsis);
}

}  // namespace

std::string top_table(const Document& document, const Snapshot& snapshot, std::size_t top,
                      const TextOptions& options) {
  const std::string ellipsis = options.style.unicode ? "…" : "~";
  const std::string arrow = options.style.unicode ? " ← " : " < ";
  const std::vector<StackTotal> totals = stack_totals(snapshot);
  std::string out = fact_line(printable(describe(document, snapshot)), options);
  std::string level = "level " + format_bytes(snapshot.level_bytes) + ": " +
                      format_bytes(snapshot.live_bytes) + " in " +
                      plural(snapshot.blocks.size(), "live block", "live blocks") + " from " +
                      plural(totals.size(), "stack", "stacks") + ", ";
  if (snapshot.context_bytes)
    level += format_bytes(*snapshot.context_bytes) + " context and modules, ";
  level += format_bytes(snapshot.held_without_block()) + " held without a block";
  out += fact_line(level, options);
  if (snapshot.failure) {
    const Failure& failure = *snapshot.failure;
    std::string line = "failed: " + format_bytes(failure.bytes) + " (" + failure.kind + ") with " +
                       failure.error + "; the device had " + format_bytes(failure.free_bytes) +
                       " free of " + format_bytes(failure.total_bytes);
    out += fact_line(printable(line), options);
    if (failure.stack) {
      const std::vector<std::size_t>& stack = document.stacks[*failure.stack];
      std::string where = "requested by ";
      where += stack.empty() ? "(an empty stack)" : frame_label(allocating(document, stack));
      if (const std::string from = callers(document, stack, arrow); !from.empty())
        where += arrow + from;
      out += fact_line(printable(where), options);
    }
  }
  out += "\n";

  enum : std::size_t { kBytes, kShare, kBlocks, kFunction, kCallers };
  FitLayout layout{
      {{">BYTES"},
       {">SHARE"},
       {">BLOCKS"},
       {"ALLOCATED BY", {}, {}, 16},
       {"CALLED FROM", {}, {}, 12}},
      {{FitStep::shorten, kFunction}, {FitStep::drop, kCallers}, {FitStep::drop, kShare}}};
  auto& columns = layout.columns;
  auto row = [&](std::int64_t bytes, std::string blocks, std::string function,
                 std::string short_function, std::string called_from) {
    columns[kBytes].cells.push_back(format_bytes(bytes));
    columns[kShare].cells.push_back(format_share(bytes, snapshot.level_bytes));
    columns[kBlocks].cells.push_back(std::move(blocks));
    columns[kFunction].short_cells.push_back(short_function.empty() ? function : short_function);
    columns[kFunction].cells.push_back(std::move(function));
    columns[kCallers].cells.push_back(std::move(called_from));
  };
  std::int64_t rest_bytes = 0;
  std::size_t rest_blocks = 0;
  for (std::size_t at = 0; at < totals.size(); ++at) {
    const StackTotal& total = totals[at];
    if (at >= top) {
      rest_bytes += total.bytes;
      rest_blocks += total.blocks;
      continue;
    }
    if (!total.stack) {
      row(total.bytes, std::to_string(total.blocks), "(no stack captured)", "", "");
      continue;
    }
    const std::vector<std::size_t>& stack = document.stacks[*total.stack];
    if (stack.empty()) {
      row(total.bytes, std::to_string(total.blocks), "(an empty stack)", "", "");
      continue;
    }
    const Frame& allocated_by = allocating(document, stack);
    row(total.bytes, std::to_string(total.blocks), printable(frame_label(allocated_by)),
        printable(short_frame_label(allocated_by, ellipsis)), callers(document, stack, arrow));
  }
  if (totals.size() > top)
    row(rest_bytes, std::to_string(rest_blocks),
        "(" + plural(totals.size() - top, "other stack", "other stacks") + ")", "", "");
  if (snapshot.context_bytes.value_or(0) > 0)
    row(*snapshot.context_bytes, "-", "(context and modules)", "",
        "NVML's figure for the process beyond its blocks");
  if (snapshot.held_without_block() > 0)
    row(snapshot.held_without_block(), "-", "(held without a block)", "",
        snapshot.context_bytes ? "pool reservations, rounding"
                               : "context, pool reservations, rounding");
  if (columns[kBytes].cells.empty()) {
    out += "No memory was live.\n";
  } else {
    out += fit_table(layout, options.width, ellipsis);
  }

  if (snapshot.what == "oom") out += "\n" + others_table(snapshot, options, ellipsis);
  return out;
}

}  // namespace gpumem::cli::attribution
