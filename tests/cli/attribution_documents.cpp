#include "cli/attribution_documents.hpp"

#include <cstdio>
#include <fstream>

namespace gpumem::testing {

DocumentBuilder::DocumentBuilder() {
  json_ = {{"schema", "gpumem.attribution/1"},
           {"command", "python train.py"},
           {"host", "node-1"},
           {"devices",
            {{{"ordinal", 0},
              {"uuid", "GPU-bbbbbbbb-2222-4000-8000-000000000001"},
              {"name", "NVIDIA H200"},
              {"total_bytes", 150754820096ll}}}},
           {"frames", nlohmann::json::array()},
           {"stacks", nlohmann::json::array()},
           {"snapshots", nlohmann::json::array()},
           {"timeline", nlohmann::json::array()}};
}

std::size_t DocumentBuilder::frame(const std::string& function, const std::string& file, int line) {
  json_["frames"].push_back({{"function", function},
                             {"file", file.empty() ? nlohmann::json() : nlohmann::json(file)},
                             {"line", file.empty() ? nlohmann::json() : nlohmann::json(line)},
                             {"module", "/opt/app/train"},
                             {"address", "0x401a2b"},
                             {"language", "native"}});
  return json_["frames"].size() - 1;
}

std::size_t DocumentBuilder::unsymbolized_frame(const std::string& module,
                                                const std::string& address) {
  json_["frames"].push_back({{"function", nullptr},
                             {"file", nullptr},
                             {"line", nullptr},
                             {"module", module},
                             {"address", address},
                             {"language", "native"}});
  return json_["frames"].size() - 1;
}

std::size_t DocumentBuilder::stack(const std::vector<std::size_t>& frames) {
  json_["stacks"].push_back(frames);
  return json_["stacks"].size() - 1;
}

std::size_t DocumentBuilder::snapshot(const std::string& what, std::int64_t level, int device,
                                      double time_s) {
  json_["snapshots"].push_back(
      {{"what", what},
       {"scope", what == "peak" ? nlohmann::json("run") : nlohmann::json()},
       {"pid", 4242},
       {"device", device},
       {"time_s", time_s},
       {"level_bytes", level},
       {"live_bytes", 0},
       {"blocks", nlohmann::json::array()},
       {"failure", nullptr},
       {"other_processes", nlohmann::json::array()}});
  return json_["snapshots"].size() - 1;
}

void DocumentBuilder::block(std::size_t snapshot, std::int64_t bytes, long long stack,
                            const std::string& kind, int pid) {
  nlohmann::json& entry = json_["snapshots"][snapshot];
  char address[32];
  std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(next_address_));
  next_address_ += 0x10000000ull;
  entry["blocks"].push_back({{"address", address},
                             {"bytes", bytes},
                             {"kind", kind},
                             {"age_s", 0.25},
                             {"stack", stack < 0 ? nlohmann::json() : nlohmann::json(stack)},
                             {"pid", pid}});
  entry["live_bytes"] = entry["live_bytes"].get<std::int64_t>() + bytes;
}

void DocumentBuilder::failure(std::size_t snapshot, std::int64_t bytes, long long stack,
                              std::int64_t free_bytes, std::int64_t total_bytes) {
  json_["snapshots"][snapshot]["failure"] = {
      {"bytes", bytes},
      {"kind", "device"},
      {"stack", stack < 0 ? nlohmann::json() : nlohmann::json(stack)},
      {"error", "CUDA_ERROR_OUT_OF_MEMORY"},
      {"free_bytes", free_bytes},
      {"total_bytes", total_bytes}};
}

void DocumentBuilder::other_process(std::size_t snapshot, int pid, const std::string& name,
                                    std::int64_t used) {
  json_["snapshots"][snapshot]["other_processes"].push_back(
      {{"pid", pid}, {"name", name}, {"used_bytes", used}});
}

void DocumentBuilder::steps(int device, const std::vector<std::pair<double, std::int64_t>>& steps) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [time, bytes] : steps) list.push_back({time, bytes});
  json_["timeline"].push_back({{"device", device}, {"steps", list}});
}

std::string DocumentBuilder::write(const std::string& folder, const std::string& name) const {
  const std::string path = folder + "/" + name;
  std::ofstream(path, std::ios::binary) << text();
  return path;
}

DocumentBuilder known_document() {
  DocumentBuilder doc;
  const std::size_t main = doc.frame("main", "train.cpp", 7);
  const std::size_t train_step = doc.frame("train_step", "train.cpp", 42);
  const std::size_t load_weights = doc.frame("load_weights", "weights.cpp", 99);
  const std::size_t loader = doc.frame("loader", "weights.cpp", 12);
  const std::size_t training = doc.stack({train_step, main});
  const std::size_t weights = doc.stack({load_weights, main});
  const std::size_t loading = doc.stack({loader, load_weights, main});
  const std::size_t peak = doc.snapshot("peak", 200 * kMiB, 0, 1.25);
  doc.block(peak, 60 * kMiB, static_cast<long long>(training));
  doc.block(peak, 50 * kMiB, static_cast<long long>(weights));
  doc.block(peak, 40 * kMiB, static_cast<long long>(training));
  doc.block(peak, 20 * kMiB, static_cast<long long>(loading), "pool");
  doc.block(peak, 10 * kMiB, -1);
  const std::size_t oom = doc.snapshot("oom", 150 * kMiB, 0, 1.5);
  doc.block(oom, 100 * kMiB, static_cast<long long>(training));
  doc.block(oom, 50 * kMiB, static_cast<long long>(weights));
  doc.failure(oom, 16ll << 30, static_cast<long long>(training), 1ll << 30, 150754820096ll);
  doc.other_process(oom, 777, "other-job", 130ll << 30);
  doc.steps(0, {{0.0, 0},
                {0.5, 100 * kMiB},
                {1.0, 150 * kMiB},
                {1.25, 200 * kMiB},
                {1.3, 150 * kMiB},
                {1.6, 0}});
  return doc;
}

DocumentBuilder many_and_deep_stacks(std::int64_t unit, std::int64_t deep_bytes) {
  DocumentBuilder doc;
  const std::size_t main = doc.frame("main", "m.cpp", 1);
  const std::size_t peak = doc.snapshot("peak", 0);
  std::int64_t level = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::size_t frame = doc.frame("alloc_" + std::to_string(i), "many.cpp", i);
    doc.block(peak, (i + 1) * unit, static_cast<long long>(doc.stack({frame, main})));
    level += (i + 1) * unit;
  }
  std::vector<std::size_t> deep;
  for (int depth = 0; depth < 200; ++depth)
    deep.push_back(doc.frame("level_" + std::to_string(depth), "deep.cpp", depth));
  doc.block(peak, deep_bytes, static_cast<long long>(doc.stack(deep)));
  level += deep_bytes;
  doc.json()["snapshots"][peak]["level_bytes"] = level;
  return doc;
}

}  // namespace gpumem::testing
