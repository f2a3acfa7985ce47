// bloomproxy: a Redis-protocol proxy that forwards commands to an upstream Redis.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "conf/loader.h"
#include "proxy/client/acl.h"
#include "proxy/server/admin_http.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"

namespace {

// As Redis's adjustOpenFilesLimit (src/server.c): room for maxclients plus a reserve (listeners,
// upstream connections, log); the soft limit is raised towards the hard one, and when that is
// not enough, maxclients is lowered to fit, with Redis's warnings.
void AdjustOpenFilesLimit(bloomproxy::conf::Options* options) {
  constexpr rlim_t kReserved = 32;
  const rlim_t wanted = static_cast<rlim_t>(options->maxclients) + kReserved +
                        static_cast<rlim_t>(options->upstream_connections * options->threads);
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  const rlim_t old = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  const int saved_errno = setrlimit(RLIMIT_NOFILE, &limit) == 0 ? 0 : errno;
  if (saved_errno != 0) limit.rlim_cur = old;
  if (limit.rlim_cur >= wanted) {
    LOG_NOTICE("Increased maximum number of open files to %llu (it was originally set to %llu).",
               static_cast<unsigned long long>(limit.rlim_cur),
               static_cast<unsigned long long>(old));
    return;
  }
  const rlim_t room = limit.rlim_cur > wanted - static_cast<rlim_t>(options->maxclients)
                          ? limit.rlim_cur - (wanted - static_cast<rlim_t>(options->maxclients))
                          : 1;
  LOG_WARNING("You requested maxclients of %d requiring at least %llu max file descriptors.",
              options->maxclients, static_cast<unsigned long long>(wanted));
  if (saved_errno != 0) {
    LOG_WARNING("Server can't set maximum open files to %llu because of OS error: %s.",
                static_cast<unsigned long long>(wanted), std::strerror(saved_errno));
  }
  options->maxclients = static_cast<int>(room);
  LOG_WARNING(
      "Current maximum open files is %llu. maxclients has been reduced to %d to compensate for "
      "low ulimit. If you need higher maxclients increase 'ulimit -n'.",
      static_cast<unsigned long long>(limit.rlim_cur), options->maxclients);
}

}  // namespace

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
    std::fputs(bloomproxy::conf::TestConfReport(loaded).c_str(), stdout);
    return 0;
  }
  const bloomproxy::conf::Options& options = loaded.options;
  // Level, format (log-format) and the secrets every line masks.
  bloomproxy::proxy::ApplyLogOptions(options);
  if (!options.logfile.empty() && !bloomproxy::proxy::SetLogFile(options.logfile)) {
    std::fprintf(stderr, "bloomproxy: cannot open log file %s\n", options.logfile.c_str());
    return 1;
  }
  AdjustOpenFilesLimit(&loaded.options);
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
  {
    // /metrics adds up every loop's counters (read on the first loop, which serves it).
    std::vector<bloomproxy::proxy::Server*> loops;
    for (auto& s : servers) loops.push_back(s.get());
    bloomproxy::proxy::AdminServer::SetLoops(std::move(loops));
  }
  std::vector<std::thread> threads;
  for (size_t i = 1; i < servers.size(); ++i) {
    threads.emplace_back([&servers, i] { servers[i]->Run(); });
  }
  int rc = servers[0]->Run();
  for (std::thread& t : threads) t.join();
  return rc;
}
