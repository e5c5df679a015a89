#include "peak/sampler.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gpumem/internal/clock.hpp"
#include "gpumem/memory.hpp"
#include "gpumem/peak.hpp"
#include "peak/channels.hpp"

namespace gpumem::peak {
namespace {

std::atomic<std::int64_t> interval_ns{kDefaultSamplingInterval.count()};

struct Sampler {
  std::mutex mutex;
  int references = 0;
  GpuHandle handle;
  std::jthread thread;
};

// Never destroyed: a counter leaked by the program leaves its thread running until exit, and that
// thread must not find its sampler gone during static destruction.
Sampler& sampler(int device) noexcept {
  static Sampler* const table = new Sampler[kMaxDevices];
  return table[device];
}

bool valid_device(int device) noexcept {
  return device >= 0 && device < kMaxDevices;
}

void run(const std::stop_token& stop, GpuHandle handle, Channel* target) {
  // Woken by release_sampler's stop request through this callback; a plain condition variable
  // costs far less per timed wait than condition_variable_any with a stop token.
  std::mutex idle;
  std::condition_variable wake;
  bool stopping = false;
  const std::stop_callback on_stop(stop, [&] {
    const std::lock_guard guard(idle);
    stopping = true;
    wake.notify_one();
  });
  std::unique_lock lock(idle);
  support::Cadence cadence;
  while (!stopping) {
    if (const auto used = gpu_mem_get_used_bytes_fast(handle)) {
      target->set_level(static_cast<std::int64_t>(*used));
    }
    const auto next =
        cadence.advance(std::chrono::nanoseconds(interval_ns.load(std::memory_order_relaxed)));
    wake.wait_until(lock, next, [&] { return stopping; });
  }
}

}  // namespace

bool acquire_sampler(int device) noexcept {
  if (!valid_device(device)) return false;
  try {
    Sampler& state = sampler(device);
    const std::lock_guard lock(state.mutex);
    if (state.references > 0) {
      ++state.references;
      return true;
    }
    if (!state.handle.valid()) state.handle = gpu_handle(device);
    if (!state.handle.valid()) return false;
    state.thread = std::jthread(run, state.handle, channel(Stream::sampled, device));
    state.references = 1;
    return true;
  } catch (...) {
    return false;  // no thread could be started
  }
}

void release_sampler(int device) noexcept {
  if (!valid_device(device)) return;
  std::jthread stopping;
  {
    Sampler& state = sampler(device);
    const std::lock_guard lock(state.mutex);
    if (state.references == 0 || --state.references > 0) return;
    stopping = std::move(state.thread);
  }
  // Joined outside the lock, so a counter starting meanwhile is not held up (it gets a new thread).
  stopping.request_stop();
  if (stopping.joinable()) stopping.join();
}

std::optional<std::int64_t> sample_now(int device) noexcept {
  if (!valid_device(device)) return std::nullopt;
  GpuHandle handle;
  {
    Sampler& state = sampler(device);
    const std::lock_guard lock(state.mutex);
    if (!state.handle.valid()) state.handle = gpu_handle(device);
    handle = state.handle;
  }
  const auto used = gpu_mem_get_used_bytes_fast(handle);
  if (!used) return std::nullopt;
  channel(Stream::sampled, device)->set_level(static_cast<std::int64_t>(*used));
  return static_cast<std::int64_t>(*used);
}

}  // namespace gpumem::peak

namespace gpumem {

void set_sampling_interval(std::chrono::nanoseconds interval) {
  // Below 10 µs the thread would only burn a core; zero or negative means the default.
  constexpr std::chrono::nanoseconds floor = std::chrono::microseconds(10);
  if (interval <= std::chrono::nanoseconds::zero()) interval = peak::kDefaultSamplingInterval;
  if (interval < floor) interval = floor;
  peak::interval_ns.store(interval.count(), std::memory_order_relaxed);
}

std::chrono::nanoseconds sampling_interval() noexcept {
  return std::chrono::nanoseconds(peak::interval_ns.load(std::memory_order_relaxed));
}

}  // namespace gpumem
