// The non-strict metadata reader of key-level plans (filters/bloom/bf_meta.h MetaFromHmget):
// enough of a filter's hash to name its data keys, a plain filter's or a windowed filter's (which
// has a window and no links). The strict reader is the BF plans' (bf_plan_test.cc).
#include "filters/bloom/bf_meta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "protocol/encoder.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kId = "0123456789abcdef";

// The reply HMGET of MetaFieldList() gets from a hash holding `hash`.
protocol::ReplyPtr HmgetReply(const std::map<std::string, std::string>& hash) {
  const std::vector<std::string> fields = MetaFieldList();
  std::string frame = "*" + std::to_string(fields.size()) + "\r\n";
  for (const std::string& f : fields) {
    auto it = hash.find(f);
    if (it == hash.end()) {
      frame += "$-1\r\n";
    } else {
      protocol::AppendBulk(&frame, it->second);
    }
  }
  static protocol::ReplyDecoder decoder;
  return decoder.Decode(frame);
}

std::map<std::string, std::string> PlainHash() {
  const LinkParams link = ChainLink(0.01, 100, 2, false, 0);
  return {{"bloomproxy", "1"},
          {"id", std::string(kId)},
          {"shard", "64"},
          {"options", "5"},
          {"l0", EncodeLink(link)}};
}

TEST(MetaFromHmgetTest, PlainFilter) {
  auto meta = MetaFromHmget("users", HmgetReply(PlainHash()).get());
  ASSERT_NE(meta, nullptr);
  EXPECT_FALSE(meta->windowed());
  EXPECT_EQ(meta->prefix, "{users}");
  ASSERT_EQ(meta->links.size(), 1u);
  EXPECT_FALSE(meta->DataKeys().empty());
}

TEST(MetaFromHmgetTest, WindowedFilterIsAFilter) {
  std::map<std::string, std::string> hash = PlainHash();
  hash.erase("l0");
  hash["window"] = "60000";
  hash["slots"] = "3";
  auto meta = MetaFromHmget("users", HmgetReply(hash).get());
  ASSERT_NE(meta, nullptr);
  EXPECT_TRUE(meta->windowed());
  EXPECT_EQ(meta->window_ms, 60000u);
  EXPECT_EQ(meta->slots, 3u);
  EXPECT_EQ(meta->id, kId);
  EXPECT_EQ(meta->prefix, "{users}");
  // Its keys are its slots', which the key scripts find at the upstream's time.
  EXPECT_TRUE(meta->links.empty());
  EXPECT_TRUE(meta->DataKeys().empty());
}

TEST(MetaFromHmgetTest, NotAFilter) {
  // No links and no window; a window that does not parse; no id; no marker.
  std::map<std::string, std::string> hash = PlainHash();
  hash.erase("l0");
  EXPECT_EQ(MetaFromHmget("users", HmgetReply(hash).get()), nullptr);
  hash["window"] = "0";
  EXPECT_EQ(MetaFromHmget("users", HmgetReply(hash).get()), nullptr);
  hash["window"] = "x";
  EXPECT_EQ(MetaFromHmget("users", HmgetReply(hash).get()), nullptr);
  hash["window"] = "60000";
  hash.erase("id");
  EXPECT_EQ(MetaFromHmget("users", HmgetReply(hash).get()), nullptr);
  hash["id"] = std::string(kId);
  hash.erase("bloomproxy");
  EXPECT_EQ(MetaFromHmget("users", HmgetReply(hash).get()), nullptr);
  EXPECT_EQ(MetaFromHmget("users", nullptr), nullptr);
}

TEST(MetaFieldListTest, NamesTheWindowFields) {
  const std::vector<std::string> fields = MetaFieldList();
  EXPECT_EQ(fields.front(), kMarkerField);
  EXPECT_NE(std::find(fields.begin(), fields.end(), "window"), fields.end());
  EXPECT_NE(std::find(fields.begin(), fields.end(), "slots"), fields.end());
  EXPECT_NE(std::find(fields.begin(), fields.end(), "l63"), fields.end());
}

}  // namespace
}  // namespace bloomproxy::filters
