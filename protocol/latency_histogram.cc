#include "protocol/latency_histogram.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace bloomproxy::protocol {
namespace {

// The highest value Redis's histogram (HdrHistogram, 2 significant figures) counts with
// 1024 << bucket ns: the bucket's bound in its report.
uint64_t BucketBound(size_t bucket) {
  const uint64_t v = uint64_t{1024} << bucket;
  return v + (v >> 7) - 1;
}

bool IEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Str(const redisReply* r) {
  return r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
             ? std::string_view(r->str, r->len)
             : std::string_view();
}

// One command's entry: calls, and calls per reported bound (not cumulative).
struct Entry {
  std::string name;
  uint64_t calls = 0;
  std::map<int64_t, uint64_t> counts;
};

// The upstream's entries; false when the reply is not LATENCY HISTOGRAM's.
bool ReadEntries(const redisReply* r, std::vector<Entry>* out) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) return false;
  for (size_t i = 0; i < r->elements; i += 2) {
    const redisReply* v = r->element[i + 1];
    if (v->type != REDIS_REPLY_ARRAY || v->elements != 4) return false;
    const redisReply* histogram = v->element[3];
    if (v->element[1]->type != REDIS_REPLY_INTEGER || histogram->type != REDIS_REPLY_ARRAY ||
        histogram->elements % 2 != 0) {
      return false;
    }
    Entry e;
    e.name.assign(Str(r->element[i]));
    e.calls = static_cast<uint64_t>(v->element[1]->integer);
    uint64_t before = 0;
    for (size_t j = 0; j < histogram->elements; j += 2) {
      const redisReply* bound = histogram->element[j];
      const redisReply* cumulative = histogram->element[j + 1];
      if (bound->type != REDIS_REPLY_INTEGER || cumulative->type != REDIS_REPLY_INTEGER) {
        return false;
      }
      const uint64_t now = static_cast<uint64_t>(cumulative->integer);
      e.counts[bound->integer] += now - std::min(now, before);
      before = now;
    }
    out->push_back(std::move(e));
  }
  return true;
}

void WriteEntry(const Entry& e, Resp resp, std::string* out) {
  AppendBulk(out, e.name);
  AppendMapHeader(out, 2, resp);
  AppendBulk(out, "calls");
  AppendInteger(out, static_cast<int64_t>(e.calls));
  AppendBulk(out, "histogram_usec");
  size_t listed = 0;
  for (const auto& [bound, n] : e.counts) listed += n > 0;
  AppendMapHeader(out, static_cast<int64_t>(listed), resp);
  uint64_t cumulative = 0;
  for (const auto& [bound, n] : e.counts) {
    if (n == 0) continue;
    cumulative += n;
    AppendInteger(out, bound);
    AppendInteger(out, static_cast<int64_t>(cumulative));
  }
}

}  // namespace

void LatencyCounts::Record(uint64_t nanos) {
  size_t b = 0;
  while (b + 1 < kBuckets && nanos > BucketBound(b)) ++b;
  ++buckets[b];
  ++calls;
}

int64_t LatencyBucketMicros(size_t bucket) {
  return static_cast<int64_t>(BucketBound(bucket) / 1000);
}

bool LatencyHistogramAsks(const std::vector<std::string_view>& names, std::string_view full_name) {
  if (names.empty()) return true;
  const std::string_view container = full_name.substr(0, full_name.find('|'));
  for (std::string_view n : names) {
    if (IEqual(n, full_name) || (container.size() < full_name.size() && IEqual(n, container))) {
      return true;
    }
  }
  return false;
}

std::string MergeLatencyHistogram(std::string_view frame, const LatencyTable& local,
                                  const std::vector<std::string_view>& names, Resp resp,
                                  ReplyDecoder* decoder) {
  std::vector<Entry> entries;
  const ReplyPtr r = decoder->Decode(frame);
  if (!ReadEntries(r.get(), &entries)) return std::string(frame);
  bool joined = false;
  for (const auto& entry : local) {
    const std::string& name = entry.first;
    const LatencyCounts& counts = entry.second;
    if (counts.calls == 0 || !LatencyHistogramAsks(names, name)) continue;
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&name](const Entry& e) { return e.name == name; });
    if (it == entries.end()) it = entries.insert(entries.end(), Entry{name, 0, {}});
    it->calls += counts.calls;
    for (size_t b = 0; b < LatencyCounts::kBuckets; ++b) {
      if (counts.buckets[b] > 0) it->counts[LatencyBucketMicros(b)] += counts.buckets[b];
    }
    joined = true;
  }
  if (!joined) return std::string(frame);
  std::string out;
  AppendMapHeader(&out, static_cast<int64_t>(entries.size()), resp);
  for (const Entry& e : entries) WriteEntry(e, resp, &out);
  return out;
}

}  // namespace bloomproxy::protocol
