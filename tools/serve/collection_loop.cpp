#include "collection_loop.hpp"

#include <condition_variable>
#include <mutex>

#include "gpumem/internal/clock.hpp"

namespace gpumem::serve {
namespace {

constexpr std::chrono::seconds kStopGrace{2};

}  // namespace

// Shared with the thread, which may outlive the loop when a collection never returns.
struct CollectionLoop::Shared {
  std::function<Snapshot()> collect;
  std::chrono::nanoseconds period;
  Clock::time_point started = Clock::now();

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  bool stopping = false;
  bool finished = false;
  std::shared_ptr<const Snapshot> snapshot;
  std::uint64_t collections = 0;
  Clock::time_point ended;
  Clock::duration duration{};

  void run() {
    support::Cadence cadence;
    std::unique_lock lock(mutex);
    while (!stopping) {
      lock.unlock();
      const auto start = Clock::now();
      std::shared_ptr<const Snapshot> fresh;
      try {
        fresh = std::make_shared<const Snapshot>(collect());
      } catch (...) {
        // A collection that fails leaves the previous one served; its age tells.
      }
      const auto end = Clock::now();
      lock.lock();
      if (fresh) {
        snapshot = std::move(fresh);
        ++collections;
        ended = end;
        duration = end - start;
        changed.notify_all();
      }
      // Behind: go on at once, but do not try to catch up.
      const auto next = cadence.advance(period, end);
      changed.wait_until(lock, next, [this] { return stopping; });
    }
    finished = true;
    changed.notify_all();
  }
};

CollectionLoop::CollectionLoop(std::function<Snapshot()> collect, std::chrono::nanoseconds period)
    : shared_(std::make_shared<Shared>()) {
  shared_->collect = std::move(collect);
  shared_->period = period;
  thread_ = std::thread([shared = shared_] { shared->run(); });
}

CollectionLoop::~CollectionLoop() {
  std::unique_lock lock(shared_->mutex);
  shared_->stopping = true;
  shared_->changed.notify_all();
  // The thread holds its own reference: if the driver never returns, it is left behind.
  const bool finished =
      shared_->changed.wait_for(lock, kStopGrace, [this] { return shared_->finished; });
  lock.unlock();
  if (finished) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

CollectionLoop::Latest CollectionLoop::latest() const {
  std::lock_guard lock(shared_->mutex);
  Latest latest;
  latest.snapshot = shared_->snapshot;
  latest.collections = shared_->collections;
  const auto since = shared_->collections > 0 ? shared_->ended : shared_->started;
  latest.age_seconds = std::chrono::duration<double>(Clock::now() - since).count();
  latest.duration_seconds = std::chrono::duration<double>(shared_->duration).count();
  return latest;
}

bool CollectionLoop::wait_for_first(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(shared_->mutex);
  return shared_->changed.wait_for(lock, timeout, [this] { return shared_->collections > 0; });
}

}  // namespace gpumem::serve
