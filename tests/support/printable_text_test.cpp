// The one function that shows untrusted text (gpumem/internal/printable_text.hpp): every control,
// bidirectional and invisible character and every byte that is not UTF-8 becomes an escape, and
// the table of hidden characters agrees with Unicode's, as libunistring knows it.
#include <gtest/gtest.h>
#include <unictype.h>

#include <string>

#include "gpumem/internal/printable_text.hpp"

namespace gpumem::detail {
namespace {

TEST(PrintableText, KeepsTextThatShowsAsItIs) {
  for (const char* text : {"python3", "NVIDIA H200", "漢字 é", "Ünïcödé naïve", "a\\u202eb",
                           "e\xcc\x81" /* e and a combining acute */, "🙂", ""}) {
    EXPECT_EQ(printable(text), text);
  }
}

TEST(PrintableText, ShowsControlsAsEscapes) {
  // The issue's reproductions: OSC (set the title), CSI (clear the screen), BEL, a forged line.
  EXPECT_EQ(printable("node\x1b]0;owned\x07\x1b[2J\r\nforged"),
            R"(node\x1b]0;owned\x07\x1b[2J\r\nforged)");
  EXPECT_EQ(printable(std::string("a\0b\tc\x7f", 6)), R"(a\x00b\tc\x7f)");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            R"(\u009b31m)");                      // C1's one-character CSI
  EXPECT_EQ(printable("\xc2\x85"), R"(\u0085)");  // NEL: C1's line break
}

TEST(PrintableText, ShowsBidiAndInvisibleCharactersAsEscapes) {
  // "gpu0.txt" written with a right-to-left override reads "txt.0upg" on a terminal.
  EXPECT_EQ(printable("gpu\u202e0.txt\u202c"), R"(gpu\u202e0.txt\u202c)");
  EXPECT_EQ(printable("\u2066x\u2069\u200e\u200f\u061c"), R"(\u2066x\u2069\u200e\u200f\u061c)");
  EXPECT_EQ(printable("ad\u200bmin\u00ad\ufeff\u2028"), R"(ad\u200bmin\u00ad\ufeff\u2028)");
  EXPECT_EQ(printable("tag\U000E0041"), R"(tag\U000e0041)");
  EXPECT_EQ(printable("\u3164"), R"(\u3164)");  // a Hangul filler: a blank that is a letter
}

TEST(PrintableText, ShowsEachByteThatIsNotUtf8AsAnEscape) {
  EXPECT_EQ(printable("x\xff\xc3"), R"(x\xff\xc3)");                // cut short
  EXPECT_EQ(printable("\xc0\xaf"), R"(\xc0\xaf)");                  // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), R"(\xed\xa0\x80)");          // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), R"(\xf4\x90\x80\x80)");  // above U+10FFFF
  EXPECT_EQ(printable("\xe2\x80"), R"(\xe2\x80)");
}

TEST(PrintableText, TheResultHasNoHiddenCharacterAndOnlyValidUtf8) {
  std::string all;
  for (int byte = 0; byte < 256; ++byte) all += static_cast<char>(byte);
  all += "\u202e\u2067\U000E0001";
  const std::string shown = printable(all);
  for (unsigned char c : shown) EXPECT_FALSE(c < 0x20 || c == 0x7f) << int(c);
  EXPECT_EQ(printable(shown), shown);  // nothing left to escape
}

// Every code point libunistring's tables call a control (Cc), a format character (Cf), a line or
// paragraph separator (Zl, Zp), a bidirectional control or a default-ignorable code point is one
// printable() hides, and nothing else is but surrogates and the unassigned code points Unicode
// reserves for more of them.
TEST(PrintableText, HidesWhatUnicodeCallsControlFormatOrIgnorable) {
  int checked = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    const bool surrogate = c >= 0xD800 && c <= 0xDFFF;
    const bool unicode =
        surrogate || uc_is_general_category(c, UC_CONTROL) ||
        uc_is_general_category(c, UC_FORMAT) || uc_is_general_category(c, UC_LINE_SEPARATOR) ||
        uc_is_general_category(c, UC_PARAGRAPH_SEPARATOR) || uc_is_property_bidi_control(c) ||
        uc_is_property_default_ignorable_code_point(c);
    if (unicode) {
      EXPECT_TRUE(hidden_character(c)) << std::hex << static_cast<unsigned>(c);
      ++checked;
    } else if (hidden_character(c)) {
      // Hidden beyond libunistring's tables: only code points it does not know to be assigned.
      EXPECT_TRUE(uc_is_general_category(c, UC_UNASSIGNED)) << std::hex << static_cast<unsigned>(c);
    }
  }
  EXPECT_GT(checked, 4000);  // E0000..E0FFF alone
}

}  // namespace
}  // namespace gpumem::detail
