#include "proxy/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace bloomproxy::proxy {
namespace {

conf::LogLevel g_level = conf::LogLevel::kNotice;
FILE* g_file = nullptr;

}  // namespace

void SetLogLevel(conf::LogLevel level) { g_level = level; }

bool SetLogFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return false;
  std::setvbuf(f, nullptr, _IOLBF, 0);
  g_file = f;
  return true;
}

bool LogEnabled(conf::LogLevel level) { return level >= g_level; }

void Log(conf::LogLevel level, const char* fmt, ...) {
  static const char kMarks[] = {'.', '-', '*', '#'};
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);

  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char when[64];
  size_t off = std::strftime(when, sizeof(when), "%d %b %Y %H:%M:%S.", &tm);
  std::snprintf(when + off, sizeof(when) - off, "%03d", static_cast<int>(tv.tv_usec / 1000));
  std::fprintf(g_file ? g_file : stderr, "%d:P %s %c %s\n", static_cast<int>(getpid()), when,
               kMarks[static_cast<int>(level)], msg);
}

}  // namespace bloomproxy::proxy
