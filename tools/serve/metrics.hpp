// Every metric family the exporter serves: name, type and help text, in one place.
#pragma once

#include <string_view>

namespace gpumem::serve::metrics {

struct Family {
  std::string_view name;
  std::string_view type;  // "gauge" or "counter"
  std::string_view help;  // one line, no backslash
};

// Per device (labels gpu, uuid, name, host).
inline constexpr Family device_up{"gpumem_device_up", "gauge",
                                  "1 when the device answers, 0 when it is lost."};
inline constexpr Family memory_total{"gpumem_memory_total_bytes", "gauge",
                                     "Device memory in total."};
inline constexpr Family memory_used{
    "gpumem_memory_used_bytes", "gauge",
    "Device memory in use by processes now, as NVML reports it (excludes the driver's "
    "reservation; the device used, total - free, is this plus gpumem_memory_reserved_bytes)."};
inline constexpr Family memory_free{"gpumem_memory_free_bytes", "gauge", "Device memory free now."};
inline constexpr Family memory_reserved{"gpumem_memory_reserved_bytes", "gauge",
                                        "Device memory the driver reserves for itself."};
inline constexpr Family memory_used_peak_window{
    "gpumem_memory_used_peak_window_bytes", "gauge",
    "Highest gpumem_memory_used_bytes over the exporter's window, sampled at its interval; "
    "scrapes reset nothing."};

// Per process (labels gpu, uuid, pid, process, host, and the container's where known).
inline constexpr Family process_memory_used{"gpumem_process_memory_used_bytes", "gauge",
                                            "Device memory NVML charges to a process now "
                                            "(its context included)."};

// Per published trace (labels scope, pid, device, uuid, source, host, and pid_namespace when the
// publisher's is not the exporter's). What a trace measures
// follows its source: the process footprint (exact), the device used (sampled), what the
// allocator reported (reported); docs/peaks.md.
inline constexpr Family trace_delta_used{
    "gpumem_trace_delta_used_bytes", "gauge",
    "A published trace: its level at the end less at its start; the level is the publishing "
    "process's footprint (context included) where source=exact, the device used (total - free) "
    "where source=sampled."};
inline constexpr Family trace_delta_peaked{
    "gpumem_trace_delta_peaked_bytes", "gauge",
    "A published trace: how far the peak rose above the start, beyond the delta used."};
inline constexpr Family trace_peak{
    "gpumem_trace_peak_bytes", "gauge",
    "A published trace: its highest level (process footprint where source=exact, device used "
    "where source=sampled)."};
inline constexpr Family trace_published_timestamp{
    "gpumem_trace_published_timestamp_seconds", "gauge",
    "A published trace: when it was published, in seconds since the epoch."};

// The exporter itself.
inline constexpr Family sampling_interval{"gpumem_exporter_sampling_interval_seconds", "gauge",
                                          "The sampler's interval."};
inline constexpr Family window{"gpumem_exporter_window_seconds", "gauge",
                               "The window of the peak gauges."};
inline constexpr Family collection_age{
    "gpumem_exporter_collection_age_seconds", "gauge",
    "How old the device readings served are: time since the last complete collection ended "
    "(since the start while none has)."};
inline constexpr Family collection_duration{"gpumem_exporter_collection_duration_seconds", "gauge",
                                            "How long the last complete collection took."};
inline constexpr Family collections{"gpumem_exporter_collections_total", "counter",
                                    "Complete collections of device and spool readings."};
inline constexpr Family scrapes{"gpumem_exporter_scrapes_total", "counter", "Scrapes served."};
inline constexpr Family rejected_connections{
    "gpumem_exporter_rejected_connections_total", "counter",
    "Connections answered 503 because too many were open (in all, or from one client)."};
inline constexpr Family evicted_connections{
    "gpumem_exporter_evicted_connections_total", "counter",
    "Connections closed to make room for a new one (closing after their answer, idle, "
    "unfinished, or writing an answer nobody reads)."};
inline constexpr Family bad_requests{"gpumem_exporter_bad_requests_total", "counter",
                                     "Requests answered with an error or dropped on a timeout."};
inline constexpr Family unauthorized_requests{
    "gpumem_exporter_unauthorized_requests_total", "counter",
    "Requests refused for missing or wrong basic-authentication credentials."};
inline constexpr Family response_bytes{
    "gpumem_exporter_response_bytes_total", "counter",
    "Bytes of responses the clients have taken (headers and bodies, before TLS)."};
inline constexpr Family spool_malformed{
    "gpumem_exporter_spool_malformed_files", "gauge",
    "Spool files ignored at the last collection because they are not whole records."};
inline constexpr Family spool_unreadable{
    "gpumem_exporter_spool_unreadable_files", "gauge",
    "Spool files the exporter could not open at the last collection (permissions)."};
inline constexpr Family spool_dropped{
    "gpumem_exporter_spool_dropped_files", "gauge",
    "Spool files not read at the last collection because of the per-collection file limit."};
inline constexpr Family spool_refused{
    "gpumem_exporter_spool_refused_directories", "gauge",
    "Spool directories not read at the last collection because they cannot be trusted (owned by "
    "another user, writable by others, a symlink; the reason is logged)."};

}  // namespace gpumem::serve::metrics
