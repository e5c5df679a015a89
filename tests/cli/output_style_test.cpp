// Where `list` and `watch` take their width, character set and colour from: a terminal (a
// pseudo-terminal of a set size here), $COLUMNS, the locale, $NO_COLOR, $TERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

#include "terminal.hpp"

namespace gpumem::cli {
namespace {

// A pseudo-terminal pair; the other end is what a program writing to a terminal holds.
class PseudoTerminal {
 public:
  PseudoTerminal() {
    main_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (main_ < 0 || ::grantpt(main_) != 0 || ::unlockpt(main_) != 0) return;
    other_ = ::open(::ptsname(main_), O_RDWR | O_NOCTTY);
  }
  ~PseudoTerminal() {
    if (other_ >= 0) ::close(other_);
    if (main_ >= 0) ::close(main_);
  }
  int fd() const { return other_; }
  void resize(unsigned short columns) {
    winsize size{};
    size.ws_row = 24;
    size.ws_col = columns;
    ::ioctl(main_, TIOCSWINSZ, &size);
  }

 private:
  int main_ = -1;
  int other_ = -1;
};

class Pipe {
 public:
  Pipe() {
    if (::pipe(ends_) != 0) ends_[0] = ends_[1] = -1;
  }
  ~Pipe() {
    ::close(ends_[0]);
    ::close(ends_[1]);
  }
  int fd() const { return ends_[1]; }

 private:
  int ends_[2];
};

TEST(OutputStyle, WidthIsTheTerminalsThenColumnsThen80) {
  PseudoTerminal terminal;
  ASSERT_GE(terminal.fd(), 0);
  ::setenv("COLUMNS", "100", 1);
  terminal.resize(132);
  EXPECT_EQ(output_width(terminal.fd()), 132u);  // the terminal's own, not a stale $COLUMNS
  terminal.resize(90);
  EXPECT_EQ(output_width(terminal.fd()), 90u);  // read again: resizing works
  terminal.resize(0);                           // a terminal that does not know its size
  EXPECT_EQ(output_width(terminal.fd()), 100u);
  ::unsetenv("COLUMNS");
  EXPECT_EQ(output_width(terminal.fd()), 80u);
}

TEST(OutputStyle, APipeHasNoWidthUnlessColumnsIsANumber) {
  Pipe pipe;
  ::unsetenv("COLUMNS");
  EXPECT_EQ(output_width(pipe.fd()), std::nullopt);
  ::setenv("COLUMNS", "120", 1);
  EXPECT_EQ(output_width(pipe.fd()), 120u);
  for (const char* junk : {"", "wide", "-5", "0", "80x"}) {
    ::setenv("COLUMNS", junk, 1);
    EXPECT_EQ(output_width(pipe.fd()), std::nullopt) << junk;
  }
}

TEST(OutputStyle, ColourOnlyOnATerminalWithoutNoColor) {
  PseudoTerminal terminal;
  Pipe pipe;
  ASSERT_GE(terminal.fd(), 0);
  ::setenv("TERM", "xterm-256color", 1);
  ::unsetenv("NO_COLOR");
  EXPECT_TRUE(output_style(terminal.fd()).colour);
  EXPECT_FALSE(output_style(pipe.fd()).colour);
  ::setenv("NO_COLOR", "", 1);  // empty: no-color.org says it does not count
  EXPECT_TRUE(output_style(terminal.fd()).colour);
  ::setenv("NO_COLOR", "1", 1);
  EXPECT_FALSE(output_style(terminal.fd()).colour);
  ::unsetenv("NO_COLOR");
  ::setenv("TERM", "dumb", 1);
  EXPECT_FALSE(output_style(terminal.fd()).colour);
}

TEST(OutputStyle, UnicodeOnlyInAUtf8Locale) {
  Pipe pipe;
  ::unsetenv("LC_ALL");
  ::unsetenv("LC_CTYPE");
  ::setenv("LANG", "C.UTF-8", 1);
  EXPECT_TRUE(output_style(pipe.fd()).unicode);
  ::setenv("LC_ALL", "C", 1);  // LC_ALL first
  EXPECT_FALSE(output_style(pipe.fd()).unicode);
  ::setenv("LC_ALL", "POSIX", 1);
  EXPECT_FALSE(output_style(pipe.fd()).unicode);
  ::unsetenv("LC_ALL");
  ::setenv("LC_CTYPE", "C", 1);
  EXPECT_FALSE(output_style(pipe.fd()).unicode);
  // Named but not installed here: taken by its name.
  ::setenv("LC_CTYPE", "xx_XX.UTF-8", 1);
  EXPECT_TRUE(output_style(pipe.fd()).unicode);
}

}  // namespace
}  // namespace gpumem::cli
