// A windowed filter's replies folded from its slots' BF replies
// (filters/bloom/window/window_replies.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "filters/bloom/window/window_replies.h"

namespace bloomproxy::filters {
namespace {

TEST(WindowReplies, FoundItemsOrsSlots) {
  std::vector<bool> found(3, false);
  std::string error;
  ASSERT_TRUE(FoundItems("*3\r\n:0\r\n:1\r\n:0\r\n", &found, &error));
  ASSERT_TRUE(FoundItems("*3\r\n:1\r\n:0\r\n:0\r\n", &found, &error));
  EXPECT_EQ(found, (std::vector<bool>{true, true, false}));
  EXPECT_FALSE(FoundItems("-WRONGTYPE Operation against a key\r\n", &found, &error));
  EXPECT_EQ(error, "-WRONGTYPE Operation against a key\r\n");
  EXPECT_FALSE(FoundItems("*2\r\n:0\r\n:1\r\n", &found, &error));  // not one per item
  EXPECT_NE(error.find("unexpected reply"), std::string::npos);
}

TEST(WindowReplies, Lookups) {
  const std::vector<bool> found = {true, false, true};
  EXPECT_EQ(LookupReply({0, 1, false}, found), ":1\r\n");
  EXPECT_EQ(LookupReply({1, 1, false}, found), ":0\r\n");
  EXPECT_EQ(LookupReply({0, 3, true}, found), "*3\r\n:1\r\n:0\r\n:1\r\n");
}

TEST(WindowReplies, CardSumsTheSlots) {
  EXPECT_EQ(CardOfSlots({":3\r\n", ":0\r\n", ":4\r\n"}), ":7\r\n");
  EXPECT_EQ(CardOfSlots({}), ":0\r\n");
  EXPECT_EQ(CardOfSlots({":3\r\n", "-ERR boom\r\n"}), "-ERR boom\r\n");
}

std::string SlotInfo(int size, int filters, int items) {
  return "*10\r\n+Capacity\r\n:500\r\n+Size\r\n:" + std::to_string(size) +
         "\r\n+Number of filters\r\n:" + std::to_string(filters) +
         "\r\n+Number of items inserted\r\n:" + std::to_string(items) +
         "\r\n+Expansion rate\r\n:2\r\n";
}

TEST(WindowReplies, InfoSumsTheSlotsAndAddsTheWindow) {
  FilterMeta meta;
  meta.capacity = 1000;
  meta.expansion = 2;
  meta.window_ms = 3000;
  meta.slots = 3;
  const std::vector<std::string> slots = {SlotInfo(936, 1, 3), "-ERR not found\r\n",
                                          SlotInfo(2000, 2, 600)};
  EXPECT_EQ(InfoOfSlots(slots, InfoField::kAll, meta),
            "*14\r\n+Capacity\r\n:1000\r\n+Size\r\n:2936\r\n"
            "+Number of filters\r\n:3\r\n+Number of items inserted\r\n:603\r\n"
            "+Expansion rate\r\n:2\r\n+Window\r\n:3000\r\n+Slots\r\n:3\r\n");
  EXPECT_EQ(InfoOfSlots(slots, InfoField::kItems, meta), "*1\r\n:603\r\n");
  EXPECT_EQ(InfoOfSlots({}, InfoField::kCapacity, meta), "*1\r\n:1000\r\n");
}

TEST(WindowReplies, DebugListsEverySlotsLinks) {
  const std::string a = "*2\r\n$6\r\nsize:3\r\n$5\r\nlinkA\r\n";
  const std::string b = "*3\r\n$6\r\nsize:4\r\n$5\r\nlinkB\r\n$5\r\nlinkC\r\n";
  EXPECT_EQ(DebugOfSlots({a, "-ERR not found\r\n", b}),
            "*4\r\n$6\r\nsize:7\r\n$5\r\nlinkA\r\n$5\r\nlinkB\r\n$5\r\nlinkC\r\n");
}

}  // namespace
}  // namespace bloomproxy::filters
