#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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

// A config file in /tmp, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char path[] = "/tmp/bloomproxy_config_test_XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    path_ = path;
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs LoadOptions on `args` (argv[0] added) with a fake environment.
LoadResult Load(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "bloomproxy");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return LoadOptions(static_cast<int>(args.size()), argv.data(), [&env](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? static_cast<const char*>(nullptr) : it->second.c_str();
  });
}

Options Parse(std::string_view text, std::vector<std::string>* errors) {
  Options options;
  ParseConfigText(text, "test.conf", &options, errors);
  return options;
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& e : errors) out += e + "\n";
  return out;
}

// Parses one directive line and returns its single error ("" when none).
std::string ErrorOf(const std::string& line) {
  std::vector<std::string> errors;
  Parse(line, &errors);
  EXPECT_LE(errors.size(), 1u) << Joined(errors);
  return errors.empty() ? "" : errors[0];
}

void ExpectDefaults(const Options& o) {
  EXPECT_EQ(o.bind, "127.0.0.1");
  EXPECT_EQ(o.port, 6380);
  EXPECT_EQ(o.unixsocket, "");
  EXPECT_EQ(o.unixsocketperm, 0);
  EXPECT_EQ(o.upstream, "");
  EXPECT_EQ(o.upstream_user, "");
  EXPECT_EQ(o.upstream_password, "");
  EXPECT_EQ(o.upstream_connections, 2);
  EXPECT_EQ(o.pinned_pool_size, 64);
  EXPECT_EQ(o.connect_timeout_ms, 2000);
  EXPECT_EQ(o.reconnect_max_ms, 500);
  EXPECT_EQ(o.requirepass, "");
  EXPECT_EQ(o.auth_mode, AuthMode::kAuto);
  EXPECT_TRUE(o.users.empty());
  EXPECT_EQ(o.maxclients, 10000);
  EXPECT_EQ(o.timeout, 0);
  EXPECT_EQ(o.proto_max_bulk_len, 512LL * 1024 * 1024);
  EXPECT_EQ(o.client_query_buffer_limit, 1024LL * 1024 * 1024);
  EXPECT_EQ(o.loglevel, LogLevel::kNotice);
  EXPECT_EQ(o.logfile, "");
  EXPECT_EQ(o.shutdown_timeout_ms, 5000);
  EXPECT_EQ(o.config_file, "");
}

TEST(ConfigTest, Defaults) {
  ExpectDefaults(Options{});

  std::vector<std::string> errors;
  Options parsed = Parse("", &errors);
  EXPECT_TRUE(errors.empty());
  ExpectDefaults(parsed);

  // With no arguments at all the only problem is the missing upstream.
  LoadResult none = Load({});
  ExpectDefaults(none.options);
  ASSERT_EQ(none.errors.size(), 1u) << Joined(none.errors);
  EXPECT_NE(none.errors[0].find("no upstream"), std::string::npos);
  EXPECT_FALSE(none.help || none.version || none.test_conf);
}

TEST(ConfigTest, EveryDirective) {
  std::vector<std::string> errors;
  Options o = Parse(
      "bind ::1\n"
      "port 7000\n"
      "unixsocket /tmp/bp.sock\n"
      "unixsocketperm 770\n"
      "upstream redis.example:6390\n"
      "upstream-user proxy\n"
      "upstream-password s3cret\n"
      "upstream-connections 8\n"
      "pinned-pool-size 0\n"
      "connect-timeout-ms 150\n"
      "reconnect-max-ms 30000\n"
      "requirepass hunter2\n"
      "user alice pa55\n"
      "user bob \"b o b\" nocommands +GET +Config|Get -@all allcommands -keys -@Write\n"
      "maxclients 50\n"
      "timeout 300\n"
      "proto-max-bulk-len 2mb\n"
      "client-query-buffer-limit 64mb\n"
      "loglevel warning\n"
      "logfile /var/log/bp.log\n"
      "shutdown-timeout-ms 0\n",
      &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.bind, "::1");
  EXPECT_EQ(o.port, 7000);
  EXPECT_EQ(o.unixsocket, "/tmp/bp.sock");
  EXPECT_EQ(o.unixsocketperm, 0770);
  EXPECT_EQ(o.upstream, "redis.example:6390");
  EXPECT_EQ(o.upstream_user, "proxy");
  EXPECT_EQ(o.upstream_password, "s3cret");
  EXPECT_EQ(o.upstream_connections, 8);
  EXPECT_EQ(o.pinned_pool_size, 0);
  EXPECT_EQ(o.connect_timeout_ms, 150);
  EXPECT_EQ(o.reconnect_max_ms, 30000);
  EXPECT_EQ(o.requirepass, "hunter2");
  ASSERT_EQ(o.users.size(), 2u);
  EXPECT_EQ(o.users[0].name, "alice");
  EXPECT_EQ(o.users[0].password, "pa55");
  EXPECT_EQ(o.users[1].name, "bob");
  EXPECT_EQ(o.users[1].password, "b o b");
  EXPECT_TRUE(o.users[0].rules.empty());
  EXPECT_EQ(o.users[1].rules, (std::vector<std::string>{"-@all", "+get", "+config|get", "-@all",
                                                        "+@all", "-keys", "-@write"}));
  EXPECT_EQ(o.maxclients, 50);
  EXPECT_EQ(o.timeout, 300);
  EXPECT_EQ(o.proto_max_bulk_len, 2 * 1024 * 1024);
  EXPECT_EQ(o.client_query_buffer_limit, 64 * 1024 * 1024);
  EXPECT_EQ(o.loglevel, LogLevel::kWarning);
  EXPECT_EQ(o.logfile, "/var/log/bp.log");
  EXPECT_EQ(o.shutdown_timeout_ms, 0);

  std::vector<std::string> validation;
  Validate(o, &validation);
  EXPECT_TRUE(validation.empty()) << Joined(validation);
}

TEST(ConfigTest, DirectiveNamesAreCaseInsensitive) {
  std::vector<std::string> errors;
  Options o = Parse("PORT 1\nMaxClients 7\nLOGLEVEL DEBUG\nUpstream-Connections 3\n", &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.port, 1);
  EXPECT_EQ(o.maxclients, 7);
  EXPECT_EQ(o.loglevel, LogLevel::kDebug);
  EXPECT_EQ(o.upstream_connections, 3);
}

TEST(ConfigTest, CommentsBlankLinesAndLineEndings) {
  std::vector<std::string> errors;
  Options o = Parse(
      "# a comment\n"
      "\n"
      "   \t\n"
      "   # an indented comment\n"
      "port 7001\r\n"
      "  maxclients   9  \n"
      "timeout 5",  // no final newline
      &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.port, 7001);
  EXPECT_EQ(o.maxclients, 9);
  EXPECT_EQ(o.timeout, 5);
}

TEST(ConfigTest, LaterLinesOverrideEarlierOnes) {
  std::vector<std::string> errors;
  Options o = Parse("port 1\nport 2\n", &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(o.port, 2);
}

TEST(ConfigTest, FlagsOverrideFile) {
  TempFile file("port 7000\nmaxclients 10\nupstream 10.0.0.1:6379\nloglevel debug\n");
  LoadResult r = Load({file.path(), "--port", "7100", "--loglevel=verbose"});
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.config_file, file.path());
  EXPECT_EQ(r.options.port, 7100);
  EXPECT_EQ(r.options.maxclients, 10);  // from the file, no flag
  EXPECT_EQ(r.options.upstream, "10.0.0.1:6379");
  EXPECT_EQ(r.options.loglevel, LogLevel::kVerbose);

  // The same with --config, flags before the file.
  LoadResult c = Load({"--port=7200", "--config", file.path()});
  EXPECT_TRUE(c.errors.empty()) << Joined(c.errors);
  EXPECT_EQ(c.options.port, 7200);
  EXPECT_EQ(c.options.maxclients, 10);
  LoadResult c2 = Load({"--config=" + file.path()});
  EXPECT_TRUE(c2.errors.empty()) << Joined(c2.errors);
  EXPECT_EQ(c2.options.port, 7000);
}

TEST(ConfigTest, RepeatedFlagLastWins) {
  LoadResult r = Load({"--upstream", "h:1", "--port", "1", "--port", "2"});
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.port, 2);
}

TEST(ConfigTest, EnvOverridesFileAndFlagsOverrideEnv) {
  TempFile file(
      "upstream 127.0.0.1:6379\n"
      "upstream-user file-user\n"
      "upstream-password file-pass\n"
      "requirepass file-requirepass\n");
  std::map<std::string, std::string> env = {
      {"BLOOMPROXY_UPSTREAM_USER", "env-user"},
      {"BLOOMPROXY_UPSTREAM_PASSWORD", "env-pass"},
      {"BLOOMPROXY_REQUIREPASS", "env-requirepass"},
  };
  LoadResult r = Load({file.path()}, env);
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.upstream_user, "env-user");
  EXPECT_EQ(r.options.upstream_password, "env-pass");
  EXPECT_EQ(r.options.requirepass, "env-requirepass");

  LoadResult f = Load({file.path(), "--upstream-user", "flag-user", "--upstream-password=flag-pass",
                       "--requirepass", "flag-requirepass"},
                      env);
  EXPECT_TRUE(f.errors.empty()) << Joined(f.errors);
  EXPECT_EQ(f.options.upstream_user, "flag-user");
  EXPECT_EQ(f.options.upstream_password, "flag-pass");
  EXPECT_EQ(f.options.requirepass, "flag-requirepass");

  // Without a file, the environment alone sets them.
  LoadResult e = Load({"--upstream", "h:1"}, env);
  EXPECT_TRUE(e.errors.empty()) << Joined(e.errors);
  EXPECT_EQ(e.options.requirepass, "env-requirepass");
}

TEST(ConfigTest, EmptyEnvironmentVariableCountsAsUnset) {
  TempFile file("upstream h:1\nrequirepass file-requirepass\n");
  LoadResult r = Load({file.path()}, {{"BLOOMPROXY_REQUIREPASS", ""}});
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.requirepass, "file-requirepass");
}

TEST(ConfigTest, EqualsForm) {
  LoadResult r = Load({"--upstream=[::1]:6379", "--port=0", "--unixsocket=/tmp/s.sock",
                       "--requirepass=a=b", "--logfile=", "--proto-max-bulk-len=1gb"});
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.upstream, "[::1]:6379");
  EXPECT_EQ(r.options.port, 0);
  EXPECT_EQ(r.options.unixsocket, "/tmp/s.sock");
  EXPECT_EQ(r.options.requirepass, "a=b");  // split at the first '='
  EXPECT_EQ(r.options.logfile, "");
  EXPECT_EQ(r.options.proto_max_bulk_len, 1024LL * 1024 * 1024);
}

TEST(ConfigTest, FlagNamesAreCaseInsensitiveLikeDirectives) {
  LoadResult r = Load({"--UPSTREAM", "h:1", "--Port=9"});
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.port, 9);
}

TEST(ConfigTest, SwitchFlags) {
  LoadResult h = Load({"--help"});
  EXPECT_TRUE(h.help);
  EXPECT_TRUE(h.errors.empty()) << "help skips validation: " << Joined(h.errors);
  EXPECT_TRUE(Load({"-h"}).help);
  LoadResult v = Load({"--version"});
  EXPECT_TRUE(v.version);
  EXPECT_TRUE(v.errors.empty()) << Joined(v.errors);
  EXPECT_TRUE(Load({"-v"}).version);

  LoadResult t = Load({"--test-conf", "--upstream", "h:1"});
  EXPECT_TRUE(t.test_conf);
  EXPECT_TRUE(t.errors.empty()) << Joined(t.errors);
  // --test-conf still validates: that is its point.
  LoadResult t2 = Load({"--test-conf"});
  EXPECT_TRUE(t2.test_conf);
  EXPECT_EQ(t2.errors.size(), 1u) << Joined(t2.errors);

  LoadResult bad = Load({"--help=yes", "--upstream", "h:1"});
  ASSERT_EQ(bad.errors.size(), 1u) << Joined(bad.errors);
  EXPECT_EQ(bad.errors[0], "--help: takes no value");
}

TEST(ConfigTest, UnknownOptions) {
  LoadResult r = Load({"--upstream", "h:1", "--foo", "--prot=1", "-x", "--requirepas=secret"});
  ASSERT_EQ(r.errors.size(), 4u) << Joined(r.errors);
  EXPECT_EQ(r.errors[0], "unknown option '--foo'");
  EXPECT_EQ(r.errors[1], "unknown option '--prot'");
  EXPECT_EQ(r.errors[2], "unknown option '-x'");
  EXPECT_EQ(r.errors[3], "unknown option '--requirepas'");  // the value is not echoed

  // The presumed value of an unknown option is skipped, not taken for a config file.
  LoadResult skipped = Load({"--upstream", "h:1", "--requirepas", "secret", "--port", "7"});
  ASSERT_EQ(skipped.errors.size(), 1u) << Joined(skipped.errors);
  EXPECT_EQ(skipped.errors[0], "unknown option '--requirepas'");
  EXPECT_EQ(skipped.options.port, 7);
  EXPECT_EQ(skipped.options.config_file, "");
}

TEST(ConfigTest, MissingFlagValue) {
  LoadResult r = Load({"--upstream", "h:1", "--port"});
  ASSERT_EQ(r.errors.size(), 1u) << Joined(r.errors);
  EXPECT_EQ(r.errors[0], "--port: missing value");
}

TEST(ConfigTest, FlagValueErrors) {
  LoadResult r = Load({"--upstream", "h:1", "--port", "70000", "--maxclients=0", "--timeout", "x"});
  ASSERT_EQ(r.errors.size(), 3u) << Joined(r.errors);
  EXPECT_EQ(r.errors[0], "--port: '70000' is not a valid port");
  EXPECT_EQ(r.errors[1], "--maxclients: '0' must be at least 1");
  EXPECT_EQ(r.errors[2], "--timeout: 'x' is not a valid number");
}

TEST(ConfigTest, ConfigFileErrors) {
  LoadResult missing = Load({"/nonexistent/bloomproxy.conf", "--upstream", "h:1"});
  ASSERT_EQ(missing.errors.size(), 1u) << Joined(missing.errors);
  EXPECT_NE(missing.errors[0].find("cannot open config file '/nonexistent/bloomproxy.conf'"),
            std::string::npos)
      << missing.errors[0];

  TempFile a("upstream h:1\n");
  TempFile b("upstream h:1\n");
  LoadResult twice = Load({a.path(), "--config", b.path()});
  ASSERT_EQ(twice.errors.size(), 1u) << Joined(twice.errors);
  EXPECT_NE(twice.errors[0].find("more than one config file"), std::string::npos);

  LoadResult positional = Load({a.path(), b.path()});
  EXPECT_EQ(positional.errors.size(), 1u) << Joined(positional.errors);
}

TEST(ConfigTest, AllErrorsCollectedWithLineNumbers) {
  TempFile file(
      "# three bad lines\n"
      "port 6390\n"
      "prot 6379\n"
      "maxclients many\n"
      "\n"
      "timeout 1 2\n"
      "loglevel debug\n");
  LoadResult r = Load({file.path(), "--upstream", "h:1", "--bogus"});
  const std::string& f = file.path();
  ASSERT_EQ(r.errors.size(), 4u) << Joined(r.errors);
  // Command-line problems are found first, then the file's, in line order.
  EXPECT_EQ(r.errors[0], "unknown option '--bogus'");
  EXPECT_EQ(r.errors[1], f + ":3: unknown directive 'prot'");
  EXPECT_EQ(r.errors[2], f + ":4: maxclients: 'many' is not a valid number");
  EXPECT_EQ(r.errors[3], f + ":6: wrong number of arguments for 'timeout' (expected 1, got 2)");
  // The good lines still apply.
  EXPECT_EQ(r.options.port, 6390);
  EXPECT_EQ(r.options.loglevel, LogLevel::kDebug);

  std::vector<std::string> errors;
  Parse("prot 1\nmaxclients many\ntimeout 1 2\n", &errors);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0], "test.conf:1: unknown directive 'prot'");
  EXPECT_EQ(errors[1], "test.conf:2: maxclients: 'many' is not a valid number");
  EXPECT_EQ(errors[2], "test.conf:3: wrong number of arguments for 'timeout' (expected 1, got 2)");
}

TEST(ConfigTest, WrongNumberOfArguments) {
  EXPECT_EQ(ErrorOf("port"),
            "test.conf:1: wrong number of arguments for 'port' (expected 1, got 0)");
  EXPECT_EQ(ErrorOf("user alice"),
            "test.conf:1: wrong number of arguments for 'user' (expected at least 2, got 1)");
  EXPECT_EQ(ErrorOf("user a b c"),
            "test.conf:1: user: unsupported rule 'c' (expected +COMMAND, -COMMAND, "
            "+COMMAND|SUBCOMMAND, +@CATEGORY, -@CATEGORY, allcommands or nocommands)");
  EXPECT_EQ(ErrorOf("user a b ~keys:*"),
            "test.conf:1: user: unsupported rule '~keys:*' (expected +COMMAND, -COMMAND, "
            "+COMMAND|SUBCOMMAND, +@CATEGORY, -@CATEGORY, allcommands or nocommands)");
  EXPECT_EQ(ErrorOf("user a b -"),
            "test.conf:1: user: unsupported rule '-' (expected +COMMAND, -COMMAND, "
            "+COMMAND|SUBCOMMAND, +@CATEGORY, -@CATEGORY, allcommands or nocommands)");
  // Flag-only options are not directives.
  EXPECT_EQ(ErrorOf("config x.conf"), "test.conf:1: unknown directive 'config'");
  EXPECT_EQ(ErrorOf("help"), "test.conf:1: unknown directive 'help'");
}

TEST(ConfigTest, Quoting) {
  std::vector<std::string> errors;
  Options o = Parse(
      "requirepass \"with space\"\n"
      "logfile '/tmp/it\\'s here.log'\n"
      "upstream-password \"tab\\there\\n\\x41\\x4a\\\\\\\"q\\\"\"\n"
      "user \"multi word\" 'single \"quoted\"'\n"
      "unixsocket fo\"o b\"\n",  // a quote inside a word starts quoting, as in Redis
      &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.requirepass, "with space");
  EXPECT_EQ(o.logfile, "/tmp/it's here.log");
  EXPECT_EQ(o.upstream_password, "tab\there\nAJ\\\"q\"");
  ASSERT_EQ(o.users.size(), 1u);
  EXPECT_EQ(o.users[0].name, "multi word");
  EXPECT_EQ(o.users[0].password, "single \"quoted\"");
  EXPECT_EQ(o.unixsocket, "foo b");

  // Empty quoted arguments are arguments.
  errors.clear();
  o = Parse("logfile \"\"\nrequirepass ''\n", &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.logfile, "");
  EXPECT_EQ(o.requirepass, "");

  EXPECT_EQ(ErrorOf("requirepass \"unterminated"), "test.conf:1: unbalanced quotes");
  EXPECT_EQ(ErrorOf("requirepass 'unterminated"), "test.conf:1: unbalanced quotes");
  // A closing quote must end the word.
  EXPECT_EQ(ErrorOf("requirepass \"a\"b"), "test.conf:1: unbalanced quotes");
  EXPECT_EQ(ErrorOf("requirepass 'a'b"), "test.conf:1: unbalanced quotes");
  EXPECT_EQ(ErrorOf("unixsocket fo\"o b\"ar"), "test.conf:1: unbalanced quotes");
}

TEST(ConfigTest, MemoryUnits) {
  struct Case {
    const char* text;
    int64_t bytes;
  };
  const Case kCases[] = {
      {"1048576", 1048576},
      {"1048576b", 1048576},
      {"1mb", 1024 * 1024},
      {"1MB", 1024 * 1024},
      {"1Mb", 1024 * 1024},
      {"2m", 2000000},
      {"2M", 2000000},
      {"1024kb", 1024 * 1024},
      {"1024KB", 1024 * 1024},
      {"2000k", 2000000},
      {"1g", 1000000000},
      {"1G", 1000000000},
      {"1gb", 1024LL * 1024 * 1024},
      {"8GB", 8LL * 1024 * 1024 * 1024},
  };
  for (const Case& c : kCases) {
    std::vector<std::string> errors;
    Options o = Parse(std::string("proto-max-bulk-len ") + c.text + "\nclient-query-buffer-limit " +
                          c.text + "\n",
                      &errors);
    EXPECT_TRUE(errors.empty()) << c.text << ": " << Joined(errors);
    EXPECT_EQ(o.proto_max_bulk_len, c.bytes) << c.text;
    EXPECT_EQ(o.client_query_buffer_limit, c.bytes) << c.text;
  }

  EXPECT_EQ(ErrorOf("proto-max-bulk-len 1x"),
            "test.conf:1: proto-max-bulk-len: '1x' is not a valid memory size (e.g. 1048576, "
            "64mb, 1gb)");
  EXPECT_NE(ErrorOf("proto-max-bulk-len mb"), "");
  EXPECT_NE(ErrorOf("proto-max-bulk-len -1mb"), "");
  EXPECT_NE(ErrorOf("proto-max-bulk-len 1.5mb"), "");
  EXPECT_NE(ErrorOf("proto-max-bulk-len ''"), "");
  EXPECT_EQ(ErrorOf("proto-max-bulk-len 1000k"),
            "test.conf:1: proto-max-bulk-len: '1000k' is below the minimum of 1mb");
  EXPECT_EQ(ErrorOf("client-query-buffer-limit 1048575"),
            "test.conf:1: client-query-buffer-limit: '1048575' is below the minimum of 1mb");
  EXPECT_EQ(ErrorOf("proto-max-bulk-len 99999999999999gb"),
            "test.conf:1: proto-max-bulk-len: '99999999999999gb' is too large");
  EXPECT_EQ(ErrorOf("proto-max-bulk-len 99999999999999999999999"),
            "test.conf:1: proto-max-bulk-len: '99999999999999999999999' is too large");
}

TEST(ConfigTest, Ports) {
  std::vector<std::string> errors;
  EXPECT_EQ(Parse("port 0", &errors).port, 0);
  EXPECT_EQ(Parse("port 65535", &errors).port, 65535);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(ErrorOf("port 65536"), "test.conf:1: port: '65536' is not a valid port");
  EXPECT_EQ(ErrorOf("port -1"), "test.conf:1: port: '-1' is not a valid port");
  EXPECT_EQ(ErrorOf("port 80a"), "test.conf:1: port: '80a' is not a valid port");
  EXPECT_EQ(ErrorOf("port +80"), "test.conf:1: port: '+80' is not a valid port");
  EXPECT_EQ(ErrorOf("port ''"), "test.conf:1: port: '' is not a valid port");
}

TEST(ConfigTest, Bind) {
  std::vector<std::string> errors;
  EXPECT_EQ(Parse("bind 0.0.0.0", &errors).bind, "0.0.0.0");
  EXPECT_EQ(Parse("bind ::", &errors).bind, "::");
  EXPECT_EQ(Parse("bind fe80::1", &errors).bind, "fe80::1");
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(ErrorOf("bind localhost"),
            "test.conf:1: bind: 'localhost' is not an IPv4 or IPv6 address");
  EXPECT_NE(ErrorOf("bind 256.0.0.1"), "");
  EXPECT_NE(ErrorOf("bind [::1]"), "");
}

TEST(ConfigTest, Upstream) {
  for (const char* good :
       {"127.0.0.1:6379", "localhost:1", "redis-1.example.com:65535", "[::1]:6379",
        "[fe80::1:2]:7000", "unix:/run/redis.sock", "unix:relative.sock"}) {
    std::vector<std::string> errors;
    Options o = Parse(std::string("upstream ") + good, &errors);
    EXPECT_TRUE(errors.empty()) << good << ": " << Joined(errors);
    EXPECT_EQ(o.upstream, good);
  }
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "host:port",
                          ":6379", "::1:6379", "[::1]", "[::1]:", "[nope]:6379", "[]:6379",
                          "unix:", "bad host:1", "ho/st:1", ""}) {
    std::string error = ErrorOf(std::string("upstream '") + bad + "'");
    EXPECT_EQ(error.rfind("test.conf:1: upstream: ", 0), 0u) << bad << " -> " << error;
  }
  EXPECT_EQ(ErrorOf("upstream ::1:6379"),
            "test.conf:1: upstream: '::1:6379': an IPv6 address must be in brackets, e.g. "
            "[::1]:6379");
  EXPECT_NE(ErrorOf("upstream unix:/" + std::string(200, 'x')), "");

  LoadResult r = Load({"--upstream", "nohost"});
  ASSERT_GE(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].rfind("--upstream: 'nohost' has no port", 0), 0u) << r.errors[0];
}

TEST(ConfigTest, UnixSocketPerm) {
  std::vector<std::string> errors;
  EXPECT_EQ(Parse("unixsocketperm 700", &errors).unixsocketperm, 0700);
  EXPECT_EQ(Parse("unixsocketperm 0770", &errors).unixsocketperm, 0770);
  EXPECT_EQ(Parse("unixsocketperm 777", &errors).unixsocketperm, 0777);
  EXPECT_EQ(Parse("unixsocketperm 0", &errors).unixsocketperm, 0);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(ErrorOf("unixsocketperm 800"),
            "test.conf:1: unixsocketperm: '800' is not a valid octal permission (e.g. 700)");
  EXPECT_NE(ErrorOf("unixsocketperm 1000"), "");
  EXPECT_NE(ErrorOf("unixsocketperm -7"), "");
  EXPECT_NE(ErrorOf("unixsocketperm rwx"), "");
}

TEST(ConfigTest, Ranges) {
  std::vector<std::string> errors;
  Options o = Parse(
      "upstream-connections 1\nupstream-connections 64\npinned-pool-size 10000\n"
      "maxclients 1\ntimeout 0\nconnect-timeout-ms 1\nreconnect-max-ms 1\n"
      "shutdown-timeout-ms 0\n",
      &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.upstream_connections, 64);
  EXPECT_EQ(o.pinned_pool_size, 10000);

  EXPECT_EQ(ErrorOf("upstream-connections 0"),
            "test.conf:1: upstream-connections: '0' is out of range (1..64)");
  EXPECT_EQ(ErrorOf("upstream-connections 65"),
            "test.conf:1: upstream-connections: '65' is out of range (1..64)");
  EXPECT_EQ(ErrorOf("pinned-pool-size -1"),
            "test.conf:1: pinned-pool-size: '-1' is out of range (0..10000)");
  EXPECT_EQ(ErrorOf("pinned-pool-size 10001"),
            "test.conf:1: pinned-pool-size: '10001' is out of range (0..10000)");
  EXPECT_EQ(ErrorOf("maxclients 0"), "test.conf:1: maxclients: '0' must be at least 1");
  EXPECT_NE(ErrorOf("maxclients 99999999999"), "");
  EXPECT_NE(ErrorOf("timeout -1"), "");
  EXPECT_NE(ErrorOf("timeout 2147484"), "");  // timeout * 1000 must fit an int
  EXPECT_NE(ErrorOf("connect-timeout-ms 0"), "");
  EXPECT_NE(ErrorOf("reconnect-max-ms 0"), "");
  EXPECT_NE(ErrorOf("shutdown-timeout-ms -1"), "");
  EXPECT_NE(ErrorOf("maxclients 1e3"), "");
  EXPECT_NE(ErrorOf("maxclients ' 5'"), "");
}

TEST(ConfigTest, LogLevels) {
  std::vector<std::string> errors;
  EXPECT_EQ(Parse("loglevel debug", &errors).loglevel, LogLevel::kDebug);
  EXPECT_EQ(Parse("loglevel Verbose", &errors).loglevel, LogLevel::kVerbose);
  EXPECT_EQ(Parse("loglevel NOTICE", &errors).loglevel, LogLevel::kNotice);
  EXPECT_EQ(Parse("loglevel warning", &errors).loglevel, LogLevel::kWarning);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(ErrorOf("loglevel loud"),
            "test.conf:1: loglevel: 'loud' is not a log level (debug, verbose, notice, warning)");
  EXPECT_STREQ(LogLevelName(LogLevel::kDebug), "debug");
  EXPECT_STREQ(LogLevelName(LogLevel::kVerbose), "verbose");
  EXPECT_STREQ(LogLevelName(LogLevel::kNotice), "notice");
  EXPECT_STREQ(LogLevelName(LogLevel::kWarning), "warning");
}

TEST(ConfigTest, Users) {
  // A repeated user within one source is an error.
  EXPECT_EQ(ErrorOf("user alice a\nuser alice b"),
            "test.conf:2: user: user 'alice' is defined twice");
  EXPECT_EQ(ErrorOf("user default pw"),
            "test.conf:1: user: use requirepass to set the password of user 'default'");
  EXPECT_EQ(ErrorOf("user '' pw"), "test.conf:1: user: the user name is empty");

  // A flag replaces the file's user of the same name and adds new ones.
  TempFile file("upstream h:1\nuser alice from-file\nuser bob bob-pw\n");
  LoadResult r = Load({file.path(), "--user", "alice:from:flag", "--user=carol:"});
  EXPECT_TRUE(r.errors.empty()) << Joined(r.errors);
  ASSERT_EQ(r.options.users.size(), 3u);
  EXPECT_EQ(r.options.users[0].name, "alice");
  EXPECT_EQ(r.options.users[0].password, "from:flag");  // split at the first ':'
  EXPECT_EQ(r.options.users[1].name, "bob");
  EXPECT_EQ(r.options.users[1].password, "bob-pw");
  EXPECT_EQ(r.options.users[2].name, "carol");
  EXPECT_EQ(r.options.users[2].password, "");

  // The malformed flag's value may be a password: it is not echoed.
  LoadResult bad = Load({"--upstream", "h:1", "--user", "topsecret"});
  ASSERT_EQ(bad.errors.size(), 1u) << Joined(bad.errors);
  EXPECT_EQ(bad.errors[0], "--user: expected NAME:PASS");
  LoadResult twice = Load({"--upstream", "h:1", "--user", "a:1", "--user", "a:2"});
  ASSERT_EQ(twice.errors.size(), 1u) << Joined(twice.errors);
  EXPECT_EQ(twice.errors[0], "--user: user 'a' is defined twice");
}

TEST(ConfigTest, ErrorsNeverContainPasswords) {
  TempFile file(
      "requirepass \"secret-one\n"         // unbalanced
      "upstream-password secret-two x\n"   // wrong arity
      "user alice secret-three extra\n");  // wrong arity
  LoadResult r = Load({file.path(), "--user", "secret-four", "--requirepas=secret-five",
                       "--requirepas", "secret-six"});
  ASSERT_FALSE(r.errors.empty());
  for (const std::string& e : r.errors) EXPECT_EQ(e.find("secret"), std::string::npos) << e;
}

TEST(ConfigTest, Validation) {
  Options ok;
  ok.upstream = "127.0.0.1:6379";
  std::vector<std::string> errors;
  Validate(ok, &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);

  auto errors_of = [](const Options& o) {
    std::vector<std::string> e;
    Validate(o, &e);
    return e;
  };

  Options no_listener = ok;
  no_listener.port = 0;
  ASSERT_EQ(errors_of(no_listener).size(), 1u);
  EXPECT_EQ(errors_of(no_listener)[0],
            "no listener: port and tls-port are 0 and unixsocket is not set");
  no_listener.unixsocket = "/tmp/bp.sock";
  EXPECT_TRUE(errors_of(no_listener).empty());

  Options no_upstream;
  ASSERT_EQ(errors_of(no_upstream).size(), 1u);
  EXPECT_EQ(errors_of(no_upstream)[0].rfind("no upstream", 0), 0u);

  Options user_only = ok;
  user_only.upstream_user = "u";
  ASSERT_EQ(errors_of(user_only).size(), 1u);
  EXPECT_EQ(errors_of(user_only)[0], "upstream-user is set but upstream-password is not");
  Options password_only = ok;
  password_only.upstream_password = "p";  // AUTH with the password alone is fine
  EXPECT_TRUE(errors_of(password_only).empty());

  Options bulk = ok;
  bulk.proto_max_bulk_len = 64LL * 1024 * 1024;
  bulk.client_query_buffer_limit = 32LL * 1024 * 1024;
  ASSERT_EQ(errors_of(bulk).size(), 1u);
  EXPECT_EQ(errors_of(bulk)[0].rfind("proto-max-bulk-len (64mb) exceeds client-query-buffer-limit "
                                     "(32mb)",
                                     0),
            0u)
      << errors_of(bulk)[0];

  Options loop = ok;
  loop.upstream = "127.0.0.1:6380";
  EXPECT_EQ(errors_of(loop).size(), 1u);
  loop.upstream = "localhost:6380";
  EXPECT_EQ(errors_of(loop).size(), 1u);
  loop.upstream = "127.0.0.1:6381";
  EXPECT_TRUE(errors_of(loop).empty());
  loop.port = 0;
  loop.unixsocket = "/tmp/bp.sock";
  loop.upstream = "unix:/tmp/bp.sock";
  EXPECT_EQ(errors_of(loop).size(), 1u);

  Options long_socket = ok;
  long_socket.unixsocket = "/" + std::string(200, 's');
  EXPECT_EQ(errors_of(long_socket).size(), 1u);

  // Everything at once: every problem reported.
  Options all;
  all.port = 0;
  all.upstream_user = "u";
  all.proto_max_bulk_len = all.client_query_buffer_limit + 1;
  EXPECT_EQ(errors_of(all).size(), 4u) << Joined(errors_of(all));

  // LoadOptions runs Validate after the file and flags.
  LoadResult r = Load({"--port", "0"});
  EXPECT_EQ(r.errors.size(), 2u) << Joined(r.errors);
}

TEST(ConfigTest, UsageMentionsEveryFlagAndDefault) {
  std::string usage = Usage();
  for (const char* flag : {"--config",
                           "--bind",
                           "--port",
                           "--unixsocket",
                           "--unixsocketperm",
                           "--upstream",
                           "--upstream-cluster",
                           "--upstream-kind",
                           "--announce-ip",
                           "--announce-port",
                           "--cluster-view",
                           "--upstream-user",
                           "--upstream-password",
                           "--upstream-connections",
                           "--pinned-pool-size",
                           "--connect-timeout-ms",
                           "--reconnect-max-ms",
                           "--requirepass",
                           "--user",
                           "--maxclients",
                           "--timeout",
                           "--proto-max-bulk-len",
                           "--client-query-buffer-limit",
                           "--loglevel",
                           "--logfile",
                           "--shutdown-timeout-ms",
                           "--test-conf",
                           "--help",
                           "-h",
                           "--version",
                           "-v",
                           "BLOOMPROXY_UPSTREAM_USER",
                           "BLOOMPROXY_UPSTREAM_PASSWORD",
                           "BLOOMPROXY_REQUIREPASS"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
  for (const char* default_text :
       {"(default 127.0.0.1)", "(default 6380)", "(default 10000)", "(default 512mb)",
        "(default 1gb)", "(default notice)", "(default 2000)", "(default 5000)"}) {
    EXPECT_NE(usage.find(default_text), std::string::npos) << default_text;
  }
  // One line per flag, each within 100 columns.
  std::istringstream lines(usage);
  std::string line;
  while (std::getline(lines, line)) EXPECT_LE(line.size(), 100u) << line;
}

// The example file in conf/ must stay loadable and set nothing but defaults and its upstream.
TEST(ConfigTest, ExampleConfigFile) {
  std::string here = __FILE__;  // .../tests/unit/config_test.cc
  std::string root = here.substr(0, here.rfind("tests/unit/"));
  std::string path = root + "conf/bloomproxy.conf";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();

  std::vector<std::string> errors;
  Options o;
  ParseConfigText(text.str(), "bloomproxy.conf", &o, &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.upstream, "127.0.0.1:6379");
  o.upstream.clear();
  ExpectDefaults(o);
  // Every directive is documented in it.
  for (const char* directive : {"bind",
                                "port",
                                "unixsocket",
                                "unixsocketperm",
                                "upstream",
                                "upstream-user",
                                "upstream-password",
                                "upstream-connections",
                                "pinned-pool-size",
                                "connect-timeout-ms",
                                "reconnect-max-ms",
                                "requirepass",
                                "user",
                                "maxclients",
                                "timeout",
                                "proto-max-bulk-len",
                                "client-query-buffer-limit",
                                "loglevel",
                                "logfile",
                                "shutdown-timeout-ms",
                                "threads",
                                "upstream-password-file",
                                "deny-command",
                                "client-output-pause",
                                "upstream-timeout-ms",
                                "client-output-limit-pubsub",
                                "bf-mode",
                                "bf-error-rate",
                                "bf-initial-capacity",
                                "bf-expansion",
                                "bf-max-shard-bytes",
                                "bf-layout",
                                "bf-window"}) {
    bool active = text.str().find(std::string("\n") + directive + " ") != std::string::npos;
    bool commented = text.str().find(std::string("# ") + directive + " ") != std::string::npos;
    EXPECT_TRUE(active || commented) << directive;
  }
}

TEST(ConfigTest, UpstreamKind) {
  Options o;
  std::vector<std::string> errors;
  EXPECT_EQ(o.upstream_kind, "redis");
  ParseConfigText("upstream-kind sharding-proxy\n", "t", &o, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(o.upstream_kind, "sharding-proxy");
  for (const char* bad : {"upstream-kind twemproxy\n", "upstream-kind\n", "upstream-kind Redis\n",
                          "upstream-kind redis cluster\n"}) {
    Options other;
    std::vector<std::string> errs;
    ParseConfigText(bad, "t", &other, &errs);
    EXPECT_FALSE(errs.empty()) << bad;
    EXPECT_EQ(other.upstream_kind, "redis") << bad;
  }
  LoadResult flags = Load({"--upstream", "127.0.0.1:22121", "--upstream-kind", "sharding-proxy",
                           "--upstream-password", "secret"});
  EXPECT_TRUE(flags.errors.empty()) << Joined(flags.errors);
  EXPECT_EQ(flags.options.upstream_kind, "sharding-proxy");
}

TEST(ConfigTest, ShardingProxyExcludesClusterAndUpstreamUser) {
  Options o;
  o.upstream_kind = "sharding-proxy";
  o.upstream_cluster = {"127.0.0.1:7000"};
  std::vector<std::string> errors;
  Validate(o, &errors);
  ASSERT_EQ(errors.size(), 1u) << Joined(errors);
  EXPECT_NE(errors[0].find("upstream-kind sharding-proxy and upstream-cluster"), std::string::npos)
      << errors[0];

  o.upstream_cluster.clear();
  o.upstream = "127.0.0.1:22121";
  o.upstream_user = "proxy";
  o.upstream_password = "secret";
  errors.clear();
  Validate(o, &errors);
  ASSERT_EQ(errors.size(), 1u) << Joined(errors);
  EXPECT_NE(errors[0].find("upstream-user"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[0].find("secret"), std::string::npos) << errors[0];

  o.upstream_user.clear();
  errors.clear();
  Validate(o, &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
}

// bf-window rules (filters/bloom/window/window_rules.h): repeatable, from the file, the
// environment and the flags, each checked when read; --test-conf, --help and a reload show them.
TEST(ConfigTest, BfWindowRules) {
  using Rule = std::vector<std::string>;
  std::vector<std::string> errors;
  Options o = Parse(
      "bf-window dedup:* 86400000\n"
      "bf-window \"seen:{a} *\" 3000 SLOTS 5 error 0.001 Capacity 1000000\n",
      &errors);
  EXPECT_TRUE(errors.empty()) << Joined(errors);
  EXPECT_EQ(o.bf_windows, (std::vector<Rule>{Rule{"dedup:*", "86400000"},
                                             Rule{"seen:{a} *", "3000", "SLOTS", "5", "error",
                                                  "0.001", "Capacity", "1000000"}}));

  // File, then environment, then flags: each adds its rules (first match wins, in this order).
  TempFile file("upstream h:1\nbf-window f:* 1000\n");
  LoadResult r = Load({file.path(), "--bf-window", "'a b' 2000 slots 2", "--bf-window", "c 3"},
                      {{"BLOOMPROXY_BF_WINDOW", "e:* 5000 capacity 10"}});
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  EXPECT_EQ(r.options.bf_windows,
            (std::vector<Rule>{Rule{"f:*", "1000"}, Rule{"e:*", "5000", "capacity", "10"},
                               Rule{"a b", "2000", "slots", "2"}, Rule{"c", "3"}}));
  const std::string report = TestConfReport(r);
  EXPECT_NE(report.find("  bf-window f:* 1000; e:* 5000 capacity 10; a b 2000 slots 2; c 3 (" +
                        file.path() + ":2, env BLOOMPROXY_BF_WINDOW, --bf-window, --bf-window)\n"),
            std::string::npos)
      << report;

  // Help: the flag, its one line, no rules by default.
  const std::string usage = Usage();
  EXPECT_NE(usage.find("  --bf-window RULE                   new filters forget after a window "
                       "(repeatable) (default none)\n"),
            std::string::npos)
      << usage;
}

TEST(ConfigTest, BfWindowErrors) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"k:* 0", "'0' is not a window (milliseconds, 1..316224000000)"},
      {"k:* 1.5", "'1.5' is not a window (milliseconds, 1..316224000000)"},
      {"k:* 316224000001", "'316224000001' is not a window (milliseconds, 1..316224000000)"},
      {"k:* 1000 slots 1", "'1' is not a slot count (2..64)"},
      {"k:* 1000 slots 65", "'65' is not a slot count (2..64)"},
      {"k:* 1000 error 1", "'1' is not an error rate (between 0 and 1, exclusive)"},
      {"k:* 1000 capacity 0", "'0' is not a capacity (1..1073741824)"},
      {"k:* 1000 slots", "option 'slots' has no value"},
      {"k:* 1000 ttl 5", "'ttl' is not an option (slots, error, capacity)"},
      {"k:* 1000 slots 3 slots 4", "option 'slots' is given twice"},
  };
  for (const auto& [rule, error] : bad) {
    EXPECT_EQ(ErrorOf("bf-window " + rule), "test.conf:1: bf-window: " + error) << rule;
    LoadResult flag = Load({"--upstream", "h:1", "--bf-window", rule});
    EXPECT_EQ(Joined(flag.errors), "--bf-window: " + error + "\n") << rule;
    LoadResult var = Load({"--upstream", "h:1"}, {{"BLOOMPROXY_BF_WINDOW", rule}});
    EXPECT_EQ(Joined(var.errors), "BLOOMPROXY_BF_WINDOW: " + error + "\n") << rule;
  }
  EXPECT_EQ(ErrorOf("bf-window k:*"),
            "test.conf:1: wrong number of arguments for 'bf-window' (expected at least 2, got 1)");
  LoadResult few = Load({"--upstream", "h:1", "--bf-window", "k:*"});
  EXPECT_EQ(Joined(few.errors),
            "--bf-window: wrong number of arguments for 'bf-window' (expected at least 2, got "
            "1)\n");
  LoadResult quotes = Load({"--upstream", "h:1", "--bf-window", "'k:* 5"});
  EXPECT_EQ(Joined(quotes.errors), "--bf-window: unbalanced quotes\n");
  // Every error at start-up, not just the first.
  std::vector<std::string> errors;
  Parse("bf-window a 0\nbf-window b 10 slots 1\nbf-window c 10\n", &errors);
  EXPECT_EQ(Joined(errors),
            "test.conf:1: bf-window: '0' is not a window (milliseconds, 1..316224000000)\n"
            "test.conf:2: bf-window: '1' is not a slot count (2..64)\n");
}

TEST(ConfigTest, BfWindowReloads) {
  TempFile file("upstream h:1\nbf-window a:* 1000\n");
  auto no_env = [](const char*) { return static_cast<const char*>(nullptr); };
  auto no_names = [] { return std::vector<std::string>{}; };
  LoadResult start = Load({file.path()});
  ASSERT_TRUE(start.errors.empty()) << Joined(start.errors);

  std::ofstream(file.path()) << "upstream h:1\nbf-window a:* 1000\nbf-window b:* 5 slots 2\n";
  ReloadResult r = ReloadOptions(start.options, no_env, no_names);
  ASSERT_TRUE(r.errors.empty()) << Joined(r.errors);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(std::string(r.changes[0].name), "bf-window");
  EXPECT_EQ(r.changes[0].reload, Reload::kLive);
  EXPECT_EQ(r.options.bf_windows.size(), 2u);
  EXPECT_EQ(ShowOption("bf-window", r.options), "a:* 1000; b:* 5 slots 2");

  // A bad rule: the reload fails whole, nothing changes.
  std::ofstream(file.path()) << "upstream h:1\nbf-window a:* 0\n";
  ReloadResult bad = ReloadOptions(start.options, no_env, no_names);
  EXPECT_EQ(Joined(bad.errors),
            file.path() + ":2: bf-window: '0' is not a window (milliseconds, 1..316224000000)\n");
  EXPECT_TRUE(bad.changes.empty());
}

}  // namespace
}  // namespace bloomproxy::conf

TEST(ConfigTest, UpstreamClusterSeeds) {
  bloomproxy::conf::Options o;
  std::vector<std::string> errors;
  bloomproxy::conf::ParseConfigText("upstream-cluster 127.0.0.1:7000,[::1]:7001,redis-0.svc:7002\n",
                                    "t", &o, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(o.upstream_cluster,
            (std::vector<std::string>{"127.0.0.1:7000", "[::1]:7001", "redis-0.svc:7002"}));
  for (const char* bad : {"upstream-cluster 127.0.0.1:7000,\n", "upstream-cluster unix:/x\n",
                          "upstream-cluster 127.0.0.1\n", "upstream-cluster a:1,,b:2\n"}) {
    bloomproxy::conf::Options other;
    std::vector<std::string> errs;
    bloomproxy::conf::ParseConfigText(bad, "t", &other, &errs);
    EXPECT_FALSE(errs.empty()) << bad;
  }
}

TEST(ConfigTest, UpstreamAndUpstreamClusterExcludeEachOther) {
  bloomproxy::conf::Options o;
  o.upstream = "127.0.0.1:6379";
  o.upstream_cluster = {"127.0.0.1:7000"};
  std::vector<std::string> errors;
  bloomproxy::conf::Validate(o, &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("upstream-cluster"), std::string::npos);
  o.upstream.clear();
  errors.clear();
  bloomproxy::conf::Validate(o, &errors);
  EXPECT_TRUE(errors.empty());
}
