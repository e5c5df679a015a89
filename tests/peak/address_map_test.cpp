#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <unordered_map>
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
        const std::uint64_t address = (static_cast<std::uint64_t>(t) << 40) | ((i + 1) << 9);
        map.insert(address, {i + 1, t, false});
        ASSERT_EQ(map.erase(address)->size, i + 1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(map.size(), 0u);
}

// The open-addressing table against a reference map, through growth and the deletions that
// shift clusters back (addresses collide in shards and wrap around tables).
TEST(AddressMap, AgreesWithAReferenceMapThroughChurn) {
  AddressMap map;
  std::unordered_map<std::uint64_t, std::uint64_t> reference;
  std::mt19937_64 random(42);
  for (int step = 0; step < 200000; ++step) {
    const std::uint64_t address = ((random() % 4096) + 1) << 9;
    if (random() % 3 != 0) {
      const std::uint64_t size = random() % 1000 + 1;
      map.insert(address, {size, 0, false});
      reference[address] = size;
    } else {
      const auto erased = map.erase(address);
      const auto expected = reference.find(address);
      ASSERT_EQ(erased.has_value(), expected != reference.end()) << "step " << step;
      if (erased) {
        ASSERT_EQ(erased->size, expected->second);
        reference.erase(expected);
      }
    }
  }
  ASSERT_EQ(map.size(), reference.size());
  for (const auto& [address, size] : reference) {
    ASSERT_TRUE(map.find(address));
    EXPECT_EQ(map.find(address)->size, size);
  }
  map.insert(0, {1, 0, false});  // no block lives at 0
  EXPECT_FALSE(map.find(0));
}

}  // namespace
}  // namespace gpumem::peak
