#include "protocol/request_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bloomproxy::protocol {
namespace {

using namespace std::string_literals;

// ----------------------------------------------------------------------------------------------
// Harness: a connection that receives the input in pieces and drains every complete command after
// each piece, the way the proxy calls the parser.

struct Parsed {
  std::vector<std::string> args;
  std::string raw;
  bool is_inline = false;

  bool operator==(const Parsed& other) const {
    return args == other.args && raw == other.raw && is_inline == other.is_inline;
  }
};

struct Outcome {
  std::vector<Parsed> commands;
  std::string error;    // parser.error() if a call returned kError
  size_t leftover = 0;  // bytes of an incomplete command at the end
  size_t expected = 0;  // parser.expected_size() at the end

  bool operator==(const Outcome& other) const {
    return commands == other.commands && error == other.error && leftover == other.leftover &&
           expected == other.expected;
  }
};

std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Parsed& p) {
  os << (p.is_inline ? "inline[" : "multibulk[");
  for (size_t i = 0; i < p.args.size(); ++i)
    os << (i ? ", " : "") << '"' << Escape(p.args[i]) << '"';
  return os << "] raw=\"" << Escape(p.raw) << '"';
}

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{commands:";
  for (const Parsed& p : o.commands) os << "\n  " << p;
  return os << "\n error=\"" << o.error << "\" leftover=" << o.leftover
            << " expected=" << o.expected << "}";
}

struct Options {
  ParserLimits limits;
  bool authenticated = true;
};

Parsed Copy(const Command& cmd) {
  Parsed p;
  for (std::string_view a : cmd.args) p.args.emplace_back(a);
  p.raw = std::string(cmd.raw);
  p.is_inline = cmd.is_inline;
  return p;
}

// Feeds `input` cut at the sorted offsets `cuts`.
Outcome Feed(std::string_view input, const std::vector<size_t>& cuts, const Options& opt = {}) {
  Outcome out;
  RequestParser parser(opt.limits);
  Command cmd;
  std::string pending;
  size_t fed = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t until = i < cuts.size() ? cuts[i] : input.size();
    pending.append(input.substr(fed, until - fed));
    fed = until;
    while (true) {
      size_t consumed = 12345;
      const ParseStatus status = parser.Parse(pending, opt.authenticated, &consumed, &cmd);
      if (status == ParseStatus::kError) {
        out.error = parser.error();
        EXPECT_FALSE(out.error.empty());
        return out;
      }
      EXPECT_LE(consumed, pending.size());
      if (status == ParseStatus::kNeedMore) {
        EXPECT_TRUE(cmd.args.empty());
        pending.erase(0, consumed);
        break;
      }
      EXPECT_GT(consumed, 0u);
      EXPECT_FALSE(cmd.args.empty());
      if (!cmd.raw.empty()) {
        // raw is the command's own bytes, ending where the command ends.
        EXPECT_EQ(cmd.raw.data() + cmd.raw.size(), pending.data() + consumed);
        EXPECT_GE(cmd.raw.data(), pending.data());
        EXPECT_EQ(cmd.raw[0], '*');
        EXPECT_FALSE(cmd.is_inline);
        // And parses back to the same command on its own.
        RequestParser again(opt.limits);
        Command cmd2;
        size_t consumed2 = 0;
        EXPECT_EQ(again.Parse(cmd.raw, opt.authenticated, &consumed2, &cmd2), ParseStatus::kOk);
        EXPECT_EQ(consumed2, cmd.raw.size());
        EXPECT_EQ(Copy(cmd2), Copy(cmd));
      }
      out.commands.push_back(Copy(cmd));
      pending.erase(0, consumed);
    }
  }
  out.leftover = pending.size();
  out.expected = parser.expected_size();
  return out;
}

Outcome Whole(std::string_view input, const Options& opt = {}) { return Feed(input, {}, opt); }

// Parses `input` whole, one byte at a time, and (if it is small) split in two at every point and
// in three at many, and checks that every way gives the same outcome, which it returns.
Outcome Check(std::string_view input, const Options& opt = {}) {
  const Outcome whole = Whole(input, opt);
  std::vector<size_t> cuts;
  for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(Feed(input, cuts, opt), whole) << "one byte at a time: \"" << Escape(input) << '"';
  if (input.size() <= 2048) {
    for (size_t i = 1; i < input.size(); ++i) {
      EXPECT_EQ(Feed(input, {i}, opt), whole) << "split at " << i << ": \"" << Escape(input) << '"';
    }
  }
  if (input.size() <= 256) {
    for (size_t i = 1; i < input.size(); ++i) {
      for (size_t j = i + 1; j < input.size(); j += 3) {
        EXPECT_EQ(Feed(input, {i, j}, opt), whole) << "split at " << i << "," << j;
      }
    }
  }
  return whole;
}

Parsed Multibulk(std::vector<std::string> args, std::string raw) {
  return Parsed{std::move(args), std::move(raw), false};
}
Parsed NonCanonical(std::vector<std::string> args) { return Parsed{std::move(args), "", false}; }
Parsed Inline(std::vector<std::string> args) { return Parsed{std::move(args), "", true}; }

std::string Encode(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// The outcome of a single command that parses whole and fully consumed.
Outcome One(Parsed p) {
  Outcome o;
  o.commands.push_back(std::move(p));
  return o;
}

Outcome Error(std::string text, std::vector<Parsed> before = {}) {
  Outcome o;
  o.commands = std::move(before);
  o.error = std::move(text);
  return o;
}

Outcome Partial(size_t leftover, size_t expected = 0, std::vector<Parsed> before = {}) {
  Outcome o;
  o.commands = std::move(before);
  o.leftover = leftover;
  o.expected = expected;
  return o;
}

const std::string kInvalidMbulk = "ERR Protocol error: invalid multibulk length";
const std::string kInvalidBulk = "ERR Protocol error: invalid bulk length";
const std::string kUnauthMbulk = "ERR Protocol error: unauthenticated multibulk length";
const std::string kUnauthBulk = "ERR Protocol error: unauthenticated bulk length";
const std::string kUnbalanced = "ERR Protocol error: unbalanced quotes in request";
const std::string kTooBigInline = "ERR Protocol error: too big inline request";
const std::string kTooBigMbulk = "ERR Protocol error: too big mbulk count string";
const std::string kTooBigBulk = "ERR Protocol error: too big bulk count string";

// ----------------------------------------------------------------------------------------------
// StringToInt64

TEST(StringToInt64Test, AcceptsCanonicalDecimals) {
  const std::pair<std::string_view, int64_t> cases[] = {
      {"0", 0},
      {"1", 1},
      {"-1", -1},
      {"10", 10},
      {"1234567890", 1234567890},
      {"9223372036854775807", std::numeric_limits<int64_t>::max()},
      {"-9223372036854775807", -std::numeric_limits<int64_t>::max()},
      {"-9223372036854775808", std::numeric_limits<int64_t>::min()},
  };
  for (const auto& [text, value] : cases) {
    int64_t v = 42;
    EXPECT_TRUE(StringToInt64(text, &v)) << text;
    EXPECT_EQ(v, value) << text;
  }
}

TEST(StringToInt64Test, RejectsEverythingElse) {
  const std::string_view cases[] = {
      "",
      "-",
      "+1",
      "01",
      "00",
      "-0",
      "-01",
      " 1",
      "1 ",
      "1a",
      "a1",
      "0x10",
      "1.0",
      "1e3",
      "9223372036854775808",
      "-9223372036854775809",
      "18446744073709551615",
      "18446744073709551616",
      "99999999999999999999",
      "100000000000000000000",
      "-100000000000000000000",
      std::string_view("1\0", 2),
      std::string_view("\0", 1),
      "--1",
      "1-",
  };
  for (std::string_view text : cases) {
    int64_t v = 42;
    EXPECT_FALSE(StringToInt64(text, &v)) << '"' << Escape(text) << '"';
    EXPECT_EQ(v, 42) << "output touched on failure";
  }
}

// ----------------------------------------------------------------------------------------------
// Multibulk

TEST(RequestParserTest, MultibulkCommand) {
  const std::string in = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  EXPECT_EQ(Check(in), One(Multibulk({"SET", "key", "value"}, in)));
}

TEST(RequestParserTest, MultibulkArgumentsViewTheInput) {
  const std::string in = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(in, true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, in.size());
  ASSERT_EQ(cmd.args.size(), 2u);
  EXPECT_EQ(cmd.args[0].data(), in.data() + 8);
  EXPECT_EQ(cmd.args[1].data(), in.data() + 17);
  EXPECT_EQ(cmd.raw.data(), in.data());
  EXPECT_EQ(cmd.raw.size(), in.size());
  EXPECT_FALSE(cmd.is_inline);
  EXPECT_TRUE(cmd.owned.empty());
}

TEST(RequestParserTest, MultibulkIsBinarySafe) {
  const std::vector<std::string> args = {
      "SET", "a\0b"s, "x\r\ny", "\r\n", "\r\n\r\n$3\r\n*1\r\n", "\xff\x80\x00"s, "\n", "\r"};
  const std::string in = Encode(args);
  EXPECT_EQ(Check(in), One(Multibulk(args, in)));
}

TEST(RequestParserTest, MultibulkEmptyBulk) {
  const std::string in = "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n";
  EXPECT_EQ(Check(in), One(Multibulk({"SET", "", ""}, in)));
}

TEST(RequestParserTest, ZeroAndNegativeCountsAreSkipped) {
  const std::string ping = "*1\r\n$4\r\nPING\r\n";
  const std::string in = "*0\r\n*-1\r\n*-10\r\n*-9223372036854775808\r\n" + ping;
  EXPECT_EQ(Check(in), One(Multibulk({"PING"}, ping)));

  // Only empty commands: all consumed, no command.
  EXPECT_EQ(Check("*0\r\n*-1\r\n\r\n\n   \r\n\t\n"), Partial(0));
}

TEST(RequestParserTest, SkippedBytesAreConsumedBeforeAPartialCommand) {
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  std::string buf = "*0\r\n\r\n*1\r\n$4\r\nPI";
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 6u);
  EXPECT_EQ(parser.expected_size(), 14u);  // "*1\r\n$4\r\nPING\r\n"
  buf.erase(0, consumed);
  buf += "NG\r\n*0\r\n";
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, 14u);
  EXPECT_EQ(cmd.raw, "*1\r\n$4\r\nPING\r\n");
  buf.erase(0, consumed);
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 4u);
  EXPECT_TRUE(cmd.args.empty());

  EXPECT_EQ(parser.Parse("", true, &consumed, &cmd), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 0u);
}

TEST(RequestParserTest, ExpectedSize) {
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  std::string buf = "*2\r\n$3\r\nSET\r\n";
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kNeedMore);
  EXPECT_EQ(parser.expected_size(), 0u);  // the next header is not known yet
  buf += "$100\r\nab";
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 0u);
  // "*2\r\n$3\r\nSET\r\n" (13) + "$100\r\n" (6) + 100 + "\r\n".
  EXPECT_EQ(parser.expected_size(), 121u);
  buf += std::string(98, 'x') + "\r\n";
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, 121u);
  EXPECT_EQ(parser.expected_size(), 0u);
  EXPECT_EQ(cmd.args[1], "ab" + std::string(98, 'x'));

  EXPECT_EQ(Whole("*1\r\n$5\r\nab"), Partial(10, 15));
}

TEST(RequestParserTest, BigBulkFedInSmallPiecesIsNotRescanned) {
  // 16 MiB in 512-byte reads: 32768 calls. Rescanning the bulk on each would take minutes.
  const std::string payload(16 << 20, 'v');
  const std::string in = Encode({"SET", "k", payload});
  RequestParser parser;
  Command cmd;
  std::string buf;
  buf.reserve(in.size());
  size_t calls = 0;
  for (size_t off = 0; off < in.size(); off += 512) {
    buf.append(in, off, 512);
    size_t consumed = 0;
    const ParseStatus status = parser.Parse(buf, true, &consumed, &cmd);
    ++calls;
    EXPECT_EQ(consumed, status == ParseStatus::kOk ? in.size() : 0u);
    if (status == ParseStatus::kOk) {
      ASSERT_EQ(off + 512 >= in.size(), true);
      EXPECT_EQ(cmd.args.size(), 3u);
      EXPECT_EQ(cmd.args[2].size(), payload.size());
      EXPECT_EQ(cmd.raw.size(), in.size());
    } else {
      ASSERT_EQ(status, ParseStatus::kNeedMore);
      if (buf.size() > 30) {
        EXPECT_EQ(parser.expected_size(), in.size());
      }
    }
  }
  EXPECT_GT(calls, 30000u);
}

TEST(RequestParserTest, NonCanonicalFramingIsAcceptedWithoutRaw) {
  // Redis skips the two bytes after the '\r' of a header line's '\r' and after bulk data
  // without looking at them.
  EXPECT_EQ(Check("*1\r\n$3\r\nfooXY"), One(NonCanonical({"foo"})));
  EXPECT_EQ(Check("*1\rX$3\r\nfoo\r\n"), One(NonCanonical({"foo"})));
  EXPECT_EQ(Check("*1\r\n$3\rXfoo\r\n"), One(NonCanonical({"foo"})));
  EXPECT_EQ(Check("*2\r\n$1\r\na\n\r$1\r\nb\r\n"), One(NonCanonical({"a", "b"})));
  EXPECT_EQ(Check("*1\r\r$0\r\r\r\r"), One(NonCanonical({""})));
  // A canonical command after a non-canonical one gets its raw.
  const std::string ok = "*1\r\n$1\r\nb\r\n";
  const Outcome two = Check("*1\r\n$1\r\na\r\r" + ok);
  ASSERT_EQ(two.commands.size(), 2u);
  EXPECT_EQ(two.commands[0], NonCanonical({"a"}));
  EXPECT_EQ(two.commands[1], Multibulk({"b"}, ok));
}

TEST(RequestParserTest, HeaderNeedsOneByteAfterItsCarriageReturn) {
  EXPECT_EQ(Whole("*1\r"), Partial(3));
  EXPECT_EQ(Whole("*1\r\n$3\r"), Partial(7));
  EXPECT_EQ(Whole("*1\r\n$3\r\nfoo\r"), Partial(12, 13));
  // The length is not checked before the line is complete.
  EXPECT_EQ(Whole("*x\r"), Partial(3));
  EXPECT_EQ(Whole("*x\r\n"), Error(kInvalidMbulk));
}

TEST(RequestParserTest, FirstByteChoosesTheRequestType) {
  // Only '*' starts a multibulk; "$1" is an inline word.
  EXPECT_EQ(Check("$1\r\n$1\r\n"), (Outcome{{Inline({"$1"}), Inline({"$1"})}, "", 0, 0}));
  EXPECT_EQ(Check(" *1\r\n"), One(Inline({"*1"})));
}

TEST(RequestParserTest, Pipeline) {
  const std::string get = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n";
  const std::string set = "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n";
  const std::string in =
      get + "PING\r\n" + "\r\n" + set + "*0\r\n" + "ECHO \"a b\"\n" + get + "*1\r\n$4\r\nPI";
  Outcome expected;
  expected.commands = {Multibulk({"GET", "a"}, get), Inline({"PING"}),
                       Multibulk({"SET", "a", "b"}, set), Inline({"ECHO", "a b"}),
                       Multibulk({"GET", "a"}, get)};
  expected.leftover = 10;
  expected.expected = 14;
  EXPECT_EQ(Check(in), expected);
}

TEST(RequestParserTest, ManyArguments) {
  std::vector<std::string> args;
  for (int i = 0; i < 3000; ++i) args.push_back(std::to_string(i));
  const std::string in = Encode(args);
  EXPECT_EQ(Check(in), One(Multibulk(args, in)));
}

TEST(RequestParserTest, CommandStorageIsReused) {
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  const std::string big = Encode({"A", "B", "C", "D", "E", "F"});
  ASSERT_EQ(parser.Parse(big, true, &consumed, &cmd), ParseStatus::kOk);
  const size_t capacity = cmd.args.capacity();
  const std::string small = Encode({"A", "B"});
  ASSERT_EQ(parser.Parse(small, true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(cmd.args.size(), 2u);
  EXPECT_EQ(cmd.args.capacity(), capacity);
  cmd.Clear();
  EXPECT_TRUE(cmd.args.empty());
  EXPECT_TRUE(cmd.raw.empty());
  EXPECT_EQ(cmd.args.capacity(), capacity);
}

// ----------------------------------------------------------------------------------------------
// Inline

TEST(RequestParserTest, InlineWords) {
  EXPECT_EQ(Check("SET key value\r\n"), One(Inline({"SET", "key", "value"})));
  EXPECT_EQ(Check("SET key value\n"), One(Inline({"SET", "key", "value"})));
  EXPECT_EQ(Check("  SET   key\t value  \r\n"), One(Inline({"SET", "key", "value"})));
  // Only one '\r' is part of the line end; another one is a separator.
  EXPECT_EQ(Check("PING\r\r\n"), One(Inline({"PING"})));
  EXPECT_EQ(Check("a\rb\n"), One(Inline({"a", "b"})));
  // '\v' and '\f' are skipped between words but do not end one, as in sdssplitargs.
  EXPECT_EQ(Check("\v\fa\vb \fc\n"), One(Inline({"a\vb", "c"})));
  EXPECT_EQ(Check("\"a\"\vb\n"), One(Inline({"a", "b"})));
  // Bytes >= 0x80 are ordinary.
  EXPECT_EQ(Check("\xc3\xa9t\xc3\xa9 \xff\n"), One(Inline({"\xc3\xa9t\xc3\xa9", "\xff"})));
}

TEST(RequestParserTest, InlineQuotes) {
  EXPECT_EQ(Check("SET \"hello world\" 'single quoted'\r\n"),
            One(Inline({"SET", "hello world", "single quoted"})));
  EXPECT_EQ(Check("SET k \"\"\n"), One(Inline({"SET", "k", ""})));
  EXPECT_EQ(Check("SET k ''\n"), One(Inline({"SET", "k", ""})));
  // A quote inside a word opens a quoted part of the same word.
  EXPECT_EQ(Check("a\"b c\" d'e f'\n"), One(Inline({"ab c", "de f"})));
  // Quotes of the other kind are plain inside quotes.
  EXPECT_EQ(Check("\"it's\" 'say \"hi\"'\n"), One(Inline({"it's", "say \"hi\""})));
  // The closing quote may be followed by the end of the line, a space, tab or CR.
  EXPECT_EQ(Check("\"a\"\t\"b\"\r\"c\"\r\n"), One(Inline({"a", "b", "c"})));
}

TEST(RequestParserTest, InlineEscapes) {
  EXPECT_EQ(Check("\"\\x41\\x4a\\x4A\\xfF\\x00\"\n"), One(Inline({"AJJ\xff\x00"s})));
  EXPECT_EQ(Check("\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"\n"), One(Inline({"\n\r\t\b\a\\\"q"})));
  // \x without two hex digits is just an escaped 'x'.
  EXPECT_EQ(Check("\"\\x4G\" \"\\x\" \"\\x4\"\n"), One(Inline({"x4G", "x", "x4"})));
  // Single quotes know only \'.
  EXPECT_EQ(Check("'it\\'s' 'a\\nb' 'c\\\\d'\n"), One(Inline({"it's", "a\\nb", "c\\\\d"})));
  // Escapes are not special outside quotes.
  EXPECT_EQ(Check("a\\x41 b\\n\n"), One(Inline({"a\\x41", "b\\n"})));
}

TEST(RequestParserTest, InlineWordsViewTheInputUnlessUnescaped) {
  const std::string in = "SET \"k\" \"a\\x41\" 'b\\'c' d\"e\" \"\\\"x\"\r\n";
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(in, true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, in.size());
  EXPECT_TRUE(cmd.is_inline);
  EXPECT_TRUE(cmd.raw.empty());
  ASSERT_EQ(cmd.args.size(), 6u);
  EXPECT_EQ(cmd.args[0], "SET");
  EXPECT_EQ(cmd.args[1], "k");
  EXPECT_EQ(cmd.args[2], "aA");
  EXPECT_EQ(cmd.args[3], "b'c");
  EXPECT_EQ(cmd.args[4], "de");
  EXPECT_EQ(cmd.args[5], "\"x");  // the escaped quote starts the word: still a view
  const auto in_input = [&](std::string_view a) {
    return a.data() >= in.data() && a.data() + a.size() <= in.data() + in.size();
  };
  EXPECT_TRUE(in_input(cmd.args[0]));
  EXPECT_TRUE(in_input(cmd.args[1]));
  EXPECT_FALSE(in_input(cmd.args[2]));
  EXPECT_FALSE(in_input(cmd.args[3]));
  EXPECT_FALSE(in_input(cmd.args[4]));
  EXPECT_TRUE(in_input(cmd.args[5]));
  EXPECT_EQ(cmd.owned.size(), 3u);
}

TEST(RequestParserTest, ManyUnescapedInlineWordsStayValid) {
  // Views into cmd->owned must survive its growth (short strings live inside the vector).
  std::string in;
  std::vector<std::string> expected;
  for (int i = 0; i < 100; ++i) {
    in += "\"\\x41" + std::to_string(i) + "\" ";
    expected.push_back("A" + std::to_string(i));
  }
  in += "\n";
  EXPECT_EQ(Whole(in), One(Inline(expected)));
}

TEST(RequestParserTest, BlankLinesAreSkipped) {
  EXPECT_EQ(Check("\r\n"), Partial(0));
  EXPECT_EQ(Check("\n\n   \r\n\t\t\nPING\n"), One(Inline({"PING"})));
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse("\r\n\nPING\r\n", true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, 9u);
  EXPECT_EQ(Check("PING\r"), Partial(5));
  EXPECT_EQ(Check("PING"), Partial(4));
}

// ----------------------------------------------------------------------------------------------
// Protocol errors: the inputs of Redis's tests/unit/protocol.tcl and its exact replies.

TEST(RequestParserTest, RedisProtocolTests) {
  const std::pair<std::string, std::string> cases[] = {
      {"*20000000000\r\n", kInvalidMbulk},
      {"*3000000000\r\n", kInvalidMbulk},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "ERR Protocol error: expected '$', got 'f'"},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", kInvalidBulk},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", kInvalidBulk},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", kInvalidBulk},
      {"*1\r\nfoo\r\n", "ERR Protocol error: expected '$', got 'f'"},
      {"*1\r\n$-1\r\n", kInvalidBulk},
      {"set \"\"\"test-key\"\"\" test-value\r\nping\r\n", kUnbalanced},
  };
  for (const auto& [in, error] : cases) {
    EXPECT_EQ(Check(in), Error(error)) << Escape(in);
  }
}

TEST(RequestParserTest, InvalidMultibulkLength) {
  for (std::string in : {"*\r\n", "*x\r\n", "*01\r\n", "*+1\r\n", "* 1\r\n", "*1 \r\n", "*-0\r\n",
                         "*2147483648\r\n", "*9223372036854775808\r\n", "*1.0\r\n"}) {
    EXPECT_EQ(Check(in), Error(kInvalidMbulk)) << Escape(in);
  }
  // INT_MAX itself is fine (and costs nothing until the arguments come).
  EXPECT_EQ(Whole("*2147483647\r\n$1\r\n"), Partial(17, 20));
}

TEST(RequestParserTest, InvalidBulkLength) {
  for (std::string header : {"$\r\n", "$x\r\n", "$01\r\n", "$+1\r\n", "$ 1\r\n", "$-0\r\n",
                             "$-1\r\n", "$536870913\r\n", "$9223372036854775808\r\n"}) {
    EXPECT_EQ(Check("*2\r\n$3\r\nGET\r\n" + header), Error(kInvalidBulk)) << Escape(header);
  }
  // proto-max-bulk-len itself is fine.
  EXPECT_EQ(Whole("*1\r\n$536870912\r\n"), Partial(16, 16 + 536870912 + 2));
}

TEST(RequestParserTest, ExpectedDollar) {
  EXPECT_EQ(Check("*1\r\n+OK\r\n"), Error("ERR Protocol error: expected '$', got '+'"));
  EXPECT_EQ(Check("*2\r\n$1\r\na\r\n*1\r\n"), Error("ERR Protocol error: expected '$', got '*'"));
  // Redis replaces CR and LF in the reply with spaces.
  EXPECT_EQ(Check("*1\r\n\r\n"), Error("ERR Protocol error: expected '$', got ' '"));
  EXPECT_EQ(Check("*1\r\n\n$1\r\n"), Error("ERR Protocol error: expected '$', got ' '"));
  EXPECT_EQ(Check("*1\r\n\xff\r\n"), Error("ERR Protocol error: expected '$', got '\xff'"));
}

TEST(RequestParserTest, UnbalancedQuotes) {
  for (std::string in : {"\"unterminated\n", "'x\n", "\"a\"b\n", "'a'b\n", "\"abc\\\"\n",
                         "SET \"a\\\"\r\n", "\"\n", "'\n", "a\"b\n", "\"a\"\"b\"\n", "'a\\'\n"}) {
    EXPECT_EQ(Check(in), Error(kUnbalanced)) << Escape(in);
  }
  // The error comes only once the line is complete, after the commands before it.
  EXPECT_EQ(Check("PING\n\"x\n"), Error(kUnbalanced, {Inline({"PING"})}));
  EXPECT_EQ(Check("\"x"), Partial(2));
}

TEST(RequestParserTest, TooBigLines) {
  const std::string big(128 * 1024, 'A');
  EXPECT_EQ(Check(big), Error(kTooBigInline));
  EXPECT_EQ(Check("*" + std::string(128 * 1024, '1')), Error(kTooBigMbulk));
  EXPECT_EQ(Check("*1\r\n$" + std::string(128 * 1024, '1')), Error(kTooBigBulk));
  EXPECT_EQ(Check("*1\r\n" + big), Error(kTooBigBulk));

  // The limit is on the bytes of the line so far: 64 KiB wait, one more is an error.
  const size_t limit = ParserLimits().max_inline_len;
  EXPECT_EQ(Whole(std::string(limit, 'A')), Partial(limit));
  EXPECT_EQ(Whole(std::string(limit + 1, 'A')), Error(kTooBigInline));
  EXPECT_EQ(Whole("*" + std::string(limit - 1, '1')), Partial(limit));
  EXPECT_EQ(Whole("*" + std::string(limit, '1')), Error(kTooBigMbulk));
  // For a bulk header, counted from the header's start.
  EXPECT_EQ(Whole("*1\r\n$" + std::string(limit - 1, '1')), Partial(limit + 4));
  EXPECT_EQ(Whole("*1\r\n$" + std::string(limit, '1')), Error(kTooBigBulk));

  // Once the '\r' is there Redis does not check the length: the line waits for one more byte
  // and then fails on its content.
  const std::string long_count = "*" + std::string(70000, '1') + "\r";
  EXPECT_EQ(Whole(long_count), Partial(long_count.size()));
  EXPECT_EQ(Whole(long_count + "\n"), Error(kInvalidMbulk));
  // A long line with its newline is one (long) inline command.
  EXPECT_EQ(Whole(big + "\n"), One(Inline({big})));
}

TEST(RequestParserTest, ConfigurableLineLimit) {
  Options opt;
  opt.limits.max_inline_len = 8;
  EXPECT_EQ(Whole("12345678", opt), Partial(8));
  EXPECT_EQ(Whole("123456789", opt), Error(kTooBigInline));
  EXPECT_EQ(Whole("1234567890\n", opt), One(Inline({"1234567890"})));
  // ... unless a read leaves it without its end past the limit, as in Redis.
  EXPECT_EQ(Feed("1234567890\n", {9}, opt), Error(kTooBigInline));
  EXPECT_EQ(Feed("1234567890\n", {8}, opt), One(Inline({"1234567890"})));
  EXPECT_EQ(Whole("*123456789", opt), Error(kTooBigMbulk));
  EXPECT_EQ(Whole("*1\r\n$12345678", opt), Error(kTooBigBulk));
  EXPECT_EQ(Whole("*1\r\n$1234567", opt), Partial(12));
}

TEST(RequestParserTest, ProtocolDesyncRegression) {
  // Redis's "Protocol desync regression test": garbage starting with a NUL byte must end in a
  // protocol error. Redis searches line ends with strchr(), which stops at the NUL, so such a
  // line never ends and hits the size limit.
  std::string payload;
  for (int i = 0; i < 70; ++i) payload += std::string(1024, 'A') + "\n";
  EXPECT_EQ(Whole("\0"s + payload), Error(kTooBigInline));
  EXPECT_EQ(Whole("*\0"s + payload), Error(kTooBigMbulk));
  EXPECT_EQ(Whole("$\0"s + payload), Error(kTooBigInline));
  EXPECT_EQ(Whole("*1\r\n$\0"s + payload), Error(kTooBigBulk));
  // Short ones wait.
  EXPECT_EQ(Check("\0PING\n"s), Partial(6));
  EXPECT_EQ(Check("PI\0NG\r\nPING\r\n"s), Partial(13));
  EXPECT_EQ(Check("*1\0\r\n$4\r\nPING\r\n"s), Partial(15));
  EXPECT_EQ(Check("*1\r\n$4\0\r\nPING\r\n"s), Partial(15));
  EXPECT_EQ(Check("*1\r\nx\0\r\n"s), Partial(8));
  // A NUL after the line end is data.
  EXPECT_EQ(Check("*1\r\0$1\r\n\0\r\n"s), One(NonCanonical({"\0"s})));
  EXPECT_EQ(Check("PING\n\0"s), (Outcome{{Inline({"PING"})}, "", 1, 0}));
}

TEST(RequestParserTest, ErrorIsStickyUntilReset) {
  RequestParser parser;
  Command cmd;
  size_t consumed = 99;
  ASSERT_EQ(parser.Parse("*x\r\n", true, &consumed, &cmd), ParseStatus::kError);
  EXPECT_EQ(parser.error(), kInvalidMbulk);
  EXPECT_EQ(parser.Parse("PING\r\n", true, &consumed, &cmd), ParseStatus::kError);
  EXPECT_EQ(parser.error(), kInvalidMbulk);
  EXPECT_TRUE(cmd.args.empty());
  parser.Reset();
  EXPECT_TRUE(parser.error().empty());
  ASSERT_EQ(parser.Parse("PING\r\n", true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, 6u);
}

TEST(RequestParserTest, ResetForgetsAPartialCommand) {
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse("*2\r\n$3\r\nGET\r\n$10\r\nab", true, &consumed, &cmd),
            ParseStatus::kNeedMore);
  EXPECT_NE(parser.expected_size(), 0u);
  parser.Reset();
  EXPECT_EQ(parser.expected_size(), 0u);
  ASSERT_EQ(parser.Parse("PING\r\n", true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(cmd.args.size(), 1u);
}

// ----------------------------------------------------------------------------------------------
// Limits

TEST(RequestParserTest, UnauthenticatedLimits) {
  Options unauth;
  unauth.authenticated = false;

  // Ten arguments of 16 KiB are fine.
  std::vector<std::string> ten(10, std::string(16384, 'x'));
  ten[0] = "AUTH";
  const std::string ok = Encode(ten);
  EXPECT_EQ(Whole(ok, unauth), One(Multibulk(ten, ok)));

  // Eleven are refused as soon as the count is read.
  EXPECT_EQ(Check("*11\r\n", unauth), Error(kUnauthMbulk));
  EXPECT_EQ(Check("*20\r\n", unauth), Error(kUnauthMbulk));
  EXPECT_EQ(Check("*100\r\n", unauth), Error(kUnauthMbulk));
  // As is a bulk of 16385, as soon as its header is read.
  EXPECT_EQ(Check("*1\r\n$16385\r\n", unauth), Error(kUnauthBulk));
  EXPECT_EQ(Check("*1\r\n$100000000\r\n", unauth), Error(kUnauthBulk));
  EXPECT_EQ(Whole("*1\r\n$16384\r\n", unauth), Partial(12, 12 + 16384 + 2));

  // Invalid lengths are reported as invalid first, as in Redis.
  EXPECT_EQ(Check("*20000000000\r\n", unauth), Error(kInvalidMbulk));
  EXPECT_EQ(Check("*1\r\n$-1\r\n", unauth), Error(kInvalidBulk));
  EXPECT_EQ(Check("*1\r\n$600000000\r\n", unauth), Error(kInvalidBulk));
  // Empty commands are fine.
  EXPECT_EQ(Check("*-100\r\n*0\r\n", unauth), Partial(0));

  // Authenticated clients have no such limits.
  std::vector<std::string> eleven(11, "a");
  std::string eleven_in = Encode(eleven);
  EXPECT_EQ(Whole(eleven_in), One(Multibulk(eleven, eleven_in)));
  std::vector<std::string> fat = {"SET", "k", std::string(16385, 'v')};
  EXPECT_EQ(Whole(Encode(fat)), One(Multibulk(fat, Encode(fat))));

  // Inline requests are not limited, as in Redis.
  std::string many;
  std::vector<std::string> words;
  for (int i = 0; i < 20; ++i) {
    many += "w" + std::to_string(i) + " ";
    words.push_back("w" + std::to_string(i));
  }
  EXPECT_EQ(Check(many + "\r\n", unauth), One(Inline(words)));
  const std::string word(20000, 'y');
  EXPECT_EQ(Whole("SET k " + word + "\r\n", unauth), One(Inline({"SET", "k", word})));
}

TEST(RequestParserTest, ConfigurableLimits) {
  Options opt;
  opt.limits.max_bulk_len = 10;
  EXPECT_EQ(Check("*1\r\n$11\r\n", opt), Error(kInvalidBulk));
  const std::string ok = Encode({"0123456789"});
  EXPECT_EQ(Check(ok, opt), One(Multibulk({"0123456789"}, ok)));

  opt.authenticated = false;
  opt.limits.unauth_max_multibulk_len = 2;
  opt.limits.unauth_max_bulk_len = 3;
  EXPECT_EQ(Check("*3\r\n", opt), Error(kUnauthMbulk));
  EXPECT_EQ(Check("*2\r\n$4\r\n", opt), Error(kUnauthBulk));
  // max_bulk_len is checked first.
  EXPECT_EQ(Check("*2\r\n$11\r\n", opt), Error(kInvalidBulk));
  const std::string small = Encode({"abc", "de"});
  EXPECT_EQ(Check(small, opt), One(Multibulk({"abc", "de"}, small)));
}

TEST(RequestParserTest, AuthenticationCanChangeBetweenCommands) {
  RequestParser parser;
  Command cmd;
  size_t consumed = 0;
  const std::string auth = Encode({"AUTH", "pw"});
  const std::string big = Encode(std::vector<std::string>(11, "x"));
  std::string buf = auth + big;
  ASSERT_EQ(parser.Parse(buf, false, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(consumed, auth.size());
  buf.erase(0, consumed);
  ASSERT_EQ(parser.Parse(buf, true, &consumed, &cmd), ParseStatus::kOk);
  EXPECT_EQ(cmd.args.size(), 11u);
}

}  // namespace
}  // namespace bloomproxy::protocol
