#include "proxy/server/log_format.h"

#include <cstdio>
#include <cstring>

#include "conf/loader.h"

namespace bloomproxy::proxy {
namespace {

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when its first byte does not
// start one (RFC 3629 table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t ValidUtf8Length(std::string_view s) {
  const auto byte = [&s](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b = byte(0);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < len || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return len;
}

void AppendEscapedAscii(std::string* out, unsigned char c) {
  switch (c) {
    case '"':
      *out += "\\\"";
      return;
    case '\\':
      *out += "\\\\";
      return;
    case '\b':
      *out += "\\b";
      return;
    case '\f':
      *out += "\\f";
      return;
    case '\n':
      *out += "\\n";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '\t':
      *out += "\\t";
      return;
  }
  if (c < 0x20 || c == 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", c);
    *out += buf;
    return;
  }
  *out += static_cast<char>(c);
}

bool HasKey(const std::vector<std::string_view>& keys, std::string_view key) {
  for (std::string_view k : keys) {
    if (k == key) return true;
  }
  return false;
}

}  // namespace

bool ParseLogFormat(std::string_view name, LogFormat* format) {
  if (name == "text") {
    *format = LogFormat::kText;
  } else if (name == "json") {
    *format = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

std::string MaskSecrets(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const std::string& secret : secrets) {
    if (secret.size() < kMinMaskedSecret) continue;
    for (size_t at = out.find(secret); at != std::string::npos;
         at = out.find(secret, at + kMasked.size())) {
      out.replace(at, secret.size(), kMasked);
    }
  }
  return out;
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->reserve(out->size() + s.size() + 2);
  *out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      AppendEscapedAscii(out, c);
      ++i;
      continue;
    }
    const size_t len = ValidUtf8Length(s.substr(i));
    if (len == 0) {
      *out += "\\ufffd";  // U+FFFD REPLACEMENT CHARACTER, one per invalid byte
      ++i;
      continue;
    }
    out->append(s.data() + i, len);
    i += len;
  }
  *out += '"';
}

std::string Rfc3339Utc(time_t sec, int msec) {
  struct tm tm;
  gmtime_r(&sec, &tm);
  char buf[40];
  size_t off = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + off, sizeof(buf) - off, ".%03dZ", msec);
  return buf;
}

std::string FormatTextLine(conf::LogLevel level, int pid, time_t sec, int msec,
                           std::string_view msg, const std::vector<std::string>& secrets) {
  static const char kMarks[] = {'.', '-', '*', '#'};
  struct tm tm;
  localtime_r(&sec, &tm);
  char when[64];
  size_t off = std::strftime(when, sizeof(when), "%d %b %Y %H:%M:%S.", &tm);
  std::snprintf(when + off, sizeof(when) - off, "%03d", msec);
  char head[96];
  std::snprintf(head, sizeof(head), "%d:P %s %c ", pid, when, kMarks[static_cast<int>(level)]);
  return head + MaskSecrets(msg, secrets) + "\n";
}

std::string FormatJsonLine(conf::LogLevel level, int pid, time_t sec, int msec,
                           std::string_view msg, LogFields fields,
                           const std::vector<std::string>& secrets) {
  std::string line = "{\"ts\":\"" + Rfc3339Utc(sec, msec) + "\",\"level\":\"" +
                     conf::LogLevelName(level) + "\",\"pid\":" + std::to_string(pid) + ",\"msg\":";
  AppendJsonString(&line, MaskSecrets(msg, secrets));
  std::vector<std::string_view> keys = {"ts", "level", "pid", "msg"};
  for (const LogField& f : fields) {
    if (f.key == nullptr || HasKey(keys, f.key)) continue;
    keys.emplace_back(f.key);
    line += ',';
    AppendJsonString(&line, f.key);
    line += ':';
    if (f.is_number) {
      line += std::to_string(f.number);
    } else {
      AppendJsonString(&line, MaskSecrets(f.text, secrets));
    }
  }
  line += "}\n";
  return line;
}

}  // namespace bloomproxy::proxy
