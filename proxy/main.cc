// bloomproxy: a Redis-protocol proxy that forwards commands to an upstream Redis.
#include <csignal>
#include <cstdio>

#include "conf/loader.h"
#include "proxy/log.h"
#include "proxy/server.h"

int main(int argc, char** argv) {
  using bloomproxy::conf::LoadOptions;
  bloomproxy::conf::LoadResult loaded = LoadOptions(argc, argv);
  if (loaded.help) {
    std::fputs(bloomproxy::conf::Usage().c_str(), stdout);
    return 0;
  }
  if (loaded.version) {
    std::printf("bloomproxy %s\n", BLOOMPROXY_VERSION);
    return 0;
  }
  if (!loaded.errors.empty()) {
    for (const std::string& e : loaded.errors) std::fprintf(stderr, "bloomproxy: %s\n", e.c_str());
    std::fprintf(stderr, "bloomproxy: %zu error%s in the configuration\n", loaded.errors.size(),
                 loaded.errors.size() == 1 ? "" : "s");
    return 1;
  }
  if (loaded.test_conf) {
    std::printf("bloomproxy: configuration OK\n");
    return 0;
  }
  const bloomproxy::conf::Options& options = loaded.options;
  bloomproxy::proxy::SetLogLevel(options.loglevel);
  if (!options.logfile.empty() && !bloomproxy::proxy::SetLogFile(options.logfile)) {
    std::fprintf(stderr, "bloomproxy: cannot open log file %s\n", options.logfile.c_str());
    return 1;
  }
  // A client that vanishes mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  bloomproxy::proxy::Server server(options);
  if (!server.Start()) {
    server.Run();  // closes what Start() opened
    return 1;
  }
  return server.Run();
}
