// What a client's MONITOR through the proxy shows (proxy/client/monitor_filter.h): the registry of
// the proxy's connections (proxy/upstream/own_connections.h) and the lines the filter hides,
// without sockets.
#include "proxy/client/monitor_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "filters/common/sweep.h"
#include "filters/common/sweep_lock.lua.h"
#include "protocol/monitor_line.h"
#include "proxy/upstream/own_connections.h"

namespace bloomproxy::proxy {
namespace {

using Role = OwnConnections::Role;
constexpr std::string_view kUpstream = "127.0.0.1:6379";
constexpr std::string_view kSelf = "127.0.0.1:50000";

// A MONITOR line from `sender` running `args`.
std::string Line(std::string_view sender, std::vector<std::string> args, int db = 0) {
  std::string out = "+1795879541.301653 [" + std::to_string(db) + " " + std::string(sender) + "]";
  for (const std::string& a : args) out += " " + protocol::QuoteMonitorArg(a);
  return out + "\r\n";
}

class MonitorFilterTest : public ::testing::Test {
 protected:
  MonitorFilter Start() {
    return MonitorFilter(&registry_, std::string(kUpstream), std::string(kSelf), registry_.Now());
  }
  OwnConnections registry_;
};

TEST_F(MonitorFilterTest, BackgroundConnectionsAreHiddenWhole) {
  const uint64_t sweep = registry_.Opened(kUpstream, "127.0.0.1:50001", Role::kBackground);
  MonitorFilter f = Start();
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50001", {"INFO", "keyspace"}), 0));
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50001", {"SELECT", "0"}), 0));
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50001", {"EVALSHA", "0123", "1", "k"}), 0));
  EXPECT_FALSE(f.Shows(Line("lua", {"TYPE", "k"}), 0));  // the script's own
  EXPECT_TRUE(f.Shows(Line("127.0.0.1:50009", {"GET", "k"}), 0));
  EXPECT_TRUE(f.Shows(Line("lua", {"GET", "k"}), 0));  // follows a line that shows
  // Its last lines may come after it closed.
  registry_.Closed(sweep);
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50001", {"SCAN", "0"}), 0));
}

TEST_F(MonitorFilterTest, TheSameLocalPortToAnotherUpstreamIsSomeoneElse) {
  registry_.Opened("127.0.0.1:7001", "127.0.0.1:50001", Role::kBackground);
  MonitorFilter f = Start();
  EXPECT_TRUE(f.Shows(Line("127.0.0.1:50001", {"INFO", "keyspace"}), 0));
}

TEST_F(MonitorFilterTest, ClientConnectionsHideOnlyTheProxysCommands) {
  const uint64_t shared = registry_.Opened(kUpstream, "127.0.0.1:50002", Role::kClients);
  MonitorFilter f = Start();
  registry_.Sent(shared, protocol::MonitorArgs({"AUTH", "secret"}));
  registry_.Sent(shared, protocol::MonitorArgs({"INFO", "server"}));
  registry_.Sent(shared, protocol::MonitorArgs({"INFO", "replication"}));
  registry_.Sent(shared, protocol::MonitorArgs({"HELLO", "3"}));
  const std::string s = "127.0.0.1:50002";
  EXPECT_FALSE(f.Shows(Line(s, {"AUTH", "(redacted)"}), 0));
  // INFO server did not show (say, refused): INFO replication is still the proxy's.
  EXPECT_FALSE(f.Shows(Line(s, {"INFO", "replication"}), 0));
  EXPECT_FALSE(f.Shows(Line(s, {"HELLO", "3"}), 0));
  // Clients' commands, also the same ones again.
  EXPECT_TRUE(f.Shows(Line(s, {"SET", "k", "v"}), 0));
  EXPECT_TRUE(f.Shows(Line(s, {"INFO", "server"}), 0));
  EXPECT_TRUE(f.Shows(Line(s, {"HELLO", "3"}), 0));
  // The proxy answers clients' CLIENT SETNAME and CLIENT ID itself.
  EXPECT_FALSE(f.Shows(Line(s, {"CLIENT", "SETNAME", "worker"}), 0));
  EXPECT_FALSE(f.Shows(Line(s, {"client", "id"}), 0));
  EXPECT_TRUE(f.Shows(Line(s, {"CLIENT", "INFO"}), 0));
  // The PING before WAIT, and a client's PING after it.
  registry_.Sent(shared, protocol::MonitorArgs({"PING"}));
  EXPECT_FALSE(f.Shows(Line(s, {"PING"}), 0));
  EXPECT_TRUE(f.Shows(Line(s, {"WAIT", "1", "0"}), 0));
  EXPECT_TRUE(f.Shows(Line(s, {"PING"}), 0));
}

TEST_F(MonitorFilterTest, CommandsSentBeforeTheMonitorStartedShow) {
  const uint64_t pinned = registry_.Opened(kUpstream, "127.0.0.1:50003", Role::kClients);
  registry_.Sent(pinned, protocol::MonitorArgs({"PING"}));
  MonitorFilter f = Start();
  // It may have run before MONITOR did: a client's PING now is the client's.
  EXPECT_TRUE(f.Shows(Line("127.0.0.1:50003", {"PING"}), 0));
}

TEST_F(MonitorFilterTest, ANewConnectionAtTheSameAddressStartsOver) {
  const uint64_t a = registry_.Opened(kUpstream, "127.0.0.1:50004", Role::kClients);
  MonitorFilter f = Start();
  registry_.Sent(a, protocol::MonitorArgs({"PING"}));
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50004", {"PING"}), 0));
  registry_.Closed(a);
  const uint64_t b = registry_.Opened(kUpstream, "127.0.0.1:50004", Role::kClients);
  registry_.Sent(b, protocol::MonitorArgs({"PING"}));
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50004", {"PING"}), 0));
  registry_.Opened(kUpstream, "127.0.0.1:50004", Role::kBackground);
  EXPECT_FALSE(f.Shows(Line("127.0.0.1:50004", {"GET", "x"}), 0));
}

TEST_F(MonitorFilterTest, TheMonitorsOwnConnectionAlwaysShows) {
  registry_.Opened(kUpstream, kSelf, Role::kClients);
  MonitorFilter f = Start();
  EXPECT_TRUE(f.Shows(Line(kSelf, {"CLIENT", "SETNAME", "mine"}), 0));
  EXPECT_TRUE(f.Shows(Line(kSelf, {"CLIENT", "ID"}), 0));
}

TEST_F(MonitorFilterTest, AnyProxysSweepLockIsHiddenWithItsScriptLines) {
  MonitorFilter f = Start();
  const std::vector<std::string> eval = {"EVAL",  std::string(filters::lua::kSweepLock.body),
                                         "1",     std::string(filters::kSweepLockKey),
                                         "owner", "3000"};
  EXPECT_FALSE(f.Shows(Line("10.0.0.2:40000", eval), 0));
  EXPECT_FALSE(f.Shows(Line("lua", {"GET", std::string(filters::kSweepLockKey)}), 0));
  EXPECT_FALSE(f.Shows(Line("lua", {"SET", std::string(filters::kSweepLockKey), "o"}), 0));
  // Its sender carries clients' commands too.
  EXPECT_TRUE(f.Shows(Line("10.0.0.2:40000", {"EVAL", "return 1", "0"}), 0));
  EXPECT_TRUE(f.Shows(Line("lua", {"GET", "k"}), 0));
}

TEST_F(MonitorFilterTest, AnotherProxysPassIsHiddenAndThenItsSender) {
  MonitorFilter f = Start();
  const std::string other = "10.0.0.3:40001";
  EXPECT_TRUE(f.Shows(Line(other, {"AUTH", "(redacted)"}), 0));  // not known yet
  EXPECT_FALSE(f.Shows(Line(other, {"CLIENT", "SETNAME", std::string(kBackgroundName)}), 0));
  EXPECT_FALSE(f.Shows(Line(other, {"CLIENT", "NO-TOUCH", "ON"}), 1000));
  EXPECT_FALSE(f.Shows(Line(other, {"INFO", "keyspace"}), 1000));
  EXPECT_TRUE(f.Shows(Line("10.0.0.3:40002", {"INFO", "keyspace"}), 1000));
  // A proxy that does not name its pass's connection: known from the pass's commands.
  const std::string old = "10.0.0.4:40003";
  EXPECT_FALSE(f.Shows(Line(old, {"SCRIPT", "LOAD", std::string(filters::SweepScript())}), 0));
  EXPECT_FALSE(f.Shows(Line(old, {"SELECT", "2"}), 0));
  EXPECT_FALSE(f.Shows(
      Line(old, {"SCAN", "0", "MATCH", std::string(filters::kSweepMatch), "COUNT", "100"}), 0));
  EXPECT_FALSE(f.Shows(
      Line(old, {"EVALSHA", std::string(filters::SweepScriptSha1()), "2", "a", "b", "c", "1"}), 0));
  EXPECT_FALSE(f.Shows(Line("lua", {"EXISTS", "a"}), 0));
  // Forgotten after a minute of silence (its address may serve someone else by then).
  EXPECT_TRUE(f.Shows(Line(other, {"GET", "k"}), 1000 + MonitorFilter::kForgetSenderMs + 1));
}

TEST_F(MonitorFilterTest, UnixSocketSendersAreOnlyJudgedByContent) {
  MonitorFilter f = Start();
  const std::string unix_sender = "unix:/tmp/redis.sock";
  EXPECT_FALSE(f.Shows(Line(unix_sender, {"CLIENT", "SETNAME", std::string(kBackgroundName)}), 0));
  EXPECT_TRUE(f.Shows(Line(unix_sender, {"INFO", "keyspace"}), 0));
  EXPECT_FALSE(
      f.Shows(Line(unix_sender, {"SCAN", "0", "MATCH", std::string(filters::kSweepMatch)}), 0));
  EXPECT_TRUE(f.Shows(Line(unix_sender, {"SCAN", "0", "MATCH", "user:*"}), 0));
}

TEST_F(MonitorFilterTest, WhatIsNoMonitorLineShows) {
  MonitorFilter f = Start();
  EXPECT_TRUE(f.Shows("+OK\r\n", 0));
  EXPECT_TRUE(f.Shows("+1.0 garbage\r\n", 0));
}

TEST(OwnConnectionsTest, FindsBySenderAndKeepsTheLatestCommands) {
  OwnConnections r;
  const uint64_t id = r.Opened("u:1", "l:2", Role::kClients);
  OwnConnections::Sender s;
  EXPECT_FALSE(r.Find("u:1", "l:3", 0, &s));
  EXPECT_FALSE(r.Find("u:2", "l:2", 0, &s));
  for (size_t i = 0; i < OwnConnections::kMaxSent + 3; ++i) r.Sent(id, {"PING", std::to_string(i)});
  ASSERT_TRUE(r.Find("u:1", "l:2", 0, &s));
  EXPECT_EQ(s.id, id);
  ASSERT_EQ(s.sent.size(), OwnConnections::kMaxSent);
  EXPECT_EQ(s.sent.back().args[1], std::to_string(OwnConnections::kMaxSent + 2));
  const uint64_t later = r.Now();
  r.Sent(id, {"PING"});
  ASSERT_TRUE(r.Find("u:1", "l:2", later, &s));
  EXPECT_EQ(s.sent.size(), 1u);
  r.Sent(12345, {"PING"});  // no such connection: nothing
  EXPECT_EQ(r.size(), 1u);
}

TEST(OwnConnectionsTest, ClosedConnectionsStayKnownAWhile) {
  OwnConnections r;
  const uint64_t id = r.Opened("u:1", "l:2", Role::kBackground);
  r.Closed(id);
  OwnConnections::Sender s;
  ASSERT_TRUE(r.Find("u:1", "l:2", 0, &s));
  EXPECT_EQ(s.role, Role::kBackground);
  // A new one at that address takes its place.
  const uint64_t next = r.Opened("u:1", "l:2", Role::kClients);
  ASSERT_TRUE(r.Find("u:1", "l:2", 0, &s));
  EXPECT_EQ(s.id, next);
  EXPECT_EQ(s.role, Role::kClients);
  EXPECT_EQ(r.size(), 1u);
}

}  // namespace
}  // namespace bloomproxy::proxy
