#include "exposition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <tuple>
#include <utility>

#include "metrics.hpp"
#include "utf8.hpp"

namespace gpumem::serve {
namespace {

using Label = std::pair<std::string_view, std::string_view>;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  // Every sample of a family must follow its HELP and TYPE lines without interruption.
  void family(const metrics::Family& family) {
    name_ = family.name;
    out_ += "# HELP ";
    out_ += family.name;
    out_ += ' ';
    out_ += family.help;
    out_ += "\n# TYPE ";
    out_ += family.name;
    out_ += ' ';
    out_ += family.type;
    out_ += '\n';
  }

  // Labels with an empty value are left out (Prometheus treats both alike).
  template <class Labels>
  void sample(const Labels& labels, std::string_view value) {
    out_ += name_;
    bool first = true;
    for (const auto& [key, label_value] : labels) {
      if (label_value.empty()) continue;
      out_ += first ? '{' : ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      out_ += escape_label_value(label_value);
      out_ += '"';
    }
    if (!first) out_ += '}';
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void sample(std::initializer_list<Label> labels, std::string_view value) {
    sample<std::initializer_list<Label>>(labels, value);
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
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
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
  const std::string text = valid_utf8(value);
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
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

std::string render_exposition(const Snapshot& s, const ServingSample& serving) {
  std::string out;
  out.reserve(2048 + s.devices.size() * 1024 + s.processes.size() * 300 + s.traces.size() * 600);
  Writer w(out);
  const std::string_view host = s.host;

  w.family(metrics::device_up);
  for (const DeviceSample& d : s.devices) {
    std::string gpu = std::to_string(d.gpu);
    w.sample({{"gpu", gpu}, {"uuid", d.uuid}, {"name", d.name}, {"host", host}}, d.up ? "1" : "0");
  }

  // Memory gauges of lost devices are left out: a stale number would look like a reading.
  using Field = std::uint64_t GPUMemoryBytes::*;
  const std::pair<const metrics::Family&, Field> gauges[] = {
      {metrics::memory_total, &GPUMemoryBytes::total},
      {metrics::memory_used, &GPUMemoryBytes::used},
      {metrics::memory_free, &GPUMemoryBytes::free},
      {metrics::memory_reserved, &GPUMemoryBytes::reserved},
  };
  for (const auto& [family, field] : gauges) {
    w.family(family);
    for (const DeviceSample& d : s.devices) {
      if (!d.up) continue;
      std::string gpu = std::to_string(d.gpu);
      w.sample({{"gpu", gpu}, {"uuid", d.uuid}, {"name", d.name}, {"host", host}},
               number(d.memory.*field));
    }
  }

  w.family(metrics::memory_used_peak_window);
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    const DeviceSample& d = s.devices[i];
    const std::optional<std::int64_t>& peak =
        i < serving.window_peaks.size() ? serving.window_peaks[i] : d.window_peak;
    if (!d.up || !peak) continue;
    std::string gpu = std::to_string(d.gpu);
    w.sample({{"gpu", gpu}, {"uuid", d.uuid}, {"name", d.name}, {"host", host}}, number(*peak));
  }

  w.family(metrics::process_memory_used);
  for (const ProcessSample& p : s.processes) {
    std::string gpu = std::to_string(p.gpu);
    std::string pid = std::to_string(p.pid);
    const ContainerIdentity& c = p.container;
    const Label labels[] = {{"gpu", gpu},
                            {"uuid", p.uuid},
                            {"pid", pid},
                            {"process", p.process},
                            {"host", host},
                            {"namespace", c.namespace_name},
                            {"pod", c.pod},
                            {"container", c.container},
                            {"pod_uid", c.pod_uid},
                            {"container_id", c.container_id},
                            {"container_pid", c.container_pid}};
    w.sample(labels, number(p.used_bytes));
  }

  using TraceField = std::int64_t TraceBytes::*;
  const std::pair<const metrics::Family&, TraceField> traces[] = {
      {metrics::trace_delta_used, &TraceBytes::delta_used},
      {metrics::trace_delta_peaked, &TraceBytes::delta_peaked},
      {metrics::trace_peak, &TraceBytes::peak},
  };
  for (const auto& [family, field] : traces) {
    w.family(family);
    for (const detail::PublishedTrace& t : s.traces) {
      std::string pid = std::to_string(t.pid);
      std::string device = std::to_string(t.bytes.device);
      w.sample({{"scope", t.scope},
                {"pid", pid},
                {"pid_namespace", trace_pid_namespace_label(t, s.pid_namespace)},
                {"device", device},
                {"uuid", t.uuid},
                {"source", to_string(t.bytes.source)},
                {"host", host}},
               number(t.bytes.*field));
    }
  }
  w.family(metrics::trace_published_timestamp);
  for (const detail::PublishedTrace& t : s.traces) {
    std::string pid = std::to_string(t.pid);
    w.sample({{"scope", t.scope},
              {"pid", pid},
              {"pid_namespace", trace_pid_namespace_label(t, s.pid_namespace)},
              {"host", host}},
             seconds_from_ms(t.unix_ms));
  }

  const CollectionSample& e = s.exporter;
  const std::pair<const metrics::Family&, std::string> exporter[] = {
      {metrics::sampling_interval, number(e.interval_seconds)},
      {metrics::window, number(e.window_seconds)},
      {metrics::collection_age, number(serving.collection_age_seconds)},
      {metrics::collection_duration, number(serving.collection_duration_seconds)},
      {metrics::collections, number(serving.collections)},
      {metrics::scrapes, number(serving.scrapes)},
      {metrics::rejected_connections, number(serving.rejected_connections)},
      {metrics::evicted_connections, number(serving.evicted_connections)},
      {metrics::bad_requests, number(serving.bad_requests)},
      {metrics::unauthorized_requests, number(serving.unauthorized_requests)},
      {metrics::response_bytes, number(serving.response_bytes)},
      {metrics::spool_malformed, number(e.spool_malformed)},
      {metrics::spool_unreadable, number(e.spool_unreadable)},
      {metrics::spool_dropped, number(e.spool_dropped)},
      {metrics::spool_refused, number(e.spool_refused)},
  };
  for (const auto& [family, value] : exporter) {
    w.family(family);
    w.sample({}, value);
  }
  return out;
}

std::string_view trace_pid_namespace_label(const detail::PublishedTrace& trace,
                                           std::string_view own) {
  return trace.pid_namespace == own ? std::string_view() : std::string_view(trace.pid_namespace);
}

std::size_t keep_newest_per_series(std::vector<detail::PublishedTrace>& traces,
                                   std::string_view own_pid_namespace) {
  const auto series = [own_pid_namespace](const detail::PublishedTrace& t) {
    return std::tuple(std::string_view(t.scope), t.pid,
                      trace_pid_namespace_label(t, own_pid_namespace));
  };
  std::sort(traces.begin(), traces.end(),
            [&series](const detail::PublishedTrace& a, const detail::PublishedTrace& b) {
              const auto x = series(a);
              const auto y = series(b);
              if (x != y) return x < y;
              if (a.unix_ms != b.unix_ms) return a.unix_ms > b.unix_ms;  // the newest first
              return a.file < b.file;
            });
  const auto end =
      std::unique(traces.begin(), traces.end(),
                  [&series](const detail::PublishedTrace& a, const detail::PublishedTrace& b) {
                    return series(a) == series(b);
                  });
  const auto left_out = static_cast<std::size_t>(traces.end() - end);
  traces.erase(end, traces.end());
  return left_out;
}

}  // namespace gpumem::serve
