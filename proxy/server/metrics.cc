#include "proxy/server/metrics.h"

#include <time.h>

#include <tsl/robin_map.h>
#include <algorithm>
#include <cstdio>

#include "protocol/command_table.h"

namespace bloomproxy::proxy {
namespace {

// The RedisBloom family's commands: emulated (BF.*) or forwarded to a server that has the
// module. Named in the metrics like the table's commands; any other unknown name is "unknown".
constexpr std::string_view kModuleCommands[] = {
    "bf.add",
    "bf.card",
    "bf.debug",
    "bf.exists",
    "bf.info",
    "bf.insert",
    "bf.loadchunk",
    "bf.madd",
    "bf.mexists",
    "bf.reserve",
    "bf.scandump",
    "cf.add",
    "cf.addnx",
    "cf.compact",
    "cf.count",
    "cf.debug",
    "cf.del",
    "cf.exists",
    "cf.info",
    "cf.insert",
    "cf.insertnx",
    "cf.loadchunk",
    "cf.mexists",
    "cf.reserve",
    "cf.scandump",
    "cms.incrby",
    "cms.info",
    "cms.initbydim",
    "cms.initbyprob",
    "cms.merge",
    "cms.query",
    "tdigest.add",
    "tdigest.byrank",
    "tdigest.byrevrank",
    "tdigest.cdf",
    "tdigest.create",
    "tdigest.info",
    "tdigest.max",
    "tdigest.merge",
    "tdigest.min",
    "tdigest.quantile",
    "tdigest.rank",
    "tdigest.reset",
    "tdigest.revrank",
    "tdigest.trimmed_mean",
    "topk.add",
    "topk.count",
    "topk.incrby",
    "topk.info",
    "topk.list",
    "topk.query",
    "topk.reserve",
};

// Pointers into the command table are stable for the process's life, so a row's id is found
// by its address: one hash probe, no string work on the hot path.
struct PointerHash {
  size_t operator()(const protocol::CommandInfo* p) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 3) * 0x9E3779B97F4A7C15ull);
  }
};

struct Ids {
  std::vector<std::string_view> names;  // by id
  tsl::robin_map<const protocol::CommandInfo*, uint16_t, PointerHash> by_row;
  tsl::robin_map<std::string_view, uint16_t> by_module_name;
  uint16_t unknown = 0;

  Ids() {
    std::vector<const protocol::CommandInfo*> rows;
    for (const protocol::CommandInfo* info : protocol::AllCommands()) {
      if (info->name.find('|') == std::string_view::npos) rows.push_back(info);
    }
    std::sort(rows.begin(), rows.end(),
              [](const auto* a, const auto* b) { return a->name < b->name; });
    for (const protocol::CommandInfo* info : rows) {
      by_row.emplace(info, static_cast<uint16_t>(names.size()));
      names.push_back(info->name);
    }
    for (std::string_view name : kModuleCommands) {
      by_module_name.emplace(name, static_cast<uint16_t>(names.size()));
      names.push_back(name);
    }
    unknown = static_cast<uint16_t>(names.size());
    names.push_back("unknown");
  }
};

const Ids& GetIds() {
  static const Ids ids;
  return ids;
}

// Formats a number of seconds given in nanoseconds without rounding away small durations.
std::string Seconds(uint64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%llu.%09llu", static_cast<unsigned long long>(ns / 1000000000),
                static_cast<unsigned long long>(ns % 1000000000));
  return buf;
}

std::string BoundLabel(uint64_t ns) {
  // 100000 ns -> "0.0001", 1000000000 -> "1": shortest decimal, as client libraries print it.
  std::string s = Seconds(ns);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

class Writer {
 public:
  void Header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels` is either empty or `key="value",...` (already escaped).
  void Sample(std::string_view name, std::string_view labels, std::string_view value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void Sample(std::string_view name, std::string_view labels, uint64_t value) {
    Sample(name, labels, std::to_string(value));
  }
  void Simple(std::string_view name, std::string_view type, std::string_view help, uint64_t value) {
    Header(name, type, help);
    Sample(name, {}, value);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

void WriteCommands(const MetricsSnapshot& s, Writer* w) {
  w->Header("bloomproxy_commands_total", "counter",
            "Client commands answered, by command (lower-case; unknown names as \"unknown\").");
  for (const auto& c : s.commands) {
    w->Sample("bloomproxy_commands_total", "command=\"" + EscapeLabel(c.name) + "\"", c.calls);
  }
  w->Header("bloomproxy_command_errors_total", "counter",
            "Client commands whose reply was an error, by command.");
  for (const auto& c : s.commands) {
    w->Sample("bloomproxy_command_errors_total", "command=\"" + EscapeLabel(c.name) + "\"",
              c.errors);
  }
  w->Header("bloomproxy_command_duration_seconds", "histogram",
            "Time from reading a client command to its reply being complete, by command.");
  for (const auto& c : s.commands) {
    const std::string label = "command=\"" + EscapeLabel(c.name) + "\"";
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kDurationBuckets; ++b) {
      cumulative += c.buckets[b];
      const std::string le =
          b < kDurationBoundsNs.size() ? BoundLabel(kDurationBoundsNs[b]) : std::string("+Inf");
      w->Sample("bloomproxy_command_duration_seconds_bucket", label + ",le=\"" + le + "\"",
                cumulative);
    }
    w->Sample("bloomproxy_command_duration_seconds_sum", label, Seconds(c.sum_ns));
    w->Sample("bloomproxy_command_duration_seconds_count", label, cumulative);
  }
}

void WriteUpstreams(const MetricsSnapshot& s, Writer* w) {
  w->Header("bloomproxy_upstream_up", "gauge",
            "Whether the proxy has a working connection to the upstream node (1) or not (0).");
  for (const auto& u : s.upstreams) {
    w->Sample("bloomproxy_upstream_up", "upstream=\"" + EscapeLabel(u.address) + "\"",
              u.up ? 1 : 0);
  }
  w->Simple("bloomproxy_upstream_requests_total", "counter",
            "Requests queued on upstream connections (a forwarded command, a filter plan's step, "
            "handshakes and probes).",
            s.upstream_requests);
  w->Simple("bloomproxy_upstream_connection_errors_total", "counter",
            "Shared upstream connections lost or failed to open.", s.upstream_errors);
  w->Simple("bloomproxy_upstream_connections", "gauge",
            "Shared upstream connections up (all loops, all nodes).", s.upstream_connections);
  w->Simple("bloomproxy_upstream_pinned_connections", "gauge",
            "Upstream connections held by one client (transactions, pub/sub, blocking).",
            s.upstream_pinned_connections);
  w->Simple("bloomproxy_upstream_idle_pinned_connections", "gauge",
            "Pinned upstream connections idle in the pools for reuse.",
            s.upstream_idle_pinned_connections);
  if (s.mode == "cluster") {
    w->Simple("bloomproxy_upstream_cluster_masters", "gauge", "Masters in the cluster's slot map.",
              s.cluster_masters);
    w->Simple("bloomproxy_upstream_cluster_masters_up", "gauge",
              "Masters of the slot map with a shared connection up.", s.cluster_masters_up);
  }
}

}  // namespace

namespace command_ids {
uint16_t ForInfo(const protocol::CommandInfo* info) {
  const Ids& ids = GetIds();
  auto it = ids.by_row.find(info);
  return it == ids.by_row.end() ? ids.unknown : it->second;
}
uint16_t ForName(std::string_view lower_name) {
  const Ids& ids = GetIds();
  auto it = ids.by_module_name.find(lower_name);
  return it == ids.by_module_name.end() ? ids.unknown : it->second;
}
uint16_t Unknown() { return GetIds().unknown; }
size_t Count() { return GetIds().names.size(); }
std::string_view Name(uint16_t id) { return GetIds().names.at(id); }
}  // namespace command_ids

LoopMetrics::LoopMetrics() : commands_(new CommandCounters[command_ids::Count()]) {}

uint64_t LoopMetrics::ReadClockNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t ns =
      static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
  return ns == 0 ? 1 : ns;  // 0 means "not read this turn"
}

std::string EscapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatMetrics(const MetricsSnapshot& s) {
  Writer w;
  w.Header("bloomproxy_build_info", "gauge", "Version and build of this proxy (always 1).");
  w.Sample("bloomproxy_build_info",
           "version=\"" + EscapeLabel(s.version) + "\",mode=\"" + EscapeLabel(s.mode) +
               "\",upstream_kind=\"" + EscapeLabel(s.kind) + "\",threads=\"" +
               std::to_string(s.threads) + "\"",
           1);
  w.Simple("bloomproxy_ready", "gauge", "1 when /readyz answers 200.", s.ready ? 1 : 0);
  w.Simple("bloomproxy_draining", "gauge", "1 once SIGTERM (or SIGINT) started the drain.",
           s.draining ? 1 : 0);
  w.Simple("bloomproxy_uptime_seconds", "gauge", "Seconds since the proxy started.",
           s.uptime_seconds);
  w.Simple("bloomproxy_connected_clients", "gauge", "Client connections open.",
           s.connected_clients);
  w.Simple("bloomproxy_maxclients", "gauge", "The maxclients limit.", s.maxclients);
  w.Simple("bloomproxy_connections_received_total", "counter", "Client connections accepted.",
           s.connections_received);
  w.Simple("bloomproxy_rejected_connections_total", "counter",
           "Client connections refused (maxclients reached, or draining).", s.rejected_connections);
  w.Simple("bloomproxy_commands_processed_total", "counter",
           "Commands read from clients (INFO's total_commands_processed).", s.commands_processed);
  if (s.kind == "sharding-proxy") {
    w.Simple("bloomproxy_sharding_proxy_refused_commands_total", "counter",
             "Commands refused because a sharding proxy upstream would refuse them.",
             s.sharding_proxy_refused);
  }
  w.Header("bloomproxy_config_reloads_total", "counter",
           "SIGHUP reloads of the configuration file, by result.");
  w.Sample("bloomproxy_config_reloads_total", "result=\"ok\"", s.reloads_ok);
  w.Sample("bloomproxy_config_reloads_total", "result=\"error\"", s.reloads_error);
  if (s.resident_memory_bytes > 0) {
    w.Simple("bloomproxy_resident_memory_bytes", "gauge", "Resident set size of the process.",
             s.resident_memory_bytes);
  }
  WriteUpstreams(s, &w);
  WriteCommands(s, &w);
  return std::move(w.out());
}

}  // namespace bloomproxy::proxy
