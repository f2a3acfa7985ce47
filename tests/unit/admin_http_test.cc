// The admin port's pure parts: request-head parsing, routing, responses, and the Prometheus
// text exposition. No sockets.
#include <gtest/gtest.h>

#include <string>

#include "protocol/command_table.h"
#include "proxy/server/admin_http.h"
#include "proxy/server/metrics.h"

namespace bloomproxy::proxy {
namespace {

using admin::HeadStatus;
using admin::ParseRequestHead;
using admin::RequestHead;

std::string Respond(const std::string& request, const std::string& not_ready = "") {
  RequestHead head;
  EXPECT_EQ(ParseRequestHead(request, &head), HeadStatus::kComplete) << request;
  const admin::Response r = admin::Route(
      head, [&] { return not_ready; }, [] { return std::string("metrics\n"); });
  return admin::SerializeResponse(r, head.method == "HEAD");
}

TEST(AdminHttp, ParsesRequestLine) {
  RequestHead head;
  ASSERT_EQ(ParseRequestHead("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", &head),
            HeadStatus::kComplete);
  EXPECT_EQ(head.method, "GET");
  EXPECT_EQ(head.path, "/metrics");
  EXPECT_EQ(head.version, "HTTP/1.1");
  ASSERT_EQ(ParseRequestHead("\r\nHEAD http://h:9/readyz HTTP/1.0\n\n", &head),
            HeadStatus::kComplete);
  EXPECT_EQ(head.method, "HEAD");
  EXPECT_EQ(head.path, "/readyz");
}

TEST(AdminHttp, WaitsForTheBlankLineByteByByte) {
  const std::string request = "GET /healthz HTTP/1.1\r\nUser-Agent: kube-probe/1.29\r\n\r\n";
  RequestHead head;
  for (size_t n = 0; n < request.size(); ++n) {
    EXPECT_EQ(ParseRequestHead(request.substr(0, n), &head), HeadStatus::kNeedMore) << n;
  }
  EXPECT_EQ(ParseRequestHead(request, &head), HeadStatus::kComplete);
  EXPECT_EQ(head.path, "/healthz");
}

TEST(AdminHttp, BoundsTheHead) {
  RequestHead head;
  std::string big = "GET / HTTP/1.1\r\nX: " + std::string(admin::kMaxHeadBytes, 'a');
  EXPECT_EQ(ParseRequestHead(big, &head), HeadStatus::kTooLarge);
  EXPECT_EQ(ParseRequestHead(big + "\r\n\r\n", &head), HeadStatus::kTooLarge);
  std::string fits = "GET / HTTP/1.1\r\nX: " + std::string(admin::kMaxHeadBytes - 100, 'a');
  EXPECT_EQ(ParseRequestHead(fits, &head), HeadStatus::kNeedMore);
  EXPECT_EQ(ParseRequestHead(fits + "\r\n\r\n", &head), HeadStatus::kComplete);
}

TEST(AdminHttp, RejectsMalformedRequestLines) {
  RequestHead head;
  for (const char* bad :
       {"GET /metrics\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
        "G(T / HTTP/1.1\r\n\r\n", " / HTTP/1.1\r\n\r\n", "*1\r\n$4\r\nPING\r\n\r\n"}) {
    EXPECT_EQ(ParseRequestHead(bad, &head), HeadStatus::kBad) << bad;
  }
}

TEST(AdminHttp, Routes) {
  EXPECT_EQ(Respond("GET /healthz HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\nok\n");
  const std::string metrics = Respond("GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_EQ(metrics.substr(metrics.size() - 8), "metrics\n");
  EXPECT_EQ(Respond("GET /readyz HTTP/1.1\r\n\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  const std::string down = Respond("GET /readyz HTTP/1.1\r\n\r\n", "upstream down");
  EXPECT_EQ(down.substr(0, 32), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(down.substr(down.size() - 14), "upstream down\n");
  EXPECT_EQ(Respond("GET /nope HTTP/1.1\r\n\r\n").substr(0, 22), "HTTP/1.1 404 Not Found");
  const std::string post = Respond("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.substr(0, 31), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(post.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos);
  // HEAD: the headers GET would get, no body.
  const std::string head = Respond("HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_NE(head.find("Content-Length: 3\r\n"), std::string::npos);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
}

TEST(Metrics, CommandIdsAreBoundedAndNamed) {
  const auto* get = protocol::LookupCommand("GET");
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(command_ids::Name(command_ids::ForInfo(get)), "get");
  const auto* client = protocol::LookupCommand("client");
  EXPECT_EQ(command_ids::Name(command_ids::ForInfo(client)), "client");
  EXPECT_EQ(command_ids::Name(command_ids::ForName("bf.add")), "bf.add");
  EXPECT_EQ(command_ids::Name(command_ids::ForName("cms.incrby")), "cms.incrby");
  EXPECT_EQ(command_ids::ForName("no-such-command"), command_ids::Unknown());
  EXPECT_EQ(command_ids::ForName(""), command_ids::Unknown());
  EXPECT_EQ(command_ids::Name(command_ids::Unknown()), "unknown");
  EXPECT_LT(command_ids::Count(), 1000u);
}

TEST(Metrics, RecordsIntoBuckets) {
  LoopMetrics m;
  const uint16_t get = command_ids::ForInfo(protocol::LookupCommand("get"));
  m.Record(get, 50'000, false);        // 50 µs: first bucket
  m.Record(get, 100'000, false);       // on the bound: still the first (le is inclusive)
  m.Record(get, 2'000'000'000, true);  // 2 s: +Inf
  const CommandCounters& c = m.command(get);
  EXPECT_EQ(c.calls.Get(), 3u);
  EXPECT_EQ(c.errors.Get(), 1u);
  EXPECT_EQ(c.sum_ns.Get(), 2'000'150'000u);
  EXPECT_EQ(c.buckets[0].Get(), 2u);
  EXPECT_EQ(c.buckets[kDurationBuckets - 1].Get(), 1u);
}

TEST(Metrics, FormatsPrometheusText) {
  MetricsSnapshot s;
  s.version = "1.2.3";
  s.mode = "standalone";
  s.kind = "redis";
  s.connected_clients = 4;
  s.reloads_ok = 2;
  s.upstreams.push_back({"127.0.0.1:6379", true});
  s.upstreams.push_back({"we\"ird\\host\n:1", false});
  MetricsSnapshot::Command get;
  get.name = "get";
  get.calls = 3;
  get.errors = 1;
  get.sum_ns = 1'500'000'001;
  get.buckets[0] = 2;
  get.buckets[kDurationBuckets - 1] = 1;
  s.commands.push_back(get);
  const std::string text = FormatMetrics(s);
  auto has = [&](const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_EQ(text.substr(0, 24), "# HELP bloomproxy_build_");
  EXPECT_TRUE(has("# TYPE bloomproxy_build_info gauge"));
  EXPECT_TRUE(
      has("bloomproxy_build_info{version=\"1.2.3\",mode=\"standalone\","
          "upstream_kind=\"redis\",threads=\"1\"} 1"));
  EXPECT_TRUE(has("bloomproxy_connected_clients 4"));
  EXPECT_TRUE(has("bloomproxy_config_reloads_total{result=\"ok\"} 2"));
  EXPECT_TRUE(has("bloomproxy_config_reloads_total{result=\"error\"} 0"));
  EXPECT_TRUE(has("bloomproxy_upstream_up{upstream=\"127.0.0.1:6379\"} 1"));
  EXPECT_TRUE(has("bloomproxy_upstream_up{upstream=\"we\\\"ird\\\\host\\n:1\"} 0"));
  EXPECT_TRUE(has("# TYPE bloomproxy_command_duration_seconds histogram"));
  EXPECT_TRUE(has("bloomproxy_commands_total{command=\"get\"} 3"));
  EXPECT_TRUE(has("bloomproxy_command_errors_total{command=\"get\"} 1"));
  EXPECT_TRUE(has("bloomproxy_command_duration_seconds_bucket{command=\"get\",le=\"0.0001\"} 2"));
  EXPECT_TRUE(has("bloomproxy_command_duration_seconds_bucket{command=\"get\",le=\"0.00025\"} 2"));
  EXPECT_TRUE(has("bloomproxy_command_duration_seconds_bucket{command=\"get\",le=\"1\"} 2"));
  EXPECT_TRUE(has("bloomproxy_command_duration_seconds_bucket{command=\"get\",le=\"+Inf\"} 3"));
  EXPECT_TRUE(has("bloomproxy_command_duration_seconds_sum{command=\"get\"} 1.500000001"));
  EXPECT_TRUE(has("bloomproxy_command_duration_seconds_count{command=\"get\"} 3"));
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace bloomproxy::proxy
