// Attribution documents (gpumem.attribution/1) written by tests: named functions with known
// stacks and sizes, hostile names, many and deep stacks.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpumem::testing {

inline constexpr std::int64_t kMiB = 1 << 20;

class DocumentBuilder {
 public:
  DocumentBuilder();
  // A frame's index; `file` empty: none.
  std::size_t frame(const std::string& function, const std::string& file = "a.cpp", int line = 1);
  std::size_t unsymbolized_frame(const std::string& module, const std::string& address);
  // A stack's index, innermost first.
  std::size_t stack(const std::vector<std::size_t>& frames);
  // A snapshot (peak or oom) with no block yet; `level` its level_bytes. Returns its index.
  std::size_t snapshot(const std::string& what, std::int64_t level, int device = 0,
                       double time_s = 1.0);
  // A block in the snapshot; `stack` -1: none captured. live_bytes follows.
  void block(std::size_t snapshot, std::int64_t bytes, long long stack,
             const std::string& kind = "device", int pid = 4242);
  void failure(std::size_t snapshot, std::int64_t bytes, long long stack, std::int64_t free_bytes,
               std::int64_t total_bytes);
  void other_process(std::size_t snapshot, int pid, const std::string& name, std::int64_t used);
  void steps(int device, const std::vector<std::pair<double, std::int64_t>>& steps);

  nlohmann::json& json() { return json_; }
  std::string text() const { return json_.dump(1); }
  // Written to `folder`/`name`; returns the path.
  std::string write(const std::string& folder, const std::string& name = "attribution.json") const;

 private:
  nlohmann::json json_;
  std::uint64_t next_address_ = 0x7f3a00000000ull;
};

// The document most tests use: on GPU 0 (an H200), a peak of 200 MiB with
//   train_step <- main   100 MiB in 2 blocks (60 + 40)
//   load_weights <- main  50 MiB in 1 block
//   loader <- load_weights <- main  20 MiB in 1 pool block
//   (no stack)            10 MiB in 1 block
// and 20 MiB held without a block; then an out-of-memory failure of 16 GiB requested by
// train_step, with 150 MiB live (train_step 100, load_weights 50) and another process holding
// 130 GiB.
DocumentBuilder known_document();

// A peak of 10,000 stacks alloc_I <- main, each holding (I + 1) * `unit` bytes in one block, and a
// 200-frame stack level_0 <- ... <- level_199 holding `deep_bytes`; level_bytes is their sum.
DocumentBuilder many_and_deep_stacks(std::int64_t unit, std::int64_t deep_bytes);

}  // namespace gpumem::testing
