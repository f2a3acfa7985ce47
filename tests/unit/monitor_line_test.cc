// MONITOR's lines (protocol/monitor_line.h): the sender, the database and the unquoted
// arguments, as Redis writes them; and what MONITOR shows of a command the proxy sends.
#include "protocol/monitor_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bloomproxy::protocol {
namespace {

TEST(MonitorLineTest, ClientOverTcp) {
  MonitorLine line;
  ASSERT_TRUE(
      ParseMonitorLine("+1795879541.346144 [3 127.0.0.1:40390] \"set\" \"x y\" \"v\"\r\n", &line));
  EXPECT_EQ(line.time, "1795879541.346144");
  EXPECT_EQ(line.db, 3);
  EXPECT_EQ(line.sender, "127.0.0.1:40390");
  EXPECT_EQ(line.args, (std::vector<std::string>{"set", "x y", "v"}));
  EXPECT_EQ(line.argc, 3u);
  EXPECT_FALSE(line.from_script());
  EXPECT_FALSE(line.from_unix_socket());
}

TEST(MonitorLineTest, ScriptIpv6AndUnixSenders) {
  MonitorLine line;
  ASSERT_TRUE(ParseMonitorLine("+1.5 [0 lua] \"get\" \"a\"\r\n", &line));
  EXPECT_TRUE(line.from_script());
  ASSERT_TRUE(ParseMonitorLine("+1.5 [12 [::1]:6000] \"PING\"\r\n", &line));
  EXPECT_EQ(line.sender, "[::1]:6000");
  EXPECT_EQ(line.db, 12);
  ASSERT_TRUE(ParseMonitorLine("1.5 [0 unix:/tmp/r s.sock] \"PING\"", &line));
  EXPECT_EQ(line.sender, "unix:/tmp/r s.sock");
  EXPECT_TRUE(line.from_unix_socket());
}

TEST(MonitorLineTest, EscapesAsSdscatrepr) {
  MonitorLine line;
  ASSERT_TRUE(ParseMonitorLine(
      "+1.0 [0 127.0.0.1:1] \"SET\" \"q\\\"\\\\\" \"a\\r\\n\\t\\a\\bz\" \"\\x00\\xff\\xAb\"\r\n",
      &line));
  ASSERT_EQ(line.args.size(), 4u);
  EXPECT_EQ(line.args[1], "q\"\\");
  EXPECT_EQ(line.args[2], "a\r\n\t\a\bz");
  EXPECT_EQ(line.args[3], std::string("\x00\xff\xab", 3));
  // An argument whose text holds `] "` does not confuse the sender.
  ASSERT_TRUE(ParseMonitorLine("+1.0 [0 127.0.0.1:1] \"SET\" \"x] \" \"] \\\"\"", &line));
  EXPECT_EQ(line.sender, "127.0.0.1:1");
  EXPECT_EQ(line.args, (std::vector<std::string>{"SET", "x] ", "] \""}));
}

TEST(MonitorLineTest, QuoteRoundTrips) {
  std::string every;
  for (int c = 0; c < 256; ++c) every.push_back(static_cast<char>(c));
  for (const std::string& arg : {std::string(), std::string("plain"), every}) {
    MonitorLine line;
    const std::string text = "+2.0 [0 10.0.0.1:7] \"EVAL\" " + QuoteMonitorArg(arg) + "\r\n";
    ASSERT_TRUE(ParseMonitorLine(text, &line)) << text;
    ASSERT_EQ(line.args.size(), 2u);
    EXPECT_EQ(line.args[1], arg);
  }
  EXPECT_EQ(QuoteMonitorArg("a\"b\\\n\x01"), "\"a\\\"b\\\\\\n\\x01\"");
}

TEST(MonitorLineTest, MaxArgsCountsTheRest) {
  MonitorLine line;
  ASSERT_TRUE(ParseMonitorLine("+1.0 [0 1.2.3.4:5] \"MSET\" \"a\" \"1\" \"b\" \"2\"", &line, 2));
  EXPECT_EQ(line.args, (std::vector<std::string>{"MSET", "a"}));
  EXPECT_EQ(line.argc, 5u);
}

TEST(MonitorLineTest, RefusesWhatIsNoMonitorLine) {
  MonitorLine line;
  for (const char* bad : {"+OK\r\n", "+PONG", "", "+1.0 [0 1.2.3.4:5]", "+1.0 [x 1:2] \"a\"",
                          "+1.0 [0 1:2] \"a", "+1.0 [0 1:2] \"a\"b\"", "+1.0 [0 1:2] \"\\x4\"",
                          "+1.0 (0 1:2) \"a\"", "+a.b [0 1:2] \"a\"", "+1.0 [0 ] \"a\""}) {
    EXPECT_FALSE(ParseMonitorLine(bad, &line)) << bad;
  }
}

TEST(MonitorLineTest, MonitorArgsRedactsAsRedis) {
  EXPECT_EQ(MonitorArgs({"AUTH", "secret"}), (std::vector<std::string>{"AUTH", "(redacted)"}));
  EXPECT_EQ(MonitorArgs({"auth", "user", "secret"}),
            (std::vector<std::string>{"auth", "(redacted)", "(redacted)"}));
  EXPECT_EQ(MonitorArgs({"HELLO", "3", "AUTH", "u", "p", "SETNAME", "auth"}),
            (std::vector<std::string>{"HELLO", "3", "AUTH", "(redacted)", "(redacted)", "SETNAME",
                                      "auth"}));
  EXPECT_EQ(MonitorArgs({"HELLO", "3"}), (std::vector<std::string>{"HELLO", "3"}));
  EXPECT_EQ(MonitorArgs({"INFO", "server"}), (std::vector<std::string>{"INFO", "server"}));
}

TEST(MonitorLineTest, CommandNamesAreCaseInsensitive) {
  EXPECT_TRUE(IsCommandName("EvalSha", "evalsha"));
  EXPECT_FALSE(IsCommandName("eval", "evalsha"));
}

}  // namespace
}  // namespace bloomproxy::protocol
