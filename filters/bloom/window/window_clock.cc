#include "filters/bloom/window/window_clock.h"

#include "filters/common/plan_requests.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {

ClockBracket BracketAt(const FilterMeta::ClockSample& sample, int64_t now_us) {
  // The upstream read its clock between sent_us and read_us: its offset from the local clock
  // was in [upstream - read, upstream - sent] then, and has drifted since by at most
  // kDriftPerMillion of the time elapsed.
  const int64_t since_read = now_us > sample.read_us ? now_us - sample.read_us : 0;
  const int64_t since_sent = now_us > sample.sent_us ? now_us - sample.sent_us : 0;
  const int64_t lo_us = sample.upstream_us + since_read - since_read * kDriftPerMillion / 1'000'000;
  const int64_t hi_us =
      sample.upstream_us + since_sent + (since_sent * kDriftPerMillion + 999'999) / 1'000'000;
  return {FloorMs(lo_us), CeilMs(hi_us)};
}

bool ClockUsable(const FilterMeta::ClockSample& sample, int64_t now_us) {
  return sample.known && now_us >= sample.read_us && now_us - sample.read_us < kClockMaxAgeUs;
}

bool ParseTimeReply(const redisReply* r, int64_t* upstream_us) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return false;
  int64_t sec = 0, usec = 0;
  for (size_t i = 0; i < 2; ++i) {
    if (r->element[i]->type != REDIS_REPLY_STRING && r->element[i]->type != REDIS_REPLY_INTEGER) {
      return false;
    }
  }
  auto value = [](const redisReply* e, int64_t* v) {
    if (e->type == REDIS_REPLY_INTEGER) {
      *v = e->integer;
      return true;
    }
    return protocol::StringToInt64(std::string_view(e->str, e->len), v);
  };
  if (!value(r->element[0], &sec) || !value(r->element[1], &usec) || sec < 0 || usec < 0 ||
      usec >= 1'000'000) {
    return false;
  }
  *upstream_us = sec * 1'000'000 + usec;
  return true;
}

}  // namespace bloomproxy::filters
