// bloomproxy: a Redis-protocol proxy that forwards commands to an upstream Redis.
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "conf/loader.h"
#include "proxy/acl.h"
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
  {
    // Command names in users' rules need the command table, which conf/ does not know.
    bloomproxy::proxy::AclTable acls;
    acls.Compile(loaded.options, &loaded.errors);
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

  // One server (event loop) per thread; each is independent (its own clients, upstream
  // connections and filter cache) and they share only the listening port.
  std::vector<std::unique_ptr<bloomproxy::proxy::Server>> servers;
  for (int i = 0; i < options.threads; ++i) {
    servers.push_back(std::make_unique<bloomproxy::proxy::Server>(options, i));
    if (!servers.back()->Start()) {
      // The loops started so far stop; the failed one only closes what Start() opened.
      for (size_t j = 0; j + 1 < servers.size(); ++j) servers[j]->Shutdown();
      for (auto& s : servers) s->Run();
      return 1;
    }
  }
  std::vector<std::thread> threads;
  for (size_t i = 1; i < servers.size(); ++i) {
    threads.emplace_back([&servers, i] { servers[i]->Run(); });
  }
  int rc = servers[0]->Run();
  for (std::thread& t : threads) t.join();
  return rc;
}
