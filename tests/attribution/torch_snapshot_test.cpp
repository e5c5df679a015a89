// PyTorch's memory snapshots read into the attribution model and written from it: the restricted
// pickle reader on Python's opcodes and on hostile files (every one a one-line error, nothing
// imported or called), the snapshot's two forms converted to the byte, and gpumem's document
// through the writer and back.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "attribution/pickle.hpp"
#include "gpumem/internal/torch_snapshot.hpp"

namespace gpumem {
namespace {

namespace doc = gpumem::detail::attribution;
namespace pk = gpumem::detail::attribution::pickle;
using namespace std::string_literals;

std::string read_error(const std::string& bytes) {
  std::string error;
  const std::optional<doc::Document> document =
      doc::parse_torch_snapshot(bytes, "s.pickle", &error);
  EXPECT_FALSE(document.has_value());
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

doc::Document read_ok(const std::string& bytes) {
  std::string error;
  std::optional<doc::Document> document = doc::parse_torch_snapshot(bytes, "s.pickle", &error);
  EXPECT_TRUE(document.has_value()) << error;
  return document ? std::move(*document) : doc::Document{};
}

void frame(pk::Writer& out, const char* file, std::int64_t line, const char* name) {
  out.start_dict();
  out.text("filename");
  out.text(file);
  out.text("line");
  out.integer(line);
  out.text("name");
  out.text(name);
  out.end_dict();
}

// A block as torch/csrc/cuda/memory_snapshot.cpp writes one; `with_address` false and
// `history` true: as PyTorch 1.13 did (the frames in its history).
void block(pk::Writer& out, std::int64_t address, std::int64_t size, const char* state,
           const char* function, std::int64_t line, bool older = false) {
  out.start_dict();
  if (!older) {
    out.text("address");
    out.integer(address);
  }
  out.text("size");
  out.integer(size);
  out.text("requested_size");
  out.integer(size);
  out.text("state");
  out.text(state);
  out.text(older ? "history" : "frames");
  out.start_list();
  if (older) {
    out.start_dict();
    out.text("addr");
    out.integer(address);
    out.text("real_size");
    out.integer(size);
    out.text("frames");
    out.start_list();
  }
  if (function != nullptr) {
    frame(out, "/home/me/train.py", line, function);
    frame(out, "/home/me/train.py", 90, "main");
  }
  if (older) {
    out.end_list();
    out.end_dict();
  }
  out.end_list();
  out.end_dict();
}

void segment_head(pk::Writer& out, int device, std::int64_t address, std::int64_t total) {
  out.start_dict();
  out.text("device");
  out.integer(device);
  out.text("address");
  out.integer(address);
  out.text("total_size");
  out.integer(total);
  out.text("stream");
  out.integer(0);
  out.text("segment_type");
  out.text("large");
  out.text("blocks");
  out.start_list();
}

void segment_tail(pk::Writer& out) {
  out.end_list();
  out.end_dict();
}

constexpr std::int64_t kMiB = 1 << 20;
constexpr std::int64_t kBase = 0x7f0000000000;

// Two devices: on 0 a 20 MiB segment (12 MiB by load_weights, 4 MiB free, 4 MiB awaiting a
// stream's free), on 1 a 2 MiB segment with one 1 MiB block of forward's.
std::string current_form() {
  pk::Writer out;
  out.start_dict();
  out.text("segments");
  out.start_list();
  segment_head(out, 0, kBase, 20 * kMiB);
  block(out, kBase, 12 * kMiB, "active_allocated", "load_weights", 12);
  block(out, kBase + 12 * kMiB, 4 * kMiB, "inactive", nullptr, 0);
  block(out, kBase + 16 * kMiB, 4 * kMiB, "active_pending_free", "forward", 30);
  segment_tail(out);
  segment_head(out, 1, kBase + 64 * kMiB, 2 * kMiB);
  block(out, kBase + 64 * kMiB, kMiB, "active_allocated", "forward", 30);
  block(out, kBase + 65 * kMiB, kMiB, "inactive", nullptr, 0);
  segment_tail(out);
  out.end_list();
  out.text("device_traces");
  out.start_list();
  out.start_list();
  out.end_list();
  out.start_list();
  out.end_list();
  out.end_list();
  out.end_dict();
  return out.finish();
}

TEST(TorchSnapshot, TheCurrentFormGivesEachDeviceItsReservedLevelAndItsAllocatedBlocks) {
  const doc::Document document = read_ok(current_form());
  ASSERT_EQ(document.snapshots.size(), 2u);
  const doc::Snapshot& zero = document.snapshots[0];
  EXPECT_EQ(zero.device, 0);
  EXPECT_EQ(zero.what, "peak");
  EXPECT_EQ(zero.scope, "torch snapshot");
  EXPECT_EQ(zero.level_bytes, 20 * kMiB);
  EXPECT_EQ(zero.live_bytes, 12 * kMiB);
  EXPECT_EQ(zero.held_without_block(), 8 * kMiB);
  ASSERT_EQ(zero.blocks.size(), 1u);
  EXPECT_EQ(zero.blocks[0].address, "0x7f0000000000");
  EXPECT_EQ(zero.blocks[0].bytes, 12 * kMiB);
  EXPECT_EQ(zero.blocks[0].kind, "device");
  ASSERT_TRUE(zero.blocks[0].stack);
  const auto& stack = document.stacks[*zero.blocks[0].stack];
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(document.frames[stack[0]].function, "load_weights");
  EXPECT_EQ(document.frames[stack[0]].file, "/home/me/train.py");
  EXPECT_EQ(document.frames[stack[0]].line, 12);
  EXPECT_EQ(document.frames[stack[0]].language, "python");
  EXPECT_EQ(document.frames[stack[1]].function, "main");

  const doc::Snapshot& one = document.snapshots[1];
  EXPECT_EQ(one.device, 1);
  EXPECT_EQ(one.level_bytes, 2 * kMiB);
  EXPECT_EQ(one.live_bytes, kMiB);
  ASSERT_EQ(one.blocks.size(), 1u);
  EXPECT_EQ(one.blocks[0].address, "0x7f0004000000");
  EXPECT_EQ(document.frames[document.stacks[*one.blocks[0].stack][0]].function, "forward");
  ASSERT_EQ(document.devices.size(), 2u);
  EXPECT_EQ(document.devices[1].ordinal, 1);
}

TEST(TorchSnapshot, TheOlderFormPlacesBlocksFromTheSegmentsAddressAndNamesThemByTheirHistory) {
  pk::Writer out;
  out.start_list();
  segment_head(out, 0, kBase, 6 * kMiB);
  block(out, kBase, 2 * kMiB, "inactive", nullptr, 0, true);
  block(out, kBase + 2 * kMiB, 3 * kMiB, "active_allocated", "load_weights", 12, true);
  block(out, kBase + 5 * kMiB, kMiB, "active_allocated", nullptr, 0, true);
  segment_tail(out);
  out.end_list();
  const doc::Document document = read_ok(out.finish());
  ASSERT_EQ(document.snapshots.size(), 1u);
  const doc::Snapshot& snapshot = document.snapshots[0];
  EXPECT_EQ(snapshot.level_bytes, 6 * kMiB);
  EXPECT_EQ(snapshot.live_bytes, 4 * kMiB);
  ASSERT_EQ(snapshot.blocks.size(), 2u);
  EXPECT_EQ(snapshot.blocks[0].address, "0x7f0000200000");
  EXPECT_EQ(snapshot.blocks[0].bytes, 3 * kMiB);
  EXPECT_EQ(document.frames[document.stacks[*snapshot.blocks[0].stack][0]].function,
            "load_weights");
  EXPECT_EQ(snapshot.blocks[1].address, "0x7f0000500000");
  EXPECT_FALSE(snapshot.blocks[1].stack);  // no frames recorded
}

TEST(TorchSnapshot, AnythingButASnapshotIsNamedSo) {
  pk::Writer number;
  number.integer(7);
  EXPECT_EQ(read_error(number.finish()),
            "s.pickle: PyTorch snapshot: neither a dict with \"segments\" nor a list of segments: "
            "not a PyTorch memory snapshot");
  pk::Writer dict;
  dict.start_dict();
  dict.text("x");
  dict.integer(1);
  dict.end_dict();
  EXPECT_EQ(read_error(dict.finish()),
            "s.pickle: PyTorch snapshot: a dict without a list of \"segments\": not a PyTorch "
            "memory snapshot");
  pk::Writer bad_size;
  bad_size.start_list();
  segment_head(bad_size, 0, kBase, 2 * kMiB);
  block(bad_size, kBase, -5, "active_allocated", nullptr, 0);
  segment_tail(bad_size);
  bad_size.end_list();
  EXPECT_EQ(read_error(bad_size.finish()),
            "s.pickle: PyTorch snapshot: segments[0].blocks[0].size: negative");
}

// Python's own pickle.dumps({"segments": [], "device_traces": [[]], "n": -2**40, "f": 1.5,
// "t": (1, "é"), "b": b"x", "ok": True, "no": None}, protocol=5): FRAME, MEMOIZE,
// SHORT_BINUNICODE, LONG1, BINFLOAT, TUPLE2, SHORT_BINBYTES, NEWTRUE, NONE, SETITEMS.
const std::string kPythonProtocol5 =
    "\x80\x05\x95"
    "a\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08"
    "segments\x94\x5d"
    "\x94\x8c\x0d"
    "device_traces\x94\x5d\x94\x5d\x94"
    "a\x8c\x01"
    "n\x94\x8a\x06\x00"
    "\x00\x00\x00\x00\xff\x8c\x01"
    "f\x94"
    "G\x3f\xf8\x00\x00\x00\x00\x00\x00\x8c\x01"
    "t\x94"
    "K\x01\x8c\x02\xc3\xa9\x94\x86\x94\x8c\x01"
    "b\x94"
    "C\x01"
    "x\x94\x8c\x02"
    "ok\x94\x88\x8c\x02"
    "no\x94"
    "Nu\x2e"s;

TEST(TorchSnapshot, ThePickleReaderReadsWhatPythonWrites) {
  std::string error;
  const std::optional<pk::Pickle> pickle = pk::read(kPythonProtocol5, &error);
  ASSERT_TRUE(pickle) << error;
  const pk::Value& root = pickle->root;
  ASSERT_EQ(root.kind, pk::Kind::dict);
  EXPECT_EQ(pickle->find(root, "n")->integer, -(1ll << 40));
  EXPECT_EQ(pickle->find(root, "f")->real(), 1.5);
  const pk::Value* tuple = pickle->find(root, "t");
  ASSERT_EQ(tuple->kind, pk::Kind::tuple);
  EXPECT_EQ(pickle->children(*tuple)[0].integer, 1);
  EXPECT_EQ(pickle->text(pickle->children(*tuple)[1]), "\xc3\xa9");
  EXPECT_EQ(pickle->text(*pickle->find(root, "b")), "x");
  EXPECT_EQ(pickle->find(root, "ok")->integer, 1);
  EXPECT_EQ(pickle->find(root, "no")->kind, pk::Kind::none);
  EXPECT_EQ(pickle->children(*pickle->find(root, "device_traces")).size(), 1u);
  const doc::Document document = read_ok(kPythonProtocol5);
  EXPECT_TRUE(document.snapshots.empty());
}

TEST(TorchSnapshot, EveryOpcodeThatImportsOrCallsIsRefusedAtItsByte) {
  // pickle.dumps(os.system) and the classic "cos\nsystem\n(S'id'\ntR." exploit.
  EXPECT_EQ(read_error("\x80\x02"
                       "cposix\nsystem\nq\x00."s),
            "s.pickle: PyTorch snapshot: byte 2: GLOBAL (0x63) would import or call Python code: "
            "refused (a memory snapshot holds only dicts, lists, strings and numbers)");
  EXPECT_NE(read_error("\x80\x04\x8c\x02os\x8c\x06system\x93."s).find("byte 14: STACK_GLOBAL"),
            std::string::npos);
  EXPECT_NE(read_error("\x80\x02]](tR."s).find("byte 6: REDUCE (0x52)"), std::string::npos);
  EXPECT_NE(read_error("\x80\x02]}b."s).find("byte 4: BUILD"), std::string::npos);
  EXPECT_NE(read_error("\x80\x02]]\x81."s).find("byte 4: NEWOBJ"), std::string::npos);
  EXPECT_NE(read_error("\x80\x02K\x01Q."s).find("byte 4: BINPERSID"), std::string::npos);
  EXPECT_NE(read_error("\x80\x02\x82\x01."s).find("byte 2: EXT1"), std::string::npos);
  EXPECT_NE(read_error("(cos\nsystem\nS'id'\ntR."s).find("byte 1: GLOBAL"), std::string::npos);
}

TEST(TorchSnapshot, HostilePicklesAreOneLineErrors) {
  EXPECT_EQ(read_error(""), "s.pickle: PyTorch snapshot: byte 0: cut short: no STOP");
  EXPECT_EQ(read_error("\x80\x01N."s),
            "s.pickle: PyTorch snapshot: byte 0: pickle protocol 1 (2 to 5 read)");
  EXPECT_EQ(read_error("\x80\x02X\xff\xff\xff\x7f"s),
            "s.pickle: PyTorch snapshot: byte 2: a string of 2147483647 bytes, beyond the "
            "file's end");
  EXPECT_EQ(read_error("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff"s),
            "s.pickle: PyTorch snapshot: byte 2: a string of 18446744073709551615 bytes, beyond "
            "the file's end");
  EXPECT_EQ(read_error("\x80\x02\x8b\x00\x00\x00\x40"s),
            "s.pickle: PyTorch snapshot: byte 2: an integer of 1073741824 bytes (at most 8)");
  EXPECT_EQ(read_error("\x80\x02h\x05."s),
            "s.pickle: PyTorch snapshot: byte 2: memo 5 was never set");
  EXPECT_EQ(read_error("\x80\x02]r\xff\xff\xff\x7f."s),
            "s.pickle: PyTorch snapshot: byte 3: memo index 2147483647 out of sequence");
  EXPECT_EQ(read_error("\x80\x02" + std::string(100000, '(') + "."),
            "s.pickle: PyTorch snapshot: byte 258: nested deeper than 256");
  EXPECT_EQ(read_error("\x80\x02}s."s),
            "s.pickle: PyTorch snapshot: byte 3: a value is missing from the stack");
  EXPECT_EQ(read_error("\x80\x02}]K\x01s."s),
            "s.pickle: PyTorch snapshot: byte 6: a dict key that cannot be hashed");
  EXPECT_EQ(read_error("\x80\x02NN."s),
            "s.pickle: PyTorch snapshot: byte 4: STOP with a stack not one value");
  EXPECT_EQ(read_error("\x80\x02N.N"s),
            "s.pickle: PyTorch snapshot: byte 4: bytes after the pickle's STOP");
  EXPECT_EQ(read_error("\x80\x02NK\x01"
                       "a."s),
            "s.pickle: PyTorch snapshot: byte 5: appends to something not a list");
  // A list inside itself (EMPTY_LIST, DUP, APPEND) as the segments: a cycle, read and refused.
  EXPECT_EQ(read_error("\x80\x02]2a."s), "s.pickle: PyTorch snapshot: segments[0]: not a dict");
  // Every prefix of a good snapshot is cut short.
  const std::string good = current_form();
  for (std::size_t length = 0; length < good.size(); ++length)
    EXPECT_NE(read_error(good.substr(0, length)).find("PyTorch snapshot: byte"), std::string::npos)
        << length;
}

// A snapshot whose segments repeat one shared segment (BINGET) many times: refused at the
// second, so that references cannot multiply what is read.
TEST(TorchSnapshot, SharedReferencesCannotMultiplyWhatIsRead) {
  std::string bytes = "\x80\x02]("s;  // the segments list, then one segment memoized as 0
  pk::Writer one;
  one.start_list();
  segment_head(one, 0, kBase, 1000 * kMiB);
  for (int i = 0; i < 1000; ++i) block(one, kBase + i * kMiB, kMiB, "active_allocated", "f", i);
  segment_tail(one);
  one.end_list();
  std::string body = one.finish();
  // The list's single segment: between "](" and "e." of the written list.
  const std::string segment_bytes = body.substr(4, body.size() - 6);
  bytes += segment_bytes + "q\x00"s;
  for (int i = 0; i < 20000; ++i) bytes += "h\x00"s;
  bytes += "e.";
  EXPECT_EQ(read_error(bytes),
            "s.pickle: PyTorch snapshot: segments[1]: listed twice (a shared reference)");
}

// Random damage to a good snapshot: each read ends in a document or a one-line error (under
// ASan/UBSan: no bad access either). A fixed seed: the same inputs every run.
TEST(TorchSnapshot, DamagedSnapshotsNeverCrashTheReader) {
  const std::string good = current_form();
  std::mt19937 random(31);
  int refused = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int edit = 0; edit < edits; ++edit) {
      const std::size_t at = random() % bytes.size();
      switch (random() % 4) {
        case 0:
          bytes[at] = static_cast<char>(random());
          break;
        case 1:
          bytes.erase(at, 1 + random() % 8);
          break;
        case 2:
          bytes.insert(at, 1, static_cast<char>(random()));
          break;
        default:
          bytes.resize(at);
          break;
      }
      if (bytes.empty()) bytes = "\x80";
    }
    std::string error;
    const auto document = doc::parse_torch_snapshot(bytes, "s.pickle", &error);
    if (!document) {
      ++refused;
      EXPECT_EQ(error.find('\n'), std::string::npos);
      EXPECT_EQ(error.rfind("s.pickle: ", 0), 0u);
    }
  }
  EXPECT_GT(refused, 10000);
}

doc::Document gpumem_document() {
  doc::Document document;
  document.devices = {{0, "GPU-1", "NVIDIA H200", 150 * 1024 * kMiB}};
  document.frames = {
      {"load_weights", "/home/me/train.py", 12, std::nullopt, std::nullopt, "python"},
      {std::nullopt, std::nullopt, std::nullopt, "/usr/lib/libnccl.so.2", "0x4a2b", "native"},
      {"main", "/home/me/train.py", 90, std::nullopt, std::nullopt, "python"}};
  document.stacks = {{0, 2}, {1}};
  doc::Snapshot peak;
  peak.what = "peak";
  peak.device = 0;
  peak.time_s = 2.0;
  peak.level_bytes = 700 * kMiB;
  peak.live_bytes = 600 * kMiB;
  peak.context_bytes = 64 * kMiB;
  peak.blocks = {{"0x7f0000000000", 512 * kMiB, "device", 1.5, 0, 4242},
                 {"0x7f0020000000", 88 * kMiB, "device", 0.25, 1, 4242}};
  document.snapshots = {peak};
  return document;
}

TEST(TorchSnapshot, GpumemsDocumentWrittenAsEitherFormReadsBackWithEverythingTheLevelHeld) {
  for (const doc::TorchForm form : {doc::TorchForm::dict, doc::TorchForm::list}) {
    const doc::Document back = read_ok(doc::torch_snapshot(gpumem_document(), form));
    ASSERT_EQ(back.snapshots.size(), 1u);
    const doc::Snapshot& snapshot = back.snapshots[0];
    // Every byte of the level is a block now: the context and the rest are segments of their own.
    EXPECT_EQ(snapshot.level_bytes, 700 * kMiB);
    EXPECT_EQ(snapshot.live_bytes, 700 * kMiB);
    ASSERT_EQ(snapshot.blocks.size(), 4u);
    EXPECT_EQ(snapshot.blocks[0].address, "0x7f0000000000");
    EXPECT_EQ(snapshot.blocks[0].bytes, 512 * kMiB);
    const auto& first = back.stacks[*snapshot.blocks[0].stack];
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(back.frames[first[0]].function, "load_weights");
    EXPECT_EQ(back.frames[first[0]].line, 12);
    EXPECT_EQ(back.frames[first[1]].function, "main");
    const auto& nccl = back.frames[back.stacks[*snapshot.blocks[1].stack][0]];
    EXPECT_EQ(nccl.function, "0x4a2b");
    EXPECT_EQ(nccl.file, "/usr/lib/libnccl.so.2");
    EXPECT_EQ(nccl.language, "native");
    // After the highest block (0x7f0025800000), on 2 MiB boundaries.
    EXPECT_EQ(snapshot.blocks[2].address, "0x7f0025800000");
    EXPECT_EQ(snapshot.blocks[2].bytes, 64 * kMiB);
    EXPECT_EQ(back.frames[back.stacks[*snapshot.blocks[2].stack][0]].function,
              "<gpumem: the process's context, modules and the driver's rounding>");
    EXPECT_EQ(snapshot.blocks[3].address, "0x7f0029800000");
    EXPECT_EQ(snapshot.blocks[3].bytes, 36 * kMiB);
    EXPECT_EQ(back.frames[back.stacks[*snapshot.blocks[3].stack][0]].function,
              "<gpumem: held without a block>");
  }
}

TEST(TorchSnapshot, TheWriterKeepsPythonsStringsValidUtf8) {
  doc::Document document = gpumem_document();
  document.frames[0].function = "load\xff\xc3(";
  const doc::Document back = read_ok(doc::torch_snapshot(document, doc::TorchForm::dict));
  EXPECT_EQ(back.frames[back.stacks[*back.snapshots[0].blocks[0].stack][0]].function,
            "load\xef\xbf\xbd\xef\xbf\xbd(");
}

TEST(TorchSnapshot, TheFormatIsToldByTheFirstByte) {
  EXPECT_EQ(doc::source_format("\x80\x04"), doc::SourceFormat::torch_pickle);
  EXPECT_EQ(doc::source_format("{\"schema\""), doc::SourceFormat::gpumem_json);
  EXPECT_EQ(doc::source_format(""), doc::SourceFormat::gpumem_json);
}

}  // namespace
}  // namespace gpumem
