// The CLI's number formatting and plot ticks.
#include <gtest/gtest.h>

#include "format.hpp"
#include "svg_plot.hpp"
#include "table.hpp"

namespace gpumem::cli {
namespace {

TEST(Format, BytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(150ll << 20), "150.0 MiB");
  EXPECT_EQ(format_bytes(143771ll << 20), "140.4 GiB");
  EXPECT_EQ(format_bytes(-(2ll << 30)), "-2.0 GiB");
}

TEST(Format, TicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(nice_ticks(162, 5), (std::vector<double>{0, 50, 100, 150, 200}));
  const std::vector<double> fractions = nice_ticks(1.0, 5);
  ASSERT_EQ(fractions.size(), 6u);
  EXPECT_DOUBLE_EQ(fractions[1], 0.2);
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
  EXPECT_EQ(nice_ticks(7, 8), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Format, TableAlignsColumns) {
  Table table({">GPU", "NAME"});
  table.add_row({"0", "H200"});
  table.add_row({"10", "A100"});
  EXPECT_EQ(table.render(), "GPU  NAME\n  0  H200\n 10  A100\n");
}

}  // namespace
}  // namespace gpumem::cli
