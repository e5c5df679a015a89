// PyTorch's memory snapshots (the pickle `torch.cuda.memory._dump_snapshot()` writes) as a source
// of attribution documents, and gpumem's documents as snapshots PyTorch's viewers open
// (pytorch.org/memory_viz, `torch.cuda._memory_viz`). Read with a restricted pickle reader: only
// dicts, lists, tuples, strings, numbers, booleans and None; an opcode that imports or calls is
// refused. docs/attribution.md, "PyTorch's snapshots".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpumem/internal/attribution_document.hpp"

#pragma GCC visibility push(default)

namespace gpumem::detail::attribution {

// What a file holds, from its first bytes: the one function that tells an attribution source's
// format. A pickle of protocol 2 or later starts with PROTO (0x80); anything else is read as
// gpumem.attribution/1 JSON (whose reader says what is wrong with it).
enum class SourceFormat { gpumem_json, torch_pickle };
SourceFormat source_format(std::string_view head);

// A snapshot's two forms: the current one, a dict with `segments` and `device_traces`, and the
// older one (PyTorch 1.13 and before), the list of segments whose blocks carry a `history`.
enum class TorchForm { dict, list };

// A PyTorch snapshot as a document: for each device its segments' total the level (what PyTorch's
// allocator reserved), the blocks in state active_allocated the live blocks, each by its frames
// (innermost first, as PyTorch records them); a snapshot per device, `what` "peak", `scope`
// "torch snapshot", at time 0. nullopt with `error`, one line naming `path`: a pickle that is not
// a snapshot, or is hostile (an opcode that imports or calls, cut short, nested too deep, too
// large). `bytes`: the file's content.
// No tool calls it: hidden in libgpumem.so (tests/package/exported_symbols.py).
__attribute__((visibility("hidden"))) std::optional<Document> parse_torch_snapshot(
    std::string_view bytes, const std::string& path, std::string* error);
// The same from a file (at most 2 GiB).
std::optional<Document> read_torch_snapshot(const std::string& path, std::string* error);

// A document as a PyTorch snapshot pickle (protocol 2): for each device the highest peak
// snapshot (else its first), each live block a segment of one active_allocated block with its
// stack as frames; what the level holds beyond the blocks (the context, the driver's rounding,
// memory held without a block) as one more segment each, named by a frame
// "<gpumem: …>"; `dict` adds `device_traces`, each block's allocation an "alloc" entry at its
// time; `list` is the older form (blocks with `history`).
std::string torch_snapshot(const Document& document, TorchForm form);

}  // namespace gpumem::detail::attribution

#pragma GCC visibility pop
