// Redis Cluster key slots: CRC16/XMODEM of the key's hash tag. Expected slots come from
// CLUSTER KEYSLOT of a Redis 7.0 node, so the proxy routes every key where Redis keeps it.
#include "protocol/key_slot.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace bloomproxy::protocol {
namespace {

TEST(Crc16Test, KnownValues) {
  // The check value of CRC-16/XMODEM, quoted in Redis's crc16.c.
  EXPECT_EQ(Crc16("123456789"), 0x31C3);
  EXPECT_EQ(Crc16(""), 0);
  EXPECT_EQ(Crc16("A"), 0x58e5);
  EXPECT_EQ(Crc16(std::string_view("\0", 1)), 0);
  EXPECT_EQ(Crc16(std::string_view("\xff", 1)), 0x1ef0);
}

TEST(KeySlotTest, KnownSlots) {
  // Values from CLUSTER KEYSLOT.
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot("bar"), 5061);
  EXPECT_EQ(KeySlot("somekey"), 11058);
  EXPECT_EQ(KeySlot("123456789"), 12739);
  EXPECT_EQ(KeySlot("123456789"), 0x31C3 & 0x3FFF);
  EXPECT_EQ(KeySlot(""), 0);
}

TEST(KeySlotTest, AlwaysBelowSlotCount) {
  for (int i = 0; i < 100000; ++i) {
    ASSERT_LT(KeySlot("key:" + std::to_string(i)), kClusterSlots);
  }
}

// The examples of the Redis Cluster specification ("Hash tags"), with CLUSTER KEYSLOT's answers.
TEST(KeySlotTest, SpecificationExamples) {
  // Same tag, same slot: the slot of the tag itself.
  EXPECT_EQ(KeySlot("{user1000}.following"), 3443);
  EXPECT_EQ(KeySlot("{user1000}.followers"), 3443);
  EXPECT_EQ(KeySlot("user1000"), 3443);
  // The first "{}" is empty: the whole key is hashed.
  EXPECT_EQ(KeySlot("foo{}{bar}"), 8363);
  EXPECT_EQ(KeySlot("foo{}{bar}"), Crc16("foo{}{bar}") & 0x3FFF);
  EXPECT_NE(KeySlot("foo{}{bar}"), KeySlot("bar"));
  // The tag runs from the first '{' to the first '}' after it: "{bar".
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), 4015);
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
  // Only the first tag counts: "bar".
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), 5061);
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
}

TEST(KeySlotTest, BracesWithoutATag) {
  // No closing brace after the first '{': the whole key.
  EXPECT_EQ(KeySlot("a{b"), 13340);
  EXPECT_EQ(KeySlot("}foo{bar"), Crc16("}foo{bar") & 0x3FFF);
  // A '}' before the '{' does not count.
  EXPECT_EQ(KeySlot("}{x}"), 16287);
  EXPECT_EQ(KeySlot("}{x}"), KeySlot("x"));
}

TEST(HashTagTest, HashedPart) {
  bool has_tag = true;
  EXPECT_EQ(HashTag("plain", &has_tag), "plain");
  EXPECT_FALSE(has_tag);
  EXPECT_EQ(HashTag("{user1000}.following", &has_tag), "user1000");
  EXPECT_TRUE(has_tag);
  EXPECT_EQ(HashTag("foo{}{bar}", &has_tag), "foo{}{bar}");
  EXPECT_FALSE(has_tag);
  EXPECT_EQ(HashTag("foo{{bar}}zap", &has_tag), "{bar");
  EXPECT_TRUE(has_tag);
  EXPECT_EQ(HashTag("foo{bar}{zap}", &has_tag), "bar");
  EXPECT_TRUE(has_tag);
  EXPECT_EQ(HashTag("a{b", &has_tag), "a{b");
  EXPECT_FALSE(has_tag);
  EXPECT_EQ(HashTag("}{x}", &has_tag), "x");
  EXPECT_TRUE(has_tag);
  EXPECT_EQ(HashTag("", &has_tag), "");
  EXPECT_FALSE(has_tag);
  // Binary bytes are hashed like any other.
  const std::string binary("\0{\xff}\0", 5);
  EXPECT_EQ(HashTag(binary, &has_tag), std::string_view("\xff", 1));
  EXPECT_TRUE(has_tag);
}

}  // namespace
}  // namespace bloomproxy::protocol
