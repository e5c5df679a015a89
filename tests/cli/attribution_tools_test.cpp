// `gpumem attribution` end to end: the built command on written documents, its pprof file read
// by `go tool pprof` (Debian's golang-go) and its HTML report loaded by headless Chromium
// (Debian's chromium), which must show the document's figures.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "attribution/document.hpp"
#include "cli/attribution_documents.hpp"
#include "cli/browser.hpp"
#include "cli/command_runner.hpp"
#include "cli/special_files.hpp"

namespace gpumem::testing {
namespace {

std::vector<std::string> attribution(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), {gpumem_binary(), "attribution"});
  return arguments;
}

TEST(AttributionCommand, PrintsThePeakAndTheFailureAndWritesEveryView) {
  const std::string folder = temporary_folder();
  const std::string path = known_document().write(folder);
  const CommandResult result =
      run_command(attribution({path, "--wide", "--svg", folder + "/a.svg", "--pprof",
                               folder + "/a.pb.gz", "--html", folder + "/a.html"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_NE(result.out.find("peak of scope run on GPU 0 (NVIDIA H200)"), std::string::npos);
  EXPECT_NE(result.out.find("100.0 MiB  50.0%       2  train_step (train.cpp:42)"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("out-of-memory failure on GPU 0"), std::string::npos);
  EXPECT_NE(result.out.find("failed: 16.0 GiB (device) with CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos);
  for (const char* file : {"/a.svg", "/a.pb.gz", "/a.html"})
    EXPECT_GT(std::filesystem::file_size(folder + file), 100u) << file;
  EXPECT_NE(read_file(folder + "/a.svg").find("peak of scope run"), std::string::npos);

  const CommandResult oom = run_command(attribution({path, "--snapshot", "oom", "--top", "1"}));
  ASSERT_EQ(oom.exit_code, 0) << oom.err;
  EXPECT_EQ(oom.out.find("peak of scope"), std::string::npos);
  EXPECT_NE(oom.out.find("(1 other stack)"), std::string::npos) << oom.out;
}

TEST(AttributionCommand, BadInputIsAClearErrorAndWritesNothing) {
  const std::string folder = temporary_folder();
  const std::string path = known_document().write(folder);
  const std::string truncated = folder + "/cut.json";
  {
    const std::string text = read_file(path);
    std::ofstream(truncated) << text.substr(0, text.size() - 10);
  }
  CommandResult result = run_command(attribution({truncated, "--html", folder + "/r.html"}));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("gpumem attribution: " + truncated + ": not valid JSON: it ends early"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(folder + "/r.html"));

  result = run_command(attribution({path, "--snapshot", "7"}));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("--snapshot 7 is out of range (2 snapshots: 0 to 1)"),
            std::string::npos)
      << result.err;

  result = run_command(attribution({path, "--svg", folder + "/no/such/folder/a.svg"}));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.out, "");

  DocumentBuilder empty;
  const std::string none = empty.write(folder, "empty.json");
  result = run_command(attribution({none}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("holds no snapshot"), std::string::npos);
  result = run_command(attribution({none, "--pprof", folder + "/e.pb.gz"}));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("holds no snapshot to draw"), std::string::npos);
}

TEST(AttributionCommand, OutputsAreRegularFilesOrStdoutNothingElse) {
  const std::string folder = temporary_folder();
  const std::string path = known_document().write(folder);
  const SpecialFiles special(folder);
  special.expect_refused("gpumem attribution", {"--svg", "--pprof", "--html"},
                         [&](const std::string& option, const std::string& file) {
                           return attribution({path, option, file});
                         });
  // '-': the view on stdout, in the tables' place.
  const CommandResult svg = run_command(
      {"sh", "-c",
       "cd '" + folder + "' && exec '" + gpumem_binary() + "' attribution '" + path + "' --svg -"});
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  EXPECT_EQ(svg.out.rfind("<?xml", 0), 0u) << svg.out.substr(0, 200);
  EXPECT_NE(svg.out.find("<svg"), std::string::npos);
  EXPECT_EQ(svg.out.find("BYTES"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(folder + "/-"));
}

// Runs `argv` (stdout and stderr to files) and reads its peak resident memory from wait4.
struct Measured {
  int exit_code = -1;
  std::string err;
  long max_rss_kib = 0;
};

Measured measure(const std::vector<std::string>& argv, const std::string& folder) {
  const std::string err_path = folder + "/measured.err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open("/dev/null", O_WRONLY);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> words;
    for (const std::string& word : argv) words.push_back(const_cast<char*>(word.c_str()));
    words.push_back(nullptr);
    ::execv(words[0], words.data());
    ::_exit(127);
  }
  Measured measured;
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) == pid && WIFEXITED(status))
    measured.exit_code = WEXITSTATUS(status);
  measured.max_rss_kib = usage.ru_maxrss;
  measured.err = read_file(err_path);
  return measured;
}

// A document is read as it streams in: a file whose second byte is not JSON is refused there,
// not after reading the rest of it (512 MiB here, sparse: it costs no disk).
TEST(AttributionCommand, ABadByteIsRefusedWhereItIsWithoutReadingTheRest) {
  const std::string folder = temporary_folder();
  const std::string path = folder + "/sparse.json";
  {
    std::ofstream(path) << "{x";
    ASSERT_EQ(::truncate(path.c_str(), 512ll << 20), 0);
  }
  const std::string small = known_document().write(folder, "small.json");
  const Measured baseline = measure(attribution({small}), folder);
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  const Measured result = measure(attribution({path}), folder);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(result.err, "gpumem attribution: " + path + ": not valid JSON at byte 2\n");
  // What a small document takes, give or take a buffer: nothing of the 512 MiB was kept.
  EXPECT_LT(result.max_rss_kib - baseline.max_rss_kib, 16 * 1024)
      << "KiB over the baseline (" << baseline.max_rss_kib << " KiB)";
}

// 200,000 blocks on 1,000 stacks, written as gpumem writes a document; 0 when written.
int write_large_document(const std::string& path) {
  DocumentBuilder doc;
  const std::size_t main_frame = doc.frame("main", "main.cpp", 1);
  std::vector<std::size_t> stacks;
  for (int i = 0; i < 1000; ++i)
    stacks.push_back(
        doc.stack({doc.frame("alloc_" + std::to_string(i), "a.cpp", i + 1), main_frame}));
  const std::size_t peak = doc.snapshot("peak", 0);
  std::int64_t level = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::int64_t bytes = 4096 * (1 + i % 7);
    doc.block(peak, bytes, static_cast<long long>(stacks[static_cast<std::size_t>(i) % 1000]));
    level += bytes;
  }
  doc.json()["snapshots"][peak]["level_bytes"] = level;
  std::string error;
  const auto read = cli::attribution::parse_document(doc.text(), path, &error);
  if (!read) return 1;
  std::ofstream(path) << cli::attribution::document_json(*read).dump(1);
  return 0;
}

// A large document takes a small multiple of its size to read (the Document it keeps), not the
// ~10 times a whole JSON tree of it would.
TEST(AttributionCommand, ALargeDocumentTakesASmallMultipleOfItsSize) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPUMEM_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPUMEM_TEST_SANITIZED 1
#endif
#endif
#ifdef GPUMEM_TEST_SANITIZED
  GTEST_SKIP() << "a sanitizer keeps freed memory (ASan's quarantine) and its own beside it: "
                  "the resident size does not measure gpumem";
#endif
  const std::string folder = temporary_folder();
  const std::string big = folder + "/big.json";
  // Written by a child: a measured command forked from this process would start with (and
  // report in its peak) this process's memory, the document's JSON tree included.
  const pid_t writer = ::fork();
  if (writer == 0) ::_exit(write_large_document(big));
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string small = known_document().write(folder, "small.json");
  const long size_kib = static_cast<long>(std::filesystem::file_size(big) / 1024);

  const Measured baseline = measure(attribution({small}), folder);
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  const Measured large = measure(attribution({big}), folder);
  ASSERT_EQ(large.exit_code, 0) << large.err;
  const long used = large.max_rss_kib - baseline.max_rss_kib;
  EXPECT_LT(used, 2 * size_kib) << "KiB over the baseline (" << baseline.max_rss_kib
                                << " KiB) for a " << size_kib << " KiB document";
  EXPECT_GT(size_kib, 10 * 1024);  // the document is large enough to tell
}

TEST(AttributionCommand, GoToolPprofReadsTheProfileAndNamesTheTopFunction) {
  if (!have("go")) GTEST_SKIP() << "go (Debian's golang-go) is not installed";
  const std::string folder = temporary_folder();
  const std::string path = known_document().write(folder);
  const std::string profile = folder + "/peak.pb.gz";
  const CommandResult written = run_command(attribution({path, "--pprof", profile}));
  ASSERT_EQ(written.exit_code, 0) << written.err;
  // No network, no module, no toolchain download: the Debian toolchain's own pprof.
  const CommandResult top = run_command(
      {"env", "HOME=" + folder, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off",
       "GOCACHE=" + folder + "/go-cache", "go", "tool", "pprof", "-top", "-unit=B", profile});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("Type: inuse_space"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("of 209715200B total"), std::string::npos) << top.out;
  // The first row is the function that held the most: train_step, 100 MiB.
  const std::regex first_row(
      R"(flat%[^\n]*\n\s*104857600B\s+50\.00%\s+50\.00%\s+104857600B\s+50\.00%\s+train_step\n)");
  EXPECT_TRUE(std::regex_search(top.out, first_row)) << top.out;
  EXPECT_TRUE(std::regex_search(top.out,
                                std::regex(R"(\n\s*0\s+0%\s+\S+\s+178257920B\s+85\.00%\s+main\n)")))
      << top.out;
}

TEST(AttributionCommand, TheHtmlReportShowsTheDocumentsFiguresInABrowser) {
  if (!have("chromium")) GTEST_SKIP() << "chromium (Debian's chromium) is not installed";
  const std::string folder = temporary_folder();
  DocumentBuilder doc = known_document();
  // A hostile name that would run script if it were ever parsed as markup.
  const std::size_t evil = doc.frame("<img src=x onerror=\"document.title='pwned'\">", "x.js", 1);
  doc.block(0, 4096, static_cast<long long>(doc.stack({evil, 0})));
  doc.json()["snapshots"][0]["level_bytes"] = 200 * kMiB + 4096;
  const std::string path = doc.write(folder);
  const std::string html = folder + "/report.html";
  const CommandResult written = run_command(attribution({path, "--html", html}));
  ASSERT_EQ(written.exit_code, 0) << written.err;

  const CommandResult dom = dump_dom(folder, "file://" + html);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_NE(dom.out.find("data-ready=\"yes\""), std::string::npos) << dom.out.substr(0, 2000);
  EXPECT_EQ(attribute(dom.out, "peak-level", "data-bytes"), std::to_string(200 * kMiB + 4096));
  EXPECT_EQ(element(dom.out, "peak-level"), "200.0 MiB");
  // The library's allocating frame, shortened as the terminal's narrow column shows it.
  EXPECT_EQ(element(dom.out, "peak-top-function"), "train_step (train.cpp:42)");
  EXPECT_EQ(attribute(dom.out, "peak-blocks", "data-count"), "6");
  EXPECT_EQ(attribute(dom.out, "oom-request", "data-bytes"), std::to_string(16ll << 30));
  EXPECT_EQ(element(dom.out, "oom-request"), "16.0 GiB");
  EXPECT_EQ(element(dom.out, "oom-top-function"), "train_step (train.cpp:42)");
  EXPECT_EQ(attribute(dom.out, "oom-blocks", "data-count"), "2");
  // The icicle's top box holds the level, the block list starts with the largest block.
  EXPECT_NE(dom.out.find(">all: 200.0 MiB<"), std::string::npos);
  EXPECT_NE(dom.out.find("train_step (train.cpp:42) in /opt/app/train: 100.0 MiB (104857600 bytes, "
                         "50.0%) in 2 blocks"),
            std::string::npos);
  EXPECT_NE(dom.out.find("Live blocks: 6, 180.0 MiB"), std::string::npos);
  EXPECT_NE(dom.out.find("<td class=\"code\">0x7f3a00000000</td><td class=\"num\" "
                         "data-bytes=\"62914560\">60.0 MiB</td>"),
            std::string::npos);
  // The hostile name is text on the page, not an element.
  EXPECT_EQ(dom.out.find("<img"), std::string::npos);
  EXPECT_NE(dom.out.find("&lt;img src=x onerror="), std::string::npos);
  EXPECT_EQ(dom.out.find("pwned</title>"), std::string::npos);
  // The timeline marks the peak.
  EXPECT_NE(dom.out.find("peak 200.0 MiB at 1.250 s"), std::string::npos);

  // A link to a box (what a click on it puts in the address bar) opens the snapshot zoomed into
  // that box, and lists only the blocks under it: train_step's two.
  const CommandResult linked =
      dump_dom(folder, "file://" + html + "#snapshot=0&focus=%5B%22main%22%2C%22train_step%22%5D");
  ASSERT_EQ(linked.exit_code, 0) << linked.err;
  const std::size_t chosen = linked.out.find("id=\"panel-chosen\"");
  ASSERT_NE(chosen, std::string::npos);
  const std::string panel =
      linked.out.substr(chosen, linked.out.find("</section>", chosen) - chosen);
  EXPECT_EQ(panel.find(" hidden"), std::string::npos);
  EXPECT_NE(panel.find("Live blocks under train_step: 2, 100.0 MiB"), std::string::npos) << panel;
  EXPECT_NE(panel.find("class=\"box focus\""), std::string::npos);
  std::size_t rows = 0;
  for (std::size_t at = panel.find("<tr><td class=\"code\">0x"); at != std::string::npos;
       at = panel.find("<tr><td class=\"code\">0x", at + 1))
    ++rows;
  EXPECT_EQ(rows, 2u) << panel;
  EXPECT_NE(panel.find("data-bytes=\"62914560\""), std::string::npos);  // 60 MiB
  EXPECT_NE(panel.find("data-bytes=\"41943040\""), std::string::npos);  // 40 MiB
  EXPECT_EQ(panel.find("data-bytes=\"52428800\""), std::string::npos);  // load_weights' is not

  expect_screenshot(folder, html, "report.png");
}

TEST(AttributionCommand, TheHtmlReportDrawsTenThousandStacks) {
  if (!have("chromium")) GTEST_SKIP() << "chromium (Debian's chromium) is not installed";
  const std::string folder = temporary_folder();
  DocumentBuilder doc = many_and_deep_stacks(4096, 1ll << 30);
  std::vector<std::pair<double, std::int64_t>> steps;
  for (int i = 0; i <= 20000; ++i) steps.emplace_back(i * 0.001, (i % 100) * kMiB);
  steps.emplace_back(20.5, doc.json()["snapshots"][0]["level_bytes"].get<std::int64_t>());
  doc.steps(0, steps);
  const std::string html = folder + "/many.html";
  const CommandResult written = run_command(attribution({doc.write(folder), "--html", html}));
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const CommandResult dom =
      run_command(chromium(folder, {"--virtual-time-budget=10000", "--dump-dom", "file://" + html}),
                  std::chrono::seconds(60));
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_NE(dom.out.find("data-ready=\"yes\""), std::string::npos);
  EXPECT_EQ(element(dom.out, "peak-top-function"), "level_0 (deep.cpp:0)");
  EXPECT_EQ(attribute(dom.out, "peak-blocks", "data-count"), "10001");
  EXPECT_NE(dom.out.find(">level_199<"), std::string::npos);
  EXPECT_NE(dom.out.find("and 9501 smaller blocks"), std::string::npos);
}

}  // namespace
}  // namespace gpumem::testing
