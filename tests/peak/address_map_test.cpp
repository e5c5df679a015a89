#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "peak/address_map.hpp"

namespace gpumem::peak {
namespace {

TEST(AddressMap, InsertFindErase) {
  AddressMap map;
  map.insert(0x7f0000000000, {4096, 1, false});
  map.insert(0x7f0000001000, {1, 0, true});
  ASSERT_TRUE(map.find(0x7f0000000000));
  EXPECT_EQ(map.find(0x7f0000000000)->size, 4096u);
  EXPECT_EQ(map.find(0x7f0000000000)->device, 1);
  EXPECT_TRUE(map.find(0x7f0000001000)->managed);
  EXPECT_FALSE(map.find(0x1234));
  EXPECT_EQ(map.erase(0x7f0000000000)->size, 4096u);
  EXPECT_FALSE(map.erase(0x7f0000000000));
  EXPECT_EQ(map.size(), 1u);
  map.clear();
  EXPECT_EQ(map.size(), 0u);
}

TEST(AddressMap, ThreadsOnDistinctBlocks) {
  AddressMap map;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&map, t] {
      for (std::uint64_t i = 0; i < 5000; ++i) {
        const std::uint64_t address = (static_cast<std::uint64_t>(t) << 40) | (i << 9);
        map.insert(address, {i + 1, t, false});
        ASSERT_EQ(map.erase(address)->size, i + 1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(map.size(), 0u);
}

}  // namespace
}  // namespace gpumem::peak
