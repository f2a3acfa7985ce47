// auth-mode: its values, its default (auto) and how auto resolves (conf::ResolvedAuthMode).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conf/loader.h"
#include "conf/options.h"
#include "conf/reload.h"

namespace bloomproxy::conf {
namespace {

Options Parse(std::string_view text, std::vector<std::string>* errors) {
  Options options;
  ParseConfigText(text, "test.conf", &options, errors);
  return options;
}

TEST(ConfigTest, AuthModeValues) {
  EXPECT_EQ(Options{}.auth_mode, AuthMode::kAuto);
  EXPECT_EQ(ShowOption("auth-mode", Options{}), "auto");
  const std::pair<const char*, AuthMode> cases[] = {
      {"auto", AuthMode::kAuto}, {"PROXY", AuthMode::kProxy}, {"upstream", AuthMode::kUpstream}};
  for (const auto& [text, mode] : cases) {
    std::vector<std::string> errors;
    Options o = Parse(std::string("auth-mode ") + text + "\n", &errors);
    EXPECT_TRUE(errors.empty()) << text;
    EXPECT_EQ(o.auth_mode, mode) << text;
  }
  std::vector<std::string> errors;
  Parse("auth-mode users\n", &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'users' is not an auth mode (auto, proxy, upstream)"),
            std::string::npos)
      << errors[0];
}

TEST(ConfigTest, AuthModeAutoResolves) {
  Options o;
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kUpstream);  // nothing of the proxy's own
  o.upstream_password = "x";                            // the proxy's own login changes nothing
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kUpstream);
  o.requirepass = "pw";
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kProxy);
  o.requirepass.clear();
  o.users.push_back(User{"alice", "a", {}});
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kProxy);
  o.users.clear();
  o.upstream_cluster = {"h:1"};
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kProxy);
  o.upstream_cluster.clear();
  o.upstream_kind = "sharding-proxy";
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kProxy);
  // Explicit modes keep their meaning.
  o.auth_mode = AuthMode::kUpstream;
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kUpstream);
  o.upstream_kind = "redis";
  o.requirepass = "pw";
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kUpstream);
  o.auth_mode = AuthMode::kProxy;
  o.requirepass.clear();
  EXPECT_EQ(ResolvedAuthMode(o), AuthMode::kProxy);
}

}  // namespace
}  // namespace bloomproxy::conf
