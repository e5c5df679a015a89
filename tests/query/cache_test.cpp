// Cache-release hooks: the _no_cache reads run them, in order, and survive a failing one.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gpumem/gpumem.hpp"
#include "support/sim_configs.hpp"

namespace gpumem {
namespace {

using namespace gpumem::testing;

TEST(CacheHooks, RunInRegistrationOrderOnlyForNoCacheReads) {
  SimGpu sim;
  std::vector<int> calls;
  const HookId first = add_cache_release_hook([&] { calls.push_back(1); });
  const HookId second = add_cache_release_hook([&] { calls.push_back(2); });
  const HookId third = add_cache_release_hook([&] { calls.push_back(3); });
  EXPECT_NE(first, second);
  (void)gpu_mem_get_used();
  (void)gpu_mem_get_free();
  EXPECT_TRUE(calls.empty());
  (void)gpu_mem_get_used_no_cache();
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(remove_cache_release_hook(second));
  EXPECT_FALSE(remove_cache_release_hook(second));
  calls.clear();
  (void)gpu_mem_get_free_no_cache();
  EXPECT_EQ(calls, (std::vector<int>{1, 3}));
  EXPECT_TRUE(remove_cache_release_hook(first));
  EXPECT_TRUE(remove_cache_release_hook(third));
  calls.clear();
  release_caches();
  EXPECT_TRUE(calls.empty());
}

TEST(CacheHooks, ReleasedBlocksAreNotCounted) {
  SimGpu sim;
  DeviceAllocation cached = device_allocate(300 * MiB, 0);
  const HookId hook = add_cache_release_hook([&] { cached.reset(); });
  EXPECT_EQ(gpu_mem_get_used(), kH200Reserved + 300);
  EXPECT_EQ(gpu_mem_get_free(), kH200Total - kH200Reserved - 300);
  EXPECT_EQ(gpu_mem_get_used_no_cache(), kH200Reserved);
  cached = device_allocate(100 * MiB, 0);
  EXPECT_EQ(gpu_mem_get_free_no_cache(), kH200Total - kH200Reserved);
  remove_cache_release_hook(hook);
}

TEST(CacheHooks, AThrowingHookIsRecordedAndOthersStillRun) {
  SimGpu sim;
  int ran = 0;
  const HookId bad = add_cache_release_hook([] { throw std::runtime_error("pool busy"); });
  add_cache_release_hook([&] { ++ran; });
  EXPECT_EQ(gpu_mem_get_used_no_cache(), kH200Reserved);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(last_diagnostic(), "cache-release hook " + std::to_string(bad) + " failed: pool busy");
}

TEST(CacheHooks, AHookMayRegisterAnother) {
  SimGpu sim;
  int inner = 0;
  add_cache_release_hook([&] { add_cache_release_hook([&] { ++inner; }); });
  release_caches();
  EXPECT_EQ(inner, 0);  // added during the run: runs from the next one
  release_caches();
  EXPECT_EQ(inner, 1);
}

}  // namespace
}  // namespace gpumem
