#include "terminal.hpp"

#include <langinfo.h>
#include <locale.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gpumem::cli {
namespace {

std::optional<std::size_t> columns_variable() {
  const char* text = std::getenv("COLUMNS");
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value <= 0) return std::nullopt;  // not a width: ignored, as ls does
  return static_cast<std::size_t>(value);
}

// The first of LC_ALL, LC_CTYPE, LANG that is set, as setlocale() would choose.
std::string locale_name() {
  for (const char* variable : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return value;
  }
  return "C";
}

bool names_utf8(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.find("utf-8") != std::string::npos || name.find("utf8") != std::string::npos;
}

bool locale_is_utf8() {
  // The locale the environment names, without changing this process's own.
  locale_t locale = ::newlocale(LC_CTYPE_MASK, "", static_cast<locale_t>(nullptr));
  if (locale == static_cast<locale_t>(nullptr)) {
    // Named but not installed (en_US.UTF-8 without its locale files): go by its name.
    return names_utf8(locale_name());
  }
  const bool utf8 = std::strcmp(::nl_langinfo_l(CODESET, locale), "UTF-8") == 0;
  ::freelocale(locale);
  return utf8;
}

}  // namespace

std::optional<std::size_t> output_width(int fd) {
  const bool terminal = ::isatty(fd) == 1;
  if (terminal) {
    winsize size{};
    if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  }
  if (const auto columns = columns_variable()) return columns;
  if (terminal) return 80;
  return std::nullopt;
}

TextStyle output_style(int fd) {
  TextStyle style;
  style.unicode = locale_is_utf8();
  const char* no_colour = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  style.colour = ::isatty(fd) == 1 && (no_colour == nullptr || *no_colour == '\0') &&
                 !(term != nullptr && std::strcmp(term, "dumb") == 0);
  return style;
}

}  // namespace gpumem::cli
