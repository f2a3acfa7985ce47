#include "conf/config_text.h"

namespace bloomproxy::conf {

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// Returns false on unbalanced quotes (or a closing quote not followed by a space).
bool SplitArgs(std::string_view line, std::vector<std::string>* args) {
  args->clear();
  // sdssplitargs works on a C string: the end, and any NUL, terminates the line.
  auto at = [line](size_t i) { return i < line.size() ? line[i] : '\0'; };
  size_t p = 0;
  while (true) {
    while (at(p) != '\0' && IsSpace(at(p))) ++p;
    if (at(p) == '\0') return true;
    bool in_double = false;
    bool in_single = false;
    bool done = false;
    std::string current;
    while (!done) {
      char c = at(p);
      if (in_double) {
        if (c == '\\' && at(p + 1) == 'x' && HexValue(at(p + 2)) >= 0 && HexValue(at(p + 3)) >= 0) {
          current.push_back(static_cast<char>(HexValue(at(p + 2)) * 16 + HexValue(at(p + 3))));
          p += 3;
        } else if (c == '\\' && at(p + 1) != '\0') {
          ++p;
          switch (at(p)) {
            case 'n':
              current.push_back('\n');
              break;
            case 'r':
              current.push_back('\r');
              break;
            case 't':
              current.push_back('\t');
              break;
            case 'b':
              current.push_back('\b');
              break;
            case 'a':
              current.push_back('\a');
              break;
            default:
              current.push_back(at(p));
              break;
          }
        } else if (c == '"') {
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          current.push_back(c);
        }
      } else if (in_single) {
        if (c == '\\' && at(p + 1) == '\'') {
          ++p;
          current.push_back('\'');
        } else if (c == '\'') {
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          current.push_back(c);
        }
      } else {
        switch (c) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
          case '\0':
            done = true;
            break;
          case '"':
            in_double = true;
            break;
          case '\'':
            in_single = true;
            break;
          default:
            current.push_back(c);
            break;
        }
      }
      if (at(p) != '\0') ++p;
    }
    args->push_back(std::move(current));
  }
}

std::string_view Trim(std::string_view s) {
  // As Redis trims config lines: " \t\r\n".
  constexpr std::string_view kBlanks = " \t\r\n";
  size_t begin = s.find_first_not_of(kBlanks);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(kBlanks);
  return s.substr(begin, end - begin + 1);
}

}  // namespace bloomproxy::conf
