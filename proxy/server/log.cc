#include "proxy/server/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace bloomproxy::proxy {
namespace {

// The level is read on every LOG_* call (from every event loop), so it is an atomic and the
// check takes no lock; the rest is read only when a line is written, under g_mutex, which also
// keeps lines of concurrent loops whole.
std::atomic<int> g_level{static_cast<int>(conf::LogLevel::kNotice)};
std::mutex g_mutex;
LogFormat g_format = LogFormat::kText;
FILE* g_file = nullptr;              // nullptr: stderr
std::vector<std::string> g_secrets;  // longest first

void Write(conf::LogLevel level, LogFields fields, const char* fmt, va_list ap) {
  char msg[1024];
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  const int msec = static_cast<int>(tv.tv_usec / 1000);
  const int pid = static_cast<int>(getpid());

  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string line = g_format == LogFormat::kJson
                               ? FormatJsonLine(level, pid, tv.tv_sec, msec, msg, fields, g_secrets)
                               : FormatTextLine(level, pid, tv.tv_sec, msec, msg, g_secrets);
  std::fwrite(line.data(), 1, line.size(), g_file ? g_file : stderr);
}

}  // namespace

void SetLogLevel(conf::LogLevel level) { g_level.store(static_cast<int>(level)); }

void SetLogFormat(LogFormat format) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_format = format;
}

void SetLogSecrets(const conf::Options& options) {
  std::vector<std::string> secrets = {options.requirepass, options.upstream_password,
                                      options.tls_key_file_pass};
  for (const conf::User& user : options.users) secrets.push_back(user.password);
  secrets.erase(std::remove_if(secrets.begin(), secrets.end(),
                               [](const std::string& s) { return s.size() < kMinMaskedSecret; }),
                secrets.end());
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::lock_guard<std::mutex> lock(g_mutex);
  g_secrets = std::move(secrets);
}

void ApplyLogOptions(const conf::Options& options) {
  SetLogLevel(options.loglevel);
  LogFormat format = LogFormat::kText;
  ParseLogFormat(options.log_format, &format);  // the loader accepts only the two names
  SetLogFormat(format);
  SetLogSecrets(options);
}

bool SetLogFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return false;
  std::setvbuf(f, nullptr, _IOLBF, 0);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_file != nullptr) std::fclose(g_file);
  g_file = f;
  return true;
}

bool LogEnabled(conf::LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void Log(conf::LogLevel level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Write(level, {}, fmt, ap);
  va_end(ap);
}

void LogWith(conf::LogLevel level, LogFields fields, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Write(level, fields, fmt, ap);
  va_end(ap);
}

}  // namespace bloomproxy::proxy
