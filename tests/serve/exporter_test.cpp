// `gpumem serve` end to end: the real process on the simulated GPU, scraped over loopback.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "gpumem/internal/clock.hpp"
#include "gpumem/internal/spool.hpp"
#include "gpumem/publish.hpp"
#include "serve/exporter_process.hpp"
#include "serve/exposition_parser.hpp"
#include "serve/http_client.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using namespace std::chrono_literals;
using testing::body_of;
using testing::ExporterProcess;
using testing::MiB;
using testing::parse_exposition;
using testing::RawClient;
using testing::status_line;

constexpr const char* kH200 = "GPU-bbbbbbbb-2222-4000-8000-000000000001";  // CUDA 0, NVML 1
constexpr const char* kA100 = "GPU-aaaaaaaa-1111-4000-8000-000000000000";  // CUDA 1, NVML 0

class Exporter : public ::testing::Test {
 protected:
  void SetUp() override {
    spool_ = std::filesystem::temp_directory_path() /
             ("gpumem-serve-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(spool_);
  }
  void TearDown() override { std::filesystem::remove_all(spool_); }

  std::unique_ptr<ExporterProcess> start(std::vector<std::string> extra = {},
                                         const std::string& collect_interval = "10ms") {
    std::vector<std::string> arguments = {"--listen",  "127.0.0.1:0",        "--interval",
                                          "1ms",       "--window",           "5s",
                                          "--spool",   spool_.string(),      "--host-label",
                                          "test-node", "--collect-interval", collect_interval};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    auto exporter = std::make_unique<ExporterProcess>(arguments);
    port_ = exporter->port();
    EXPECT_GT(port_, 0) << exporter->err();
    return exporter;
  }
  // Scrapes until `ready` holds (collections run on their own, every 10 ms here).
  template <class Ready>
  testing::Exposition scrape_until(Ready ready) {
    testing::Exposition e;
    for (int i = 0; i < 200; ++i) {
      e = scrape();
      if (ready(e)) break;
      std::this_thread::sleep_for(20ms);
    }
    return e;
  }
  testing::Exposition scrape() {
    RawClient client(port_);
    client.send("GET /metrics HTTP/1.0\r\n\r\n");
    std::string response = client.read_to_close();
    EXPECT_EQ(status_line(response), "HTTP/1.1 200 OK");
    EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
    return parse_exposition(body_of(response));
  }

  testing::SimGpu gpu_;
  std::filesystem::path spool_;
  int port_ = -1;
};

TEST_F(Exporter, ServesTheSimulatedDevices) {
  auto exporter = start();
  auto e = scrape();
  EXPECT_EQ(
      e.value("gpumem_device_up",
              {{"gpu", "0"}, {"uuid", kH200}, {"name", "NVIDIA H200"}, {"host", "test-node"}}),
      1);
  EXPECT_EQ(e.value("gpumem_memory_total_bytes", {{"gpu", "0"}}), 143771.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_reserved_bytes", {{"gpu", "0"}}), 542.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_total_bytes", {{"gpu", "1"}, {"uuid", kA100}}), 40960.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_used_bytes", {{"gpu", "1"}}), 0);
  EXPECT_EQ(e.value("gpumem_memory_free_bytes", {{"gpu", "1"}}), (40960.0 - 256) * MiB);
  EXPECT_EQ(e.value("gpumem_memory_used_peak_window_bytes", {{"gpu", "1"}}), 0);
  EXPECT_EQ(exporter->stop(SIGTERM), 0) << exporter->err();
  EXPECT_NE(exporter->out().find("gpumem serve: stopped"), std::string::npos);
}

TEST_F(Exporter, ShowsProcessesAndTheirSpikes) {
  auto exporter = start();
  std::string workload = testing::sim_path("gpumem-sim") +
                         " workload 'device 0; alloc a 1GiB; spike 2GiB 300ms; sleep 30s' &"
                         " echo $! > " +
                         (spool_.string() + ".pid");
  ASSERT_EQ(std::system(workload.c_str()), 0);
  // Wait for the allocation to show, then check the numbers.
  testing::Exposition e;
  for (int i = 0; i < 200; ++i) {
    e = scrape();
    if (!e.find("gpumem_process_memory_used_bytes").empty() &&
        e.value("gpumem_memory_used_bytes", {{"gpu", "0"}}) == 1024.0 * MiB &&
        e.value("gpumem_memory_used_peak_window_bytes", {{"gpu", "0"}}) >= 3072.0 * MiB) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  std::string pid;
  std::ifstream(spool_.string() + ".pid") >> pid;
  std::filesystem::remove(spool_.string() + ".pid");
  EXPECT_EQ(e.value("gpumem_process_memory_used_bytes", {{"gpu", "0"}, {"pid", pid}}),
            1024.0 * MiB);
  EXPECT_EQ(e.find("gpumem_process_memory_used_bytes", {{"pid", pid}}).at(0).labels.at("process"),
            "gpumem-sim");
  EXPECT_EQ(e.value("gpumem_memory_used_bytes", {{"gpu", "0"}}), 1024.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_used_peak_window_bytes", {{"gpu", "0"}}), 3072.0 * MiB);
  ::kill(std::stoi(pid), SIGKILL);
}

// The window peak is read when the scrape is answered, not when the devices were last collected:
// with collections an hour apart, a spike after the first is in the very next scrape.
TEST_F(Exporter, ShowsASpikeInTheNextScrapeNotOneCollectionLater) {
  auto exporter = start({}, "1h");
  const auto before = scrape();
  ASSERT_EQ(before.value("gpumem_exporter_collections_total"), 1);
  ASSERT_LT(before.value("gpumem_memory_used_peak_window_bytes", {{"gpu", "0"}}), 512.0 * MiB);
  // Held for 100 ms, a hundred samples long; the workload has ended when this returns.
  const std::string workload =
      testing::sim_path("gpumem-sim") + " workload 'device 0; spike 512MiB 100ms'";
  ASSERT_EQ(std::system(workload.c_str()), 0);
  const auto after = scrape();
  EXPECT_EQ(after.value("gpumem_exporter_collections_total"), 1);
  EXPECT_GE(after.value("gpumem_memory_used_peak_window_bytes", {{"gpu", "0"}}), 512.0 * MiB);
  EXPECT_LT(after.value("gpumem_memory_used_bytes", {{"gpu", "0"}}), 512.0 * MiB);
}

// A process in a Kubernetes pod, as a synthetic /proc and kubelet tree describe it.
TEST_F(Exporter, LabelsProcessesWithTheirPodAndContainer) {
  const std::string workload = testing::sim_path("gpumem-sim") +
                               " workload 'device 0; alloc a 1GiB; sleep 30s' & echo $! > " +
                               spool_.string() + ".pid";
  ASSERT_EQ(std::system(workload.c_str()), 0);
  std::string pid;
  for (int i = 0; i < 100 && pid.empty(); ++i) {
    std::ifstream(spool_.string() + ".pid") >> pid;
    if (pid.empty()) std::this_thread::sleep_for(10ms);
  }
  std::filesystem::remove(spool_.string() + ".pid");
  const std::string id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  const auto tree = spool_.string() + "-tree";
  const auto proc = std::filesystem::path(tree) / "proc" / pid;
  std::filesystem::create_directories(proc);
  std::filesystem::create_directories(std::filesystem::path(tree) / "containers");
  std::ofstream(proc / "comm") << "python3\n";
  std::ofstream(proc / "cgroup") << "0::/kubepods.slice/kubepods-burstable.slice/"
                                    "kubepods-burstable-pod3f9d2b7e_1c4a_4e8b_9a0d_5b6c7d8e9f01."
                                    "slice/cri-containerd-"
                                 << id << ".scope\n";
  std::ofstream(proc / "status") << "NSpid:\t" << pid << "\t7\n";
  std::ofstream(std::filesystem::path(tree) / "containers" /
                ("trainer-0_ml_pytorch-" + id + ".log"));
  auto exporter = start({"--proc", tree + "/proc", "--kubelet-containers", tree + "/containers"});
  auto e = scrape_until([&](const testing::Exposition& x) {
    return !x.find("gpumem_process_memory_used_bytes", {{"pid", pid}}).empty();
  });
  ::kill(std::stoi(pid), SIGKILL);
  std::filesystem::remove_all(tree);
  auto found = e.find("gpumem_process_memory_used_bytes", {{"pid", pid}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].value, 1024.0 * MiB);
  const std::map<std::string, std::string> expected = {
      {"process", "python3"},
      {"namespace", "ml"},
      {"pod", "trainer-0"},
      {"container", "pytorch"},
      {"container_id", id},
      {"container_pid", "7"},
      {"pod_uid", "3f9d2b7e-1c4a-4e8b-9a0d-5b6c7d8e9f01"}};
  for (const auto& [label, value] : expected) {
    EXPECT_EQ(found[0].labels[label], value) << label;
  }
}

TEST_F(Exporter, ALostDeviceIsDownAndTheOtherStaysUp) {
  auto exporter = start();
  ASSERT_EQ(scrape().value("gpumem_device_up", {{"gpu", "1"}}), 1);
  gpu_.set_lost(0, true);  // NVML 0 is CUDA 1
  auto e = scrape_until([](const testing::Exposition& x) {
    return x.value("gpumem_device_up", {{"gpu", "1"}}) == 0;
  });
  EXPECT_EQ(e.value("gpumem_device_up", {{"gpu", "1"}, {"uuid", kA100}}), 0);
  EXPECT_TRUE(e.find("gpumem_memory_used_bytes", {{"gpu", "1"}}).empty());
  EXPECT_EQ(e.value("gpumem_device_up", {{"gpu", "0"}}), 1);
  gpu_.set_lost(0, false);
  EXPECT_EQ(exporter->stop(SIGINT), 0);
}

TEST_F(Exporter, ShowsPublishedTraces) {
  TraceBytes bytes{Source::sampled,
                   0,
                   0,
                   static_cast<std::int64_t>(64 * MiB),
                   static_cast<std::int64_t>(512 * MiB),
                   static_cast<std::int64_t>(64 * MiB),
                   static_cast<std::int64_t>(448 * MiB)};
  std::string error;
  ASSERT_TRUE(publish_trace(spool_, "forward pass", bytes, &error)) << error;
  std::filesystem::create_directories(spool_);
  std::ofstream(spool_ / "77-junk.trace") << "gpumem-trace 1\nscope x\n";  // torn
  auto exporter = start();
  auto e = scrape();
  const std::map<std::string, std::string> labels = {
      {"scope", "forward pass"}, {"pid", std::to_string(::getpid())}, {"uuid", kH200}};
  EXPECT_EQ(e.value("gpumem_trace_peak_bytes", labels), 512.0 * MiB);
  EXPECT_EQ(e.value("gpumem_trace_delta_used_bytes", labels), 64.0 * MiB);
  EXPECT_EQ(e.value("gpumem_trace_delta_peaked_bytes", labels), 448.0 * MiB);
  EXPECT_EQ(e.value("gpumem_exporter_spool_malformed_files"), 1);
}

TEST_F(Exporter, ExpiresTheResultsOfExitedProcesses) {
  // A record of a process that is gone, published long ago.
  detail::PublishedTrace old;
  old.scope = "gone";
  old.pid = 0x7ffffff0;  // above pid_max: no such process
  old.unix_ms = 1'000;
  std::filesystem::create_directories(spool_);
  std::ofstream(spool_ / "2147483632-x.trace") << detail::format_spool_record(old);
  auto exporter = start({"--retention", "1s"});
  auto e = scrape();
  EXPECT_TRUE(e.find("gpumem_trace_peak_bytes", {{"scope", "gone"}}).empty());
  EXPECT_FALSE(std::filesystem::exists(spool_ / "2147483632-x.trace"));
}

// A record of a process that is gone but recent (kept for the retention), as a file.
void write_record(const std::filesystem::path& file, const std::string& scope, unsigned pid,
                  std::int64_t peak, std::int64_t age_ms, const std::string& pid_namespace = "") {
  detail::PublishedTrace t;
  t.scope = scope;
  t.pid = pid;
  t.unix_ms = support::unix_time_ms() - age_ms;
  t.bytes = {Source::sampled, 0, 0, peak, peak, peak, 0};
  t.pid_namespace = pid_namespace;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << detail::format_spool_record(t);
}

// Issue 24, finding 7 (part): two files of one scope and pid gave two samples of one series.
TEST_F(Exporter, ShowsOneSeriesPerScopeAndPid) {
  write_record(spool_ / "2147483632-a.trace", "step", 0x7ffffff0, 1 * MiB, 2'000);
  write_record(spool_ / "2147483632-b.trace", "step", 0x7ffffff0, 2 * MiB, 1'000);  // newer
  auto exporter = start();
  auto e = scrape_until([](const testing::Exposition& x) {
    return !x.find("gpumem_trace_peak_bytes", {{"scope", "step"}}).empty();
  });
  const auto peaks = e.find("gpumem_trace_peak_bytes", {{"scope", "step"}});
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].value, 2.0 * MiB);
  EXPECT_EQ(e.find("gpumem_trace_published_timestamp_seconds", {{"scope", "step"}}).size(), 1u);
}

// Issue 24, finding 3: pid 1 of two containers, one scope, one shared spool: two series.
TEST_F(Exporter, KeepsTheTracesOfTwoContainersApart) {
  write_record(spool_ / "1-a.trace", "train step", 1, 1 * MiB, 1'000, "pid:[4026532001]");
  write_record(spool_ / "1-b.trace", "train step", 1, 2 * MiB, 1'000, "pid:[4026532002]");
  auto exporter = start();
  auto e = scrape_until([](const testing::Exposition& x) {
    return !x.find("gpumem_trace_peak_bytes", {{"scope", "train step"}}).empty();
  });
  EXPECT_EQ(e.value("gpumem_trace_peak_bytes",
                    {{"scope", "train step"}, {"pid", "1"}, {"pid_namespace", "pid:[4026532001]"}}),
            1.0 * MiB);
  EXPECT_EQ(e.value("gpumem_trace_peak_bytes",
                    {{"scope", "train step"}, {"pid", "1"}, {"pid_namespace", "pid:[4026532002]"}}),
            2.0 * MiB);
}

// Issue 24, finding 5: a spool directory others could have made or can write holds records
// anyone may have forged. The exporter refuses it at the start (status 2, with the reason)...
TEST_F(Exporter, RefusesAnUntrustedSpoolDirectory) {
  write_record(spool_ / "1-forged.trace", "forged", 1, 1 * MiB, 0);
  std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[&] { std::filesystem::permissions(spool_, std::filesystem::perms::all); },
       "others may write it (mode 0777)"}};
  if (::geteuid() == 0) {
    // Root's default /tmp/gpumem-0 (no XDG_RUNTIME_DIR, as under sudo), made first by a user.
    cases.emplace_back(
        [&] {
          ASSERT_EQ(::chmod(spool_.c_str(), 0700), 0);
          ASSERT_EQ(::chown(spool_.c_str(), 4246, 4246), 0);
        },
        "it is owned by uid 4246, neither this user (uid 0) nor root");
  }
  for (const auto& [make, reason] : cases) {
    make();
    ExporterProcess exporter({"--listen", "127.0.0.1:0", "--spool", spool_.string()});
    EXPECT_EQ(exporter.wait(), 2);
    EXPECT_NE(exporter.err().find("gpumem serve: refusing the spool directory " + spool_.string() +
                                  ": " + reason),
              std::string::npos)
        << exporter.err();
  }
}

// ... and one that turns up later (made by someone else) is not read, and says why.
TEST_F(Exporter, RefusesASpoolDirectoryThatTurnsUpUntrusted) {
  auto exporter = start();  // no spool yet: an empty one
  EXPECT_EQ(scrape().value("gpumem_exporter_spool_refused_directories"), 0);
  write_record(spool_ / "1-forged.trace", "forged", 1, 1 * MiB, 0);
  std::filesystem::permissions(spool_, std::filesystem::perms::all);
  auto e = scrape_until([](const testing::Exposition& x) {
    return !x.find("gpumem_exporter_spool_refused_directories").empty() &&
           x.value("gpumem_exporter_spool_refused_directories") == 1;
  });
  EXPECT_EQ(e.value("gpumem_exporter_spool_refused_directories"), 1);
  EXPECT_TRUE(e.find("gpumem_trace_peak_bytes").empty());
  EXPECT_EQ(exporter->stop(SIGTERM), 0);
  EXPECT_NE(exporter->err().find("gpumem serve: refusing the spool directory " + spool_.string() +
                                 ": others may write it (mode 0777); its records are not exported"),
            std::string::npos)
      << exporter->err();
}

TEST_F(Exporter, BadRequestsDoNotDisturbScrapes) {
  auto exporter = start();
  RawClient slow(port_);
  slow.send("GET /metrics HTTP/1.1\r\nX-");
  RawClient garbage(port_);
  garbage.send(std::string(100'000, 'G'));
  EXPECT_EQ(status_line(garbage.read_to_close()), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(status_line([&] {
              RawClient c(port_);
              c.send("GET /etc/passwd HTTP/1.0\r\n\r\n");
              return c.read_to_close();
            }()),
            "HTTP/1.1 404 Not Found");
  auto e = scrape();  // while the slow one is still open
  EXPECT_EQ(e.value("gpumem_device_up", {{"gpu", "0"}}), 1);
  EXPECT_EQ(e.value("gpumem_exporter_bad_requests_total"), 1);  // the 431; a 404 is a page
}

TEST_F(Exporter, AnUnfinishedRequestMakesRoomAtTheLimit) {
  auto exporter = start({"--max-connections", "1"});
  RawClient holder(port_);
  holder.send("GET /");
  std::this_thread::sleep_for(50ms);
  auto e = scrape();
  EXPECT_EQ(e.value("gpumem_device_up", {{"gpu", "0"}}), 1);
  EXPECT_EQ(holder.read_to_close(), "");
  EXPECT_EQ(scrape().value("gpumem_exporter_evicted_connections_total"), 1);
}

TEST_F(Exporter, RefusesNonsenseLimits) {
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--interval", "1ns"},
        {"--max-connections", "-1"},
        {"--max-connections", "0"},
        {"--collect-interval", "1us"},
        {"--retention", "1ms"},
        {"--write-timeout", "1ns"},
        {"--max-request-bytes", "10"},
        {"--max-connections", "4", "--max-connections-per-client", "8"},
        {"--web.config.file", "/nonexistent/web.yml"}}) {
    bad.insert(bad.begin(), {"--listen", "127.0.0.1:0"});
    ExporterProcess exporter(bad);
    EXPECT_EQ(exporter.wait(), 2) << bad[2] << " " << bad[3];
    EXPECT_FALSE(exporter.err().empty());
  }
}

TEST_F(Exporter, RefusesAnUnusableCertificateAsAConfigurationError) {
  std::filesystem::create_directories(spool_);
  const std::filesystem::path config = spool_ / "web.yml";
  std::ofstream(config)
      << "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n";
  ExporterProcess exporter({"--listen", "127.0.0.1:0", "--web.config.file", config.string()});
  EXPECT_EQ(exporter.wait(), 2);
  EXPECT_EQ(exporter.err(), "gpumem serve: invalid --web.config.file: cannot use the certificate " +
                                (spool_ / "missing.crt").string() +
                                ": No such file or directory\n");
}

TEST_F(Exporter, WarnsWhenListeningBeyondLoopbackWithoutTlsAndAuthentication) {
  auto open = std::make_unique<ExporterProcess>(std::vector<std::string>{
      "--listen", "0.0.0.0:0", "--spool", spool_.string(), "--collect-interval", "10ms"});
  ASSERT_GT(open->port(), 0) << open->err();
  EXPECT_EQ(open->stop(), 0);
  EXPECT_NE(open->err().find("warning: listening on 0.0.0.0:0 beyond loopback without TLS and "
                             "basic authentication"),
            std::string::npos)
      << open->err();
  auto local = start();
  EXPECT_EQ(local->stop(), 0);
  EXPECT_EQ(local->err().find("warning"), std::string::npos) << local->err();
}

TEST_F(Exporter, RejectsBadDurationsWithOneLine) {
  for (const char* flag : {"--interval", "--window"}) {
    ExporterProcess exporter({"--listen", "127.0.0.1:0", flag, "10x"});
    EXPECT_EQ(exporter.wait(), 2);
    EXPECT_EQ(exporter.err(), std::string("gpumem serve: invalid ") + flag +
                                  " '10x': expected a duration such as 500us, 10ms, 1s or 30s\n");
  }
  ExporterProcess exporter({"--listen", "nowhere"});
  EXPECT_EQ(exporter.wait(), 2);
}

TEST_F(Exporter, ReportsAPortInUse) {
  auto first = start();
  ExporterProcess second({"--listen", "127.0.0.1:" + std::to_string(port_)});
  EXPECT_EQ(second.wait(), 1);
  EXPECT_NE(second.err().find("cannot listen on 127.0.0.1:"), std::string::npos) << second.err();
}

}  // namespace
}  // namespace gpumem
