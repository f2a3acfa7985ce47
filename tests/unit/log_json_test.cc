// Log line layouts (proxy/server/log_format.h): JSON string escaping, the JSON and text lines, RFC
// 3339 timestamps and the masking of secrets.
#include "proxy/server/log_format.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

namespace bloomproxy::proxy {
namespace {

using conf::LogLevel;

std::string Json(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

// True if `s` is well-formed UTF-8 (RFC 3629), checked independently of the code under test.
bool IsUtf8(const std::string& s) {
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    const auto c = static_cast<unsigned char>(*p);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || end - p < n) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < n; ++i) {
      const auto d = static_cast<unsigned char>(p[i]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += n;
  }
  return true;
}

TEST(LogJsonTest, PlainTextIsQuoted) {
  EXPECT_EQ(Json("hello world"), "\"hello world\"");
  EXPECT_EQ(Json(""), "\"\"");
}

TEST(LogJsonTest, QuoteAndBackslashAreEscaped) {
  EXPECT_EQ(Json("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(Json("C:\\dir\\"), "\"C:\\\\dir\\\\\"");
  EXPECT_EQ(Json("/"), "\"/\"");  // JSON allows '/' unescaped
}

TEST(LogJsonTest, ControlCharactersAreEscaped) {
  EXPECT_EQ(Json("a\nb\rc\td\be\ff"), "\"a\\nb\\rc\\td\\be\\ff\"");
  EXPECT_EQ(Json(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(Json(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(Json("\x1b[31mred"), "\"\\u001b[31mred\"");
}

TEST(LogJsonTest, ValidUtf8IsCopied) {
  EXPECT_EQ(Json("caf\xc3\xa9"), "\"caf\xc3\xa9\"");            // é, 2 bytes
  EXPECT_EQ(Json("\xe2\x82\xac"), "\"\xe2\x82\xac\"");          // €, 3 bytes
  EXPECT_EQ(Json("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");  // U+1F600, 4 bytes
  EXPECT_EQ(Json("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF, the last
  EXPECT_EQ(Json("\xed\x9f\xbf"), "\"\xed\x9f\xbf\"");          // U+D7FF, below surrogates
}

TEST(LogJsonTest, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(Json("a\xff"
                 "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(Json("\x80"), "\"\\ufffd\"");                                   // lone continuation
  EXPECT_EQ(Json("\xe2\x82"), "\"\\ufffd\\ufffd\"");                        // truncated at the end
  EXPECT_EQ(Json("\xe2\x82x"), "\"\\ufffd\\ufffdx\"");                      // truncated mid-string
  EXPECT_EQ(Json("\xc0\xaf"), "\"\\ufffd\\ufffd\"");                        // overlong '/'
  EXPECT_EQ(Json("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");             // overlong, 3 bytes
  EXPECT_EQ(Json("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");             // surrogate U+D800
  EXPECT_EQ(Json("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
  EXPECT_EQ(Json("\xf5\x80"), "\"\\ufffd\\ufffd\"");
  // A quote after a broken sequence is still escaped (not swallowed as a continuation byte).
  EXPECT_EQ(Json("\xc3\""), "\"\\ufffd\\\"\"");
}

TEST(LogJsonTest, AnyBytesGiveOneValidJsonString) {
  std::mt19937 rng(11);
  for (int round = 0; round < 2000; ++round) {
    std::string in(rng() % 40, '\0');
    for (char& c : in) c = static_cast<char>(rng() & 0xFF);
    const std::string out = Json(in);
    ASSERT_TRUE(IsUtf8(out)) << round;
    ASSERT_GE(out.size(), 2u);
    ASSERT_EQ(out.front(), '"');
    ASSERT_EQ(out.back(), '"');
    // Inside, every quote is escaped, and no raw control character is left.
    bool escaped = false;
    for (size_t i = 1; i + 1 < out.size(); ++i) {
      const auto c = static_cast<unsigned char>(out[i]);
      ASSERT_GE(c, 0x20) << round;
      ASSERT_NE(c, 0x7F) << round;
      if (!escaped && c == '"') FAIL() << "unescaped quote in " << out;
      escaped = !escaped && c == '\\';
    }
    ASSERT_FALSE(escaped) << "dangling backslash in " << out;
  }
}

TEST(LogJsonTest, TimestampsAreRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(Rfc3339Utc(0, 0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(Rfc3339Utc(1795503446, 157), "2026-11-24T06:57:26.157Z");
  EXPECT_EQ(Rfc3339Utc(1795503446, 7), "2026-11-24T06:57:26.007Z");
}

TEST(LogJsonTest, JsonLineHasTheBaseKeysThenTheFields) {
  const std::vector<std::string> no_secrets;
  EXPECT_EQ(
      FormatJsonLine(LogLevel::kWarning, 42, 1795503446, 157, "upstream \"x\" down",
                     {{"upstream", "127.0.0.1:6379"}, {"client_id", uint64_t{7}}}, no_secrets),
      "{\"ts\":\"2026-11-24T06:57:26.157Z\",\"level\":\"warning\",\"pid\":42,"
      "\"msg\":\"upstream \\\"x\\\" down\",\"upstream\":\"127.0.0.1:6379\","
      "\"client_id\":7}\n");
  EXPECT_EQ(FormatJsonLine(LogLevel::kDebug, 1, 0, 0, "m", {}, no_secrets),
            "{\"ts\":\"1970-01-01T00:00:00.000Z\",\"level\":\"debug\",\"pid\":1,\"msg\":\"m\"}\n");
}

TEST(LogJsonTest, LevelNames) {
  const std::vector<std::string> none;
  const std::pair<LogLevel, const char*> levels[] = {{LogLevel::kDebug, "debug"},
                                                     {LogLevel::kVerbose, "verbose"},
                                                     {LogLevel::kNotice, "notice"},
                                                     {LogLevel::kWarning, "warning"}};
  for (const auto& [level, name] : levels) {
    const std::string line = FormatJsonLine(level, 1, 0, 0, "m", {}, none);
    EXPECT_NE(line.find(std::string("\"level\":\"") + name + "\""), std::string::npos) << line;
  }
}

TEST(LogJsonTest, FieldsCannotRepeatOrReplaceBaseKeys) {
  const std::string line =
      FormatJsonLine(LogLevel::kNotice, 1, 0, 0, "m",
                     {{"msg", "forged"}, {"client", "a:1"}, {"client", "b:2"}, {"n", -3}}, {});
  EXPECT_EQ(line,
            "{\"ts\":\"1970-01-01T00:00:00.000Z\",\"level\":\"notice\",\"pid\":1,\"msg\":\"m\","
            "\"client\":\"a:1\",\"n\":-3}\n");
}

TEST(LogJsonTest, FieldValuesAndKeysAreEscaped) {
  const std::string line =
      FormatJsonLine(LogLevel::kNotice, 1, 0, 0, "m", {{"user", "a\"b\n\xff"}}, {});
  EXPECT_NE(line.find("\"user\":\"a\\\"b\\n\\ufffd\""), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line, whatever the message holds
}

TEST(LogJsonTest, MessageWithNewlinesStaysOneJsonLine) {
  const std::string line = FormatJsonLine(LogLevel::kNotice, 1, 0, 0, "a\nb\r\nc", {}, {});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_NE(line.find("\"msg\":\"a\\nb\\r\\nc\""), std::string::npos);
}

TEST(LogJsonTest, SecretsAreMaskedInMessageAndFields) {
  const std::vector<std::string> secrets = {"hunter2-long", "hunter2"};  // longest first
  const std::string line =
      FormatJsonLine(LogLevel::kNotice, 1, 0, 0, "AUTH failed for user 'hunter2-long' and hunter2!",
                     {{"user", "xhunter2x"}, {"client", "1.2.3.4:5"}}, secrets);
  EXPECT_EQ(line.find("hunter2"), std::string::npos) << line;
  EXPECT_NE(line.find("\"msg\":\"AUTH failed for user '(redacted)' and (redacted)!\""),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("\"user\":\"x(redacted)x\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"client\":\"1.2.3.4:5\""), std::string::npos) << line;
}

TEST(LogJsonTest, SecretsWithJsonSpecialCharactersAreMaskedBeforeEscaping) {
  const std::vector<std::string> secrets = {"pa\"ss\\wd"};
  const std::string line =
      FormatJsonLine(LogLevel::kNotice, 1, 0, 0, "x pa\"ss\\wd y", {{"f", "pa\"ss\\wd"}}, secrets);
  EXPECT_EQ(line.find("pa\\\"ss"), std::string::npos) << line;
  EXPECT_NE(line.find("\"msg\":\"x (redacted) y\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"f\":\"(redacted)\""), std::string::npos) << line;
}

TEST(LogJsonTest, MaskSecrets) {
  EXPECT_EQ(MaskSecrets("a secret and a secret", {"secret"}), "a (redacted) and a (redacted)");
  EXPECT_EQ(MaskSecrets("secretsecret", {"secret"}), "(redacted)(redacted)");
  EXPECT_EQ(MaskSecrets("nothing here", {"secret"}), "nothing here");
  // Too short to mask without blanking ordinary words.
  EXPECT_EQ(MaskSecrets("abc", {"abc"}), "abc");
  EXPECT_EQ(MaskSecrets("abcd", {"abcd"}), "(redacted)");
  // A secret that the mask itself contains does not loop.
  EXPECT_EQ(MaskSecrets("redacted", {"redacted"}), "(redacted)");
}

TEST(LogTextTest, TextLineIsRedisFormat) {
  const std::string line =
      FormatTextLine(LogLevel::kNotice, 1234, 1795503446, 157, "ready to accept", {});
  EXPECT_TRUE(std::regex_match(
      line, std::regex("1234:P \\d\\d [A-Z][a-z][a-z] \\d{4} \\d\\d:\\d\\d:\\d\\d\\.157 \\* "
                       "ready to accept\n")))
      << line;
  const char marks[] = {'.', '-', '*', '#'};
  const LogLevel levels[] = {LogLevel::kDebug, LogLevel::kVerbose, LogLevel::kNotice,
                             LogLevel::kWarning};
  for (int i = 0; i < 4; ++i) {
    const std::string l = FormatTextLine(levels[i], 1, 0, 0, "m", {});
    EXPECT_EQ(l.substr(l.size() - 4), std::string(1, marks[i]) + " m\n") << l;
  }
}

TEST(LogTextTest, TextLineMasksSecrets) {
  const std::string line =
      FormatTextLine(LogLevel::kWarning, 1, 0, 0, "AUTH failed for user 's3cr3t!'", {"s3cr3t!"});
  EXPECT_EQ(line.find("s3cr3t"), std::string::npos) << line;
  EXPECT_NE(line.find("AUTH failed for user '(redacted)'"), std::string::npos) << line;
}

TEST(LogFormatTest, ParseLogFormat) {
  LogFormat f = LogFormat::kText;
  EXPECT_TRUE(ParseLogFormat("json", &f));
  EXPECT_EQ(f, LogFormat::kJson);
  EXPECT_TRUE(ParseLogFormat("text", &f));
  EXPECT_EQ(f, LogFormat::kText);
  EXPECT_FALSE(ParseLogFormat("JSONL", &f));
  EXPECT_EQ(f, LogFormat::kText);
}

}  // namespace
}  // namespace bloomproxy::proxy
