// The option table's typed rows, the environment (BLOOMPROXY_<NAME> for every option, its
// precedence between the file and the flags, --test-conf's sources) and reload's comparison.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "conf/loader.h"
#include "conf/options.h"
#include "conf/reload.h"

namespace bloomproxy::conf {
namespace {

using Env = std::map<std::string, std::string>;

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char path[] = "/tmp/bloomproxy_config_env_test_XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    path_ = path;
    Write(text);
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  void Write(const std::string& text) const {
    FILE* f = std::fopen(path_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

GetEnvFn Getenv(const Env& env) {
  return [&env](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? static_cast<const char*>(nullptr) : it->second.c_str();
  };
}

EnvNamesFn Names(const Env& env) {
  return [&env] {
    std::vector<std::string> names;
    for (const auto& [name, value] : env) names.push_back(name);
    return names;
  };
}

LoadResult Load(std::vector<std::string> args, const Env& env = {}) {
  args.insert(args.begin(), "bloomproxy");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return LoadOptions(static_cast<int>(args.size()), argv.data(), Getenv(env), Names(env));
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& e : errors) out += e + "\n";
  return out;
}

TEST(ConfigEnvTest, EnvironmentNames) {
  EXPECT_EQ(EnvironmentName("bf-error-rate"), "BLOOMPROXY_BF_ERROR_RATE");
  EXPECT_EQ(EnvironmentName("admin-port"), "BLOOMPROXY_ADMIN_PORT");
  EXPECT_EQ(EnvironmentName("tls-key-file-pass"), "BLOOMPROXY_TLS_KEY_FILE_PASS");
}

// Every kind of typed row, set from the environment alone.
TEST(ConfigEnvTest, EveryKindOfRowFromTheEnvironment) {
  Env env = {{"BLOOMPROXY_UPSTREAM", "h:1"},
             {"BLOOMPROXY_BF_ERROR_RATE", "0.05"},             // rate
             {"BLOOMPROXY_ADMIN_PORT", "9121"},                // port
             {"BLOOMPROXY_MAXCLIENTS", "77"},                  // int
             {"BLOOMPROXY_BF_INITIAL_CAPACITY", "5000"},       // int64
             {"BLOOMPROXY_CLIENT_OUTPUT_PAUSE", "16mb"},       // memory
             {"BLOOMPROXY_ANNOUNCE_IP", "::1"},                // address
             {"BLOOMPROXY_LOG_FORMAT", "json"},                // word
             {"BLOOMPROXY_TLS_AUTH_CLIENTS", "OPTIONAL"},      // word, any case
             {"BLOOMPROXY_TLS_SESSION_CACHING", "no"},         // yes/no
             {"BLOOMPROXY_LOGLEVEL", "warning"},               // custom
             {"BLOOMPROXY_BF_MODE", "forward"},                // custom enum
             {"BLOOMPROXY_TLS_PROTOCOLS", "TLSv1.2 TLSv1.3"},  // one argument, spaces kept
             {"BLOOMPROXY_DENY_COMMAND", "FLUSHALL"},
             {"BLOOMPROXY_USER", "alice 'pass word' +@read -keys"}};
  LoadResult r = Load({}, env);
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  const Options& o = r.options;
  EXPECT_EQ(o.bf_error_rate, 0.05);
  EXPECT_EQ(o.admin_port, 9121);
  EXPECT_EQ(o.maxclients, 77);
  EXPECT_EQ(o.bf_initial_capacity, 5000);
  EXPECT_EQ(o.client_output_pause, 16 * 1024 * 1024);
  EXPECT_EQ(o.announce_ip, "::1");
  EXPECT_EQ(o.log_format, "json");
  EXPECT_EQ(o.tls_auth_clients, "optional");
  EXPECT_FALSE(o.tls_session_caching);
  EXPECT_EQ(o.loglevel, LogLevel::kWarning);
  EXPECT_EQ(o.bf_mode, BfMode::kForward);
  EXPECT_EQ(o.tls_protocols, "TLSv1.2 TLSv1.3");
  EXPECT_EQ(o.denied_commands, std::vector<std::string>{"flushall"});
  ASSERT_EQ(o.users.size(), 1u);
  EXPECT_EQ(o.users[0].name, "alice");
  EXPECT_EQ(o.users[0].password, "pass word");
  EXPECT_EQ(o.users[0].rules, (std::vector<std::string>{"+@read", "-keys"}));
}

// A row's errors read the same from every source, prefixed with where the value came from.
TEST(ConfigEnvTest, TypedRowErrorsAreTheFilesAndTheFlags) {
  TempFile file(
      "bf-error-rate 2\nadmin-port 70000\nmaxclients 0\nlog-format xml\n"
      "bf-max-shard-bytes 1gb\nannounce-ip nohost\nupstream h:1\n");
  LoadResult f = Load({file.path()});
  const std::string p = file.path();
  EXPECT_EQ(Joined(f.errors), p + ":1: bf-error-rate: '2' is not an error rate in (0, 1)\n" + p +
                                  ":2: admin-port: '70000' is not a valid port\n" + p +
                                  ":3: maxclients: '0' must be at least 1\n" + p +
                                  ":4: log-format: 'xml' is not a log format (text, json)\n" + p +
                                  ":5: bf-max-shard-bytes: '1gb' is above the maximum of 512mb\n" +
                                  p + ":6: announce-ip: 'nohost' is not an IPv4 or IPv6 address\n");
  Env env = {{"BLOOMPROXY_BF_EXPANSION", "0"},
             {"BLOOMPROXY_UPSTREAM_KIND", "Redis"},  // upstream-kind is matched exactly
             {"BLOOMPROXY_TLS_SESSION_CACHING", "maybe"}};
  LoadResult e = Load({"--upstream", "h:1"}, env);
  EXPECT_EQ(Joined(e.errors),
            "BLOOMPROXY_UPSTREAM_KIND: 'Redis' is not an upstream kind (redis or "
            "sharding-proxy)\n"
            "BLOOMPROXY_BF_EXPANSION: '0' is out of range (1..32768)\n"
            "BLOOMPROXY_TLS_SESSION_CACHING: 'maybe' is not yes or no\n");
}

TEST(ConfigEnvTest, FlagsBeatEnvironmentBeatsFile) {
  TempFile file("upstream h:1\nmaxclients 10\nbf-error-rate 0.2\ntimeout 5\n");
  Env env = {{"BLOOMPROXY_MAXCLIENTS", "20"}, {"BLOOMPROXY_BF_ERROR_RATE", "0.3"}};
  LoadResult r = Load({file.path(), "--maxclients", "30"}, env);
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.maxclients, 30);      // flag
  EXPECT_EQ(r.options.bf_error_rate, 0.3);  // environment
  EXPECT_EQ(r.options.timeout, 5);          // file
  EXPECT_EQ(r.options.bf_expansion, 2);     // default

  // --test-conf: each value not at its default with where it came from, secrets hidden.
  env["BLOOMPROXY_REQUIREPASS"] = "hunter2";
  LoadResult t = Load({file.path(), "--maxclients", "30", "--test-conf"}, env);
  ASSERT_TRUE(t.errors.empty()) << Joined(t.errors);
  const std::string report = TestConfReport(t);
  EXPECT_NE(report.find("configuration OK"), std::string::npos) << report;
  EXPECT_NE(report.find("  upstream h:1 (" + file.path() + ":1)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  maxclients 30 (--maxclients)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  bf-error-rate 0.3 (env BLOOMPROXY_BF_ERROR_RATE)\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("  timeout 5 (" + file.path() + ":4)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  requirepass (set) (env BLOOMPROXY_REQUIREPASS)\n"), std::string::npos)
      << report;
  EXPECT_EQ(report.find("hunter2"), std::string::npos) << report;
  EXPECT_EQ(report.find("bf-expansion"), std::string::npos) << report;
  EXPECT_NE(TestConfReport(Load({"--upstream", "h:1"})).find("  upstream h:1 (--upstream)\n"),
            std::string::npos);
}

TEST(ConfigEnvTest, BfLayoutRulesFromFileEnvironmentAndFlags) {
  TempFile file(
      "upstream h:1\nbf-layout \"users:*\" guava 1000 0.01\n"
      "bf-layout bloom:* guava-unrounded 100 0.03 funnel utf16le expanding %s:cursor\n");
  Env env = {{"BLOOMPROXY_BF_LAYOUT", "ids:* guava-mitz32 0 0.5 funnel int64le"}};
  LoadResult r = Load({file.path(), "--bf-layout", "'a b' GUAVA 5 0.1"}, env);
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  using Rule = std::vector<std::string>;
  EXPECT_EQ(r.options.bf_layouts,
            (std::vector<Rule>{Rule{"users:*", "guava", "1000", "0.01"},
                               Rule{"bloom:*", "guava-unrounded", "100", "0.03", "funnel",
                                    "utf16le", "expanding", "%s:cursor"},
                               Rule{"ids:*", "guava-mitz32", "0", "0.5", "funnel", "int64le"},
                               Rule{"a b", "GUAVA", "5", "0.1"}}));
  const std::string report = TestConfReport(r);
  EXPECT_NE(report.find("  bf-layout users:* guava 1000 0.01; bloom:* guava-unrounded 100 0.03 "
                        "funnel utf16le expanding %s:cursor; ids:* guava-mitz32 0 0.5 funnel "
                        "int64le; a b GUAVA 5 0.1 (" +
                        file.path() + ":2, " + file.path() +
                        ":3, env BLOOMPROXY_BF_LAYOUT, --bf-layout)\n"),
            std::string::npos)
      << report;

  // Every rule is checked when it is read, wherever it comes from.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"k:* guava2 10 0.1",
       "'guava2' is not a layout (guava, guava-unrounded, guava-mitz32, guava-mitz32-unrounded)"},
      {"k:* guava -1 0.1", "'-1' is not a capacity (an integer >= 0)"},
      {"k:* guava 10 1", "'1' is not an error rate (between 0 and 1, exclusive)"},
      {"k:* guava 10 0", "'0' is not an error rate (between 0 and 1, exclusive)"},
      {"k:* guava 10 0.1 funnel utf32", "'utf32' is not a funnel (utf8, utf16le, int64le)"},
      {"k:* guava 10 0.1 funnel", "option 'funnel' has no value"},
      {"k:* guava 10 0.1 shards 2", "'shards' is not an option (funnel, expanding)"},
      {"k:* guava 1 0.99", "capacity and error rate give a filter of 0 bits"},
      {"k:* guava 9223372036854775807 0.000001", "the filter is too large for Guava"},
  };
  for (const auto& [rule, error] : bad) {
    LoadResult flag = Load({"--upstream", "h:1", "--bf-layout", rule});
    EXPECT_EQ(Joined(flag.errors), "--bf-layout: " + error + "\n") << rule;
    LoadResult var = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_BF_LAYOUT", rule}});
    EXPECT_EQ(Joined(var.errors), "BLOOMPROXY_BF_LAYOUT: " + error + "\n") << rule;
  }
  LoadResult few = Load({"--upstream", "h:1", "--bf-layout", "k:* guava 10"});
  EXPECT_EQ(Joined(few.errors),
            "--bf-layout: wrong number of arguments for 'bf-layout' (expected at least 4, got "
            "3)\n");
  TempFile bad_file("upstream h:1\nbf-layout k:* guava 10 2\n");
  LoadResult f = Load({bad_file.path()});
  EXPECT_EQ(
      Joined(f.errors),
      bad_file.path() + ":2: bf-layout: '2' is not an error rate (between 0 and 1, exclusive)\n");
}

TEST(ConfigEnvTest, RepeatableOptionsAddOneOccurrence) {
  TempFile file("upstream h:1\nuser alice a1\nuser bob b1 +get\ndeny-command keys\n");
  Env env = {{"BLOOMPROXY_USER", "bob b2"}, {"BLOOMPROXY_DENY_COMMAND", "FLUSHALL"}};
  LoadResult r = Load({file.path(), "--user", "carol:c1"}, env);
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  ASSERT_EQ(r.options.users.size(), 3u);
  EXPECT_EQ(r.options.users[1].name, "bob");
  EXPECT_EQ(r.options.users[1].password, "b2");  // the environment's bob replaces the file's
  EXPECT_TRUE(r.options.users[1].rules.empty());
  EXPECT_EQ(r.options.denied_commands, (std::vector<std::string>{"keys", "flushall"}));
  const std::string report = TestConfReport(r);
  EXPECT_NE(report.find("  user (set) (" + file.path() + ":2, " + file.path() +
                        ":3, env BLOOMPROXY_USER, --user)\n"),
            std::string::npos)
      << report;

  // One occurrence per variable: the config line's arguments, checked like the file's.
  LoadResult bad = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_USER", "alice"}});
  EXPECT_EQ(Joined(bad.errors),
            "BLOOMPROXY_USER: wrong number of arguments for 'user' (expected at least 2, got "
            "1)\n");
  LoadResult quotes = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_USER", "alice \"pw"}});
  EXPECT_EQ(Joined(quotes.errors), "BLOOMPROXY_USER: unbalanced quotes\n");
  LoadResult deny = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_DENY_COMMAND", "KEYS FLUSHALL"}});
  ASSERT_TRUE(deny.errors.empty()) << Joined(deny.errors);
  EXPECT_EQ(deny.options.denied_commands, std::vector<std::string>{"keys flushall"});
}

TEST(ConfigEnvTest, SecretsTakeTheWholeValueAndEmptyIsUnset) {
  TempFile file("upstream h:1\nrequirepass from-file\n");
  LoadResult r = Load({file.path()}, {{"BLOOMPROXY_REQUIREPASS", "it's \"a\" pass"},
                                      {"BLOOMPROXY_UPSTREAM_PASSWORD", ""},
                                      {"BLOOMPROXY_MAXCLIENTS", ""}});
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.requirepass, "it's \"a\" pass");
  EXPECT_EQ(r.options.upstream_password, "");
  EXPECT_EQ(r.options.maxclients, kDefaultMaxClients);
  EXPECT_EQ(TestConfReport(r).find("maxclients"), std::string::npos);
}

TEST(ConfigEnvTest, UnknownVariablesAreErrorsButTheScriptsOnesAreNot) {
  Env env = {{"BLOOMPROXY_UPSTREAM", "h:1"},
             {"BLOOMPROXY_PROT", "1"},
             {"BLOOMPROXY_BIN", "/x/bloomproxy"},
             {"BLOOMPROXY_ARGS", "--threads 2"},
             {"BLOOMPROXY_FUZZ", "ON"},
             {"BLOOMPROXY_TESTS", "ON"},
             {"BLOOMPROXY_port", "1"}};
  LoadResult r = Load({}, env);
  EXPECT_EQ(Joined(r.errors),
            "unknown option in environment: BLOOMPROXY_PROT\n"
            "unknown option in environment: BLOOMPROXY_port\n");
}

TEST(ConfigEnvTest, ReloadComparesAndKeepsRestartOnlyValues) {
  TempFile file("upstream h:1\nport 7001\nmaxclients 10\nloglevel notice\nuser alice a1\n");
  Env env = {{"BLOOMPROXY_TIMEOUT", "9"}};
  LoadResult start = Load({file.path(), "--bf-expansion", "4"}, env);
  ASSERT_TRUE(start.errors.empty()) << Joined(start.errors);
  EXPECT_EQ(start.options.command_line,
            (std::vector<std::string>{file.path(), "--bf-expansion", "4"}));

  // Nothing changed: no change.
  ReloadResult same = ReloadOptions(start.options, Getenv(env), Names(env));
  ASSERT_TRUE(same.errors.empty()) << Joined(same.errors);
  EXPECT_TRUE(same.changes.empty());

  file.Write(
      "upstream h:2\nport 7002\nmaxclients 20\nloglevel debug\nuser alice a2\n"
      "user bob b1\nbf-expansion 8\n");
  ReloadResult r = ReloadOptions(start.options, Getenv(env), Names(env));
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  std::vector<std::string> names;
  for (const OptionChange& c : r.changes) {
    names.push_back(std::string(c.name) + (c.reload == Reload::kLive ? ":live" : ":restart"));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"port:restart", "upstream:restart", "user:live",
                                             "maxclients:live", "loglevel:live"}));
  EXPECT_EQ(r.options.port, 7001);       // kept
  EXPECT_EQ(r.options.upstream, "h:1");  // kept
  EXPECT_EQ(r.options.maxclients, 20);   // applied
  EXPECT_EQ(r.options.loglevel, LogLevel::kDebug);
  EXPECT_EQ(r.options.users.size(), 2u);
  EXPECT_EQ(r.options.users[0].password, "a2");
  EXPECT_EQ(r.options.bf_expansion, 4);  // the flag still wins over the file
  EXPECT_EQ(r.options.timeout, 9);       // and the environment
  EXPECT_EQ(ShowOption("maxclients", r.options), "20");
  EXPECT_EQ(ShowOption("requirepass", r.options), "none");

  // A file that does not load: errors, nothing to apply.
  file.Write("upstream h:1\nmaxclients lots\n");
  ReloadResult bad = ReloadOptions(start.options, Getenv(env), Names(env));
  EXPECT_EQ(Joined(bad.errors), file.path() + ":2: maxclients: 'lots' is not a valid number\n");
  EXPECT_TRUE(bad.changes.empty());
}

// topk-mode, like the other families' modes: emulate by default, from the file, the environment
// or a flag, any case; anything else is refused, and a reload keeps the running value.
TEST(ConfigEnvTest, TopkMode) {
  LoadResult defaults = Load({"--upstream", "h:1"});
  ASSERT_TRUE(defaults.errors.empty()) << Joined(defaults.errors);
  EXPECT_EQ(defaults.options.topk_mode, BfMode::kEmulate);
  EXPECT_EQ(ShowOption("topk-mode", defaults.options), "emulate");

  TempFile file("upstream h:1\ntopk-mode FORWARD\n");
  LoadResult from_file = Load({file.path()});
  ASSERT_TRUE(from_file.errors.empty()) << Joined(from_file.errors);
  EXPECT_EQ(from_file.options.topk_mode, BfMode::kForward);
  EXPECT_EQ(ShowOption("topk-mode", from_file.options), "forward");
  // The other families keep their own modes.
  EXPECT_EQ(from_file.options.bf_mode, BfMode::kEmulate);
  EXPECT_EQ(from_file.options.cms_mode, BfMode::kEmulate);
  EXPECT_EQ(from_file.options.cf_mode, BfMode::kEmulate);

  LoadResult from_env = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_TOPK_MODE", "forward"}});
  ASSERT_TRUE(from_env.errors.empty()) << Joined(from_env.errors);
  EXPECT_EQ(from_env.options.topk_mode, BfMode::kForward);
  LoadResult flag_wins =
      Load({file.path(), "--topk-mode", "emulate"}, {{"BLOOMPROXY_TOPK_MODE", "forward"}});
  ASSERT_TRUE(flag_wins.errors.empty()) << Joined(flag_wins.errors);
  EXPECT_EQ(flag_wins.options.topk_mode, BfMode::kEmulate);

  TempFile bad("upstream h:1\ntopk-mode native\ntopk-mode\n");
  LoadResult refused = Load({bad.path()});
  EXPECT_EQ(Joined(refused.errors),
            bad.path() + ":2: topk-mode: 'native' is not a mode (emulate, forward)\n" + bad.path() +
                ":3: wrong number of arguments for 'topk-mode' (expected 1, got 0)\n");

  // Switching needs a restart: what existing sketches are depends on it.
  TempFile running("upstream h:1\n");
  LoadResult start = Load({running.path()});
  ASSERT_TRUE(start.errors.empty()) << Joined(start.errors);
  running.Write("upstream h:1\ntopk-mode forward\n");
  const Env none;
  ReloadResult r = ReloadOptions(start.options, Getenv(none), Names(none));
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(std::string(r.changes[0].name), "topk-mode");
  EXPECT_EQ(r.changes[0].reload, Reload::kRestart);
  EXPECT_EQ(r.options.topk_mode, BfMode::kEmulate);

  // The example file documents it with its default.
  const std::string here = __FILE__;  // .../tests/unit/config_env_test.cc
  std::ifstream in(here.substr(0, here.rfind("tests/unit/")) + "conf/bloomproxy.conf");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\ntopk-mode emulate\n"), std::string::npos);
}

// tdigest-mode, like the other families' modes: emulate by default, from the file, the environment
// or a flag, any case; anything else is refused, and a reload keeps the running value.
TEST(ConfigEnvTest, TdigestMode) {
  LoadResult defaults = Load({"--upstream", "h:1"});
  ASSERT_TRUE(defaults.errors.empty()) << Joined(defaults.errors);
  EXPECT_EQ(defaults.options.tdigest_mode, BfMode::kEmulate);
  EXPECT_EQ(ShowOption("tdigest-mode", defaults.options), "emulate");

  TempFile file("upstream h:1\ntdigest-mode FORWARD\n");
  LoadResult from_file = Load({file.path()});
  ASSERT_TRUE(from_file.errors.empty()) << Joined(from_file.errors);
  EXPECT_EQ(from_file.options.tdigest_mode, BfMode::kForward);
  EXPECT_EQ(ShowOption("tdigest-mode", from_file.options), "forward");
  // The other families keep their own modes.
  EXPECT_EQ(from_file.options.bf_mode, BfMode::kEmulate);
  EXPECT_EQ(from_file.options.cms_mode, BfMode::kEmulate);
  EXPECT_EQ(from_file.options.cf_mode, BfMode::kEmulate);
  EXPECT_EQ(from_file.options.topk_mode, BfMode::kEmulate);

  LoadResult from_env = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_TDIGEST_MODE", "forward"}});
  ASSERT_TRUE(from_env.errors.empty()) << Joined(from_env.errors);
  EXPECT_EQ(from_env.options.tdigest_mode, BfMode::kForward);
  LoadResult flag_wins =
      Load({file.path(), "--tdigest-mode", "emulate"}, {{"BLOOMPROXY_TDIGEST_MODE", "forward"}});
  ASSERT_TRUE(flag_wins.errors.empty()) << Joined(flag_wins.errors);
  EXPECT_EQ(flag_wins.options.tdigest_mode, BfMode::kEmulate);

  TempFile bad("upstream h:1\ntdigest-mode native\ntdigest-mode\n");
  LoadResult refused = Load({bad.path()});
  EXPECT_EQ(Joined(refused.errors),
            bad.path() + ":2: tdigest-mode: 'native' is not a mode (emulate, forward)\n" +
                bad.path() +
                ":3: wrong number of arguments for 'tdigest-mode' (expected 1, got 0)\n");

  // Switching needs a restart: what existing sketches are depends on it.
  TempFile running("upstream h:1\n");
  LoadResult start = Load({running.path()});
  ASSERT_TRUE(start.errors.empty()) << Joined(start.errors);
  running.Write("upstream h:1\ntdigest-mode forward\n");
  const Env none;
  ReloadResult r = ReloadOptions(start.options, Getenv(none), Names(none));
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(std::string(r.changes[0].name), "tdigest-mode");
  EXPECT_EQ(r.changes[0].reload, Reload::kRestart);
  EXPECT_EQ(r.options.tdigest_mode, BfMode::kEmulate);

  // The example file documents it with its default.
  const std::string here = __FILE__;  // .../tests/unit/config_env_test.cc
  std::ifstream in(here.substr(0, here.rfind("tests/unit/")) + "conf/bloomproxy.conf");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\ntdigest-mode emulate\n"), std::string::npos);
}

}  // namespace
}  // namespace bloomproxy::conf
