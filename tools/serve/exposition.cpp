#include "exposition.hpp"

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string_view>
#include <tuple>
#include <utility>

namespace gpumem::serve {
namespace {

using Label = std::pair<std::string_view, std::string_view>;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  // Every sample of a family must follow its HELP and TYPE lines without interruption.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void sample(std::initializer_list<Label> labels, std::string_view value) {
    out_ += name_;
    if (labels.size() > 0) {
      out_ += '{';
      bool first = true;
      for (const auto& [key, label_value] : labels) {
        if (!first) out_ += ',';
        first = false;
        out_ += key;
        out_ += "=\"";
        out_ += escape_label_value(label_value);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }

 private:
  std::string& out_;
  std::string_view name_;
};

std::string number(std::int64_t value) {
  return std::to_string(value);
}
std::string number(std::uint64_t value) {
  return std::to_string(value);
}
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// Milliseconds as exact decimal seconds: a double would round 1700000000.123 to ...1229999.
std::string seconds_from_ms(std::int64_t ms) {
  if (ms < 0) ms = 0;
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000));
  return text;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        escaped += "\\\\";
        break;
      case '"':
        escaped += "\\\"";
        break;
      case '\n':
        escaped += "\\n";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string render_exposition(const Snapshot& s) {
  std::string out;
  out.reserve(512 + s.devices.size() * 1024 + s.processes.size() * 200 + s.traces.size() * 600);
  Writer w(out);
  const std::string_view host = s.host;

  w.family("gpumem_device_up", "gauge", "1 when the device answers, 0 when it is lost.");
  for (const DeviceSample& d : s.devices) {
    std::string gpu = std::to_string(d.gpu);
    w.sample({{"gpu", gpu}, {"uuid", d.uuid}, {"name", d.name}, {"host", host}}, d.up ? "1" : "0");
  }

  // Memory gauges of lost devices are left out: a stale number would look like a reading.
  using Field = std::uint64_t GPUMemoryBytes::*;
  const std::tuple<std::string_view, Field, std::string_view> gauges[] = {
      {"gpumem_memory_total_bytes", &GPUMemoryBytes::total, "Device memory in total."},
      {"gpumem_memory_used_bytes", &GPUMemoryBytes::used,
       "Device memory in use by processes now (excludes the driver's reservation)."},
      {"gpumem_memory_free_bytes", &GPUMemoryBytes::free, "Device memory free now."},
      {"gpumem_memory_reserved_bytes", &GPUMemoryBytes::reserved,
       "Device memory the driver reserves for itself."},
  };
  for (const auto& [name, field, help] : gauges) {
    w.family(name, "gauge", help);
    for (const DeviceSample& d : s.devices) {
      if (!d.up) continue;
      std::string gpu = std::to_string(d.gpu);
      w.sample({{"gpu", gpu}, {"uuid", d.uuid}, {"name", d.name}, {"host", host}},
               number(d.memory.*field));
    }
  }

  w.family("gpumem_memory_used_peak_window_bytes", "gauge",
           "Highest used device memory over the exporter's window, sampled at its interval; "
           "scrapes reset nothing.");
  for (const DeviceSample& d : s.devices) {
    if (!d.up || !d.window_peak) continue;
    std::string gpu = std::to_string(d.gpu);
    w.sample({{"gpu", gpu}, {"uuid", d.uuid}, {"name", d.name}, {"host", host}},
             number(*d.window_peak));
  }

  w.family("gpumem_process_memory_used_bytes", "gauge", "Device memory a process uses now.");
  for (const ProcessSample& p : s.processes) {
    std::string gpu = std::to_string(p.gpu);
    std::string pid = std::to_string(p.pid);
    w.sample({{"gpu", gpu}, {"uuid", p.uuid}, {"pid", pid}, {"process", p.process}, {"host", host}},
             number(p.used_bytes));
  }

  using TraceField = std::int64_t TraceBytes::*;
  const std::tuple<std::string_view, TraceField, std::string_view> traces[] = {
      {"gpumem_trace_delta_used_bytes", &TraceBytes::delta_used,
       "A published trace: used memory at its end less at its start."},
      {"gpumem_trace_delta_peaked_bytes", &TraceBytes::delta_peaked,
       "A published trace: how far the peak rose above the start, beyond the delta used."},
      {"gpumem_trace_peak_bytes", &TraceBytes::peak,
       "A published trace: the highest used device memory during it."},
  };
  for (const auto& [name, field, help] : traces) {
    w.family(name, "gauge", help);
    for (const PublishedTrace& t : s.traces) {
      std::string pid = std::to_string(t.pid);
      std::string device = std::to_string(t.bytes.device);
      w.sample({{"scope", t.scope},
                {"pid", pid},
                {"device", device},
                {"uuid", t.uuid},
                {"source", to_string(t.bytes.source)},
                {"host", host}},
               number(t.bytes.*field));
    }
  }
  w.family("gpumem_trace_published_timestamp_seconds", "gauge",
           "A published trace: when it was published, in seconds since the epoch.");
  for (const PublishedTrace& t : s.traces) {
    std::string pid = std::to_string(t.pid);
    w.sample({{"scope", t.scope}, {"pid", pid}, {"host", host}}, seconds_from_ms(t.unix_ms));
  }

  const ExporterSample& e = s.exporter;
  w.family("gpumem_exporter_sampling_interval_seconds", "gauge", "The sampler's interval.");
  w.sample({}, number(e.interval_seconds));
  w.family("gpumem_exporter_window_seconds", "gauge", "The window of the peak gauges.");
  w.sample({}, number(e.window_seconds));
  w.family("gpumem_exporter_scrapes_total", "counter", "Scrapes served.");
  w.sample({}, number(e.scrapes));
  w.family("gpumem_exporter_rejected_connections_total", "counter",
           "Connections refused because too many were open.");
  w.sample({}, number(e.rejected_connections));
  w.family("gpumem_exporter_bad_requests_total", "counter",
           "Requests answered with an error or dropped on a timeout.");
  w.sample({}, number(e.bad_requests));
  w.family("gpumem_exporter_spool_malformed_files", "gauge",
           "Spool files ignored because they are not whole records.");
  w.sample({}, number(e.spool_malformed));
  w.family("gpumem_exporter_spool_skipped_files", "gauge",
           "Spool files not read because of the per-scrape file limit.");
  w.sample({}, number(e.spool_skipped));
  return out;
}

}  // namespace gpumem::serve
