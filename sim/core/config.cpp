#include "config.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "pci.hpp"
#include "shared_state.hpp"
#include "uuid.hpp"

namespace gpumem::sim {
namespace {

using nlohmann::json;

std::string default_uuid(std::size_t index) {
  char text[64];
  std::snprintf(text, sizeof text, "GPU-00000000-0000-4000-8000-%012zx", index);
  return text;
}

std::string default_bus_id(std::size_t index) {
  char text[32];
  std::snprintf(text, sizeof text, "00000000:%02zX:00.0", 0x10 + index * 16);
  return text;
}

std::uint64_t read_mib(const json& device, const char* key, std::uint64_t fallback) {
  if (!device.contains(key)) return fallback;
  const json& value = device.at(key);
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<long long>() >= 0)) {
    throw std::runtime_error(std::string("\"") + key + "\" must be a non-negative integer");
  }
  return value.get<std::uint64_t>();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read config file " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool looks_like_json(const std::string& text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

}  // namespace

Config default_config() {
  Config config;
  config.devices = {
      {"NVIDIA H200", default_uuid(0), default_bus_id(0), 143771, 542, 500},
      {"NVIDIA A100-SXM4-80GB", default_uuid(1), default_bus_id(1), 81920, 474, 500},
  };
  config.cuda_order = {0, 1};
  return config;
}

Config parse_config(const std::string& text) {
  const std::string source = looks_like_json(text) ? text : read_file(text);
  json root;
  try {
    root = json::parse(source);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("config is not valid JSON: ") + e.what());
  }
  if (!root.is_object()) throw std::runtime_error("config must be a JSON object");
  Config config;
  try {
    if (root.contains("driver_version"))
      config.driver_version = root.at("driver_version").get<std::string>();
    if (root.contains("cuda_driver_version"))
      config.cuda_driver_version = root.at("cuda_driver_version").get<int>();
    if (root.contains("process_record_bytes")) {
      config.process_record_bytes = root.at("process_record_bytes").get<unsigned>();
    }
    if (root.contains("page_bytes")) config.page_bytes = root.at("page_bytes").get<std::uint64_t>();
    if (root.contains("nvml_pid_offset"))
      config.nvml_pid_offset = root.at("nvml_pid_offset").get<std::uint32_t>();
    if (!root.contains("devices") || !root.at("devices").is_array()) {
      throw std::runtime_error("config needs a \"devices\" array");
    }
    const json& devices = root.at("devices");
    if (devices.size() > kMaxDevices)
      throw std::runtime_error("at most " + std::to_string(kMaxDevices) + " devices are simulated");
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const json& d = devices[i];
      if (!d.is_object()) throw std::runtime_error("each device must be a JSON object");
      DeviceConfig device;
      device.name = d.contains("name") ? d.at("name").get<std::string>() : "NVIDIA Simulated GPU";
      device.uuid = d.contains("uuid") ? d.at("uuid").get<std::string>() : default_uuid(i);
      device.pci_bus_id =
          d.contains("pci_bus_id") ? d.at("pci_bus_id").get<std::string>() : default_bus_id(i);
      device.total_mib = read_mib(d, "total_mib", 81920);
      device.reserved_mib = read_mib(d, "reserved_mib", 0);
      device.context_mib = read_mib(d, "context_mib", 0);
      if (d.contains("parent")) device.parent = d.at("parent").get<int>();
      config.devices.push_back(std::move(device));
    }
    if (root.contains("cuda_order"))
      config.cuda_order = root.at("cuda_order").get<std::vector<int>>();
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("bad config: ") + e.what());
  }

  if (config.process_record_bytes != 24 && config.process_record_bytes != 32) {
    throw std::runtime_error("\"process_record_bytes\" must be 24 or 32");
  }
  if ((config.page_bytes & (config.page_bytes - 1)) != 0 || config.page_bytes > (1ull << 30)) {
    throw std::runtime_error("\"page_bytes\" must be 0 or a power of two up to 1 GiB");
  }
  std::set<std::string> uuids;
  for (const DeviceConfig& device : config.devices) {
    if (device.name.size() >= 96 || device.uuid.size() >= 80)
      throw std::runtime_error("device name or uuid too long");
    if (!parse_uuid_bytes(device.uuid))
      throw std::runtime_error("bad device uuid \"" + device.uuid + "\"");
    if (!uuids.insert(device.uuid).second)
      throw std::runtime_error("duplicate device uuid " + device.uuid);
    if (!parse_pci_bus_id(device.pci_bus_id))
      throw std::runtime_error("bad pci_bus_id \"" + device.pci_bus_id + "\"");
    if (device.reserved_mib > device.total_mib)
      throw std::runtime_error("reserved_mib exceeds total_mib");
    if (device.parent >= 0) {
      if (device.parent >= static_cast<int>(config.devices.size()) ||
          config.devices[static_cast<std::size_t>(device.parent)].parent >= 0 ||
          !device.uuid.starts_with("MIG-")) {
        throw std::runtime_error(
            "a \"parent\" names a whole GPU, and its MIG instance has a "
            "MIG- UUID");
      }
    } else if (device.parent != -1) {
      throw std::runtime_error("bad \"parent\"");
    }
  }
  if (config.cuda_order.empty()) {
    for (std::size_t i = 0; i < config.devices.size(); ++i)
      config.cuda_order.push_back(static_cast<int>(i));
  }
  std::set<int> seen(config.cuda_order.begin(), config.cuda_order.end());
  if (config.cuda_order.size() != config.devices.size() || seen.size() != config.devices.size() ||
      *seen.begin() < 0 || *seen.rbegin() >= static_cast<int>(config.devices.size())) {
    throw std::runtime_error("\"cuda_order\" must list every NVML index exactly once");
  }
  return config;
}

std::optional<Config> config_from_environment() {
  const char* text = std::getenv("GPUMEM_SIM_CONFIG");
  if (text == nullptr || *text == '\0') return std::nullopt;
  return parse_config(text);
}

std::string Config::to_json() const {
  json root;
  root["driver_version"] = driver_version;
  root["cuda_driver_version"] = cuda_driver_version;
  root["process_record_bytes"] = process_record_bytes;
  root["page_bytes"] = page_bytes;
  root["nvml_pid_offset"] = nvml_pid_offset;
  root["cuda_order"] = cuda_order;
  root["devices"] = json::array();
  for (const DeviceConfig& d : devices) {
    root["devices"].push_back({{"name", d.name},
                               {"uuid", d.uuid},
                               {"pci_bus_id", d.pci_bus_id},
                               {"total_mib", d.total_mib},
                               {"reserved_mib", d.reserved_mib},
                               {"context_mib", d.context_mib},
                               {"parent", d.parent}});
  }
  return root.dump();
}

std::uint64_t Config::hash() const {
  // FNV-1a: stable across processes and builds, unlike std::hash.
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : to_json()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

}  // namespace gpumem::sim
