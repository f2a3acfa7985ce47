// Which keys KEYS and SCAN hide: every name the filters build (checked against filters/'s own
// functions, so the two cannot drift apart), and no user key that merely looks alike.
#include "protocol/internal_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "filters/bloom/bf_meta.h"
#include "filters/bloom/window/window_slots.h"
#include "filters/cms/cms_meta.h"
#include "filters/common/key_layout.h"
#include "protocol/encoder.h"
#include "tests/unit/key_names.h"

namespace bloomproxy::protocol {
namespace {

constexpr std::string_view kId = test::kKeyId;
const std::vector<std::string>& Names() { return test::KeyNames(); }

TEST(IsInternalKeyTest, EveryKeyTheFiltersBuild) {
  for (const std::string& name : Names()) {
    const std::string p = filters::DataKeyPrefix(name);
    const std::string id = filters::NewId();
    for (size_t link : {0, 1, 9, 10, 63}) {
      EXPECT_TRUE(IsInternalKey(filters::CountKey(p, id, link))) << p;
      for (size_t shard : {0, 7, 12345}) {
        const std::string bits = filters::BitsKey(p, id, link, shard);
        EXPECT_TRUE(IsInternalKey(bits)) << bits;
        // A new link's shard under its private name (bf_plan_create.cc).
        EXPECT_TRUE(IsInternalKey(bits + ":" + filters::NewId())) << bits;
      }
    }
    // A new filter's metadata before it is published (bf_plan_create.cc).
    EXPECT_TRUE(IsInternalKey(p + ":bf:" + id + ":new")) << p;
    EXPECT_TRUE(IsInternalKey(filters::MarkerKey(p, name))) << p;
    // A count-min sketch's parts, as the CMS plans name them (three parts here), and its marker.
    filters::CmsConfig config;
    config.max_part_bytes = 1024;
    const std::vector<std::string> parts = filters::NewCmsMeta(name, 100, 7, config)->PartKeys();
    ASSERT_EQ(parts.size(), 3u);
    for (const std::string& part : parts) EXPECT_TRUE(IsInternalKey(part)) << part;
    EXPECT_TRUE(IsInternalKey(filters::CmsMarkerKey(p, name))) << p;
    for (std::string_view part : {"0", "1", "17", "4294967296"}) {
      EXPECT_TRUE(IsInternalKey(p + ":cms:" + id + ":" + std::string(part))) << p;
    }
    // A cuckoo filter's data keys (sub-filter.key, filters/cuckoo/cf_layout.lua) and its marker.
    for (std::string_view key : {"0.0", "1.0", "31.17", "65534.4294967296"}) {
      EXPECT_TRUE(IsInternalKey(p + ":cf:" + id + ":" + std::string(key))) << p;
    }
    EXPECT_TRUE(IsInternalKey(filters::CfMarkerKey(p, name))) << p;
    // A Top-K sketch's bucket shards, heap, heap items and marker.
    for (std::string_view key : {"b.0", "b.1", "b.17", "b.4294967296", "h", "i"}) {
      EXPECT_TRUE(IsInternalKey(p + ":tk:" + id + ":" + std::string(key))) << p;
    }
    EXPECT_TRUE(IsInternalKey(filters::TopkMarkerKey(p, name))) << p;
    // A t-digest's data (the digest itself) and marker.
    EXPECT_TRUE(IsInternalKey(p + ":td:" + id + ":d")) << p;
    EXPECT_TRUE(IsInternalKey(filters::TdigestMarkerKey(p, name))) << p;
    // The name itself is the user's.
    EXPECT_FALSE(IsInternalKey(name)) << name;
  }
}

// A windowed filter's slots (filters/bloom/window/window_slots.h): each slot's name, and the keys
// of the filter each slot is, whose data-key prefix is the slot's name.
TEST(IsInternalKeyTest, EveryKeyOfAWindowedFiltersSlots) {
  const filters::WindowShape shape{60000, 3};
  for (const std::string& name : Names()) {
    const std::string p = filters::DataKeyPrefix(name);
    const std::string id = filters::NewId();
    const std::string sid = filters::NewId();
    for (int64_t e :
         {int64_t{0}, int64_t{1}, int64_t{17},
          filters::SlotFor(shape, 1764000000000, shape.window_ms), int64_t{9223372036854775807}}) {
      const std::string slot = filters::SlotName(p, id, e);
      EXPECT_TRUE(IsInternalKey(slot)) << slot;
      // A slot's name holds its filter's tag: its data keys are under the slot name itself.
      ASSERT_EQ(filters::DataKeyPrefix(slot), slot);
      for (size_t link : {0, 1, 12}) {
        EXPECT_TRUE(IsInternalKey(filters::CountKey(slot, sid, link))) << slot;
        for (size_t shard : {0, 3}) {
          const std::string bits = filters::BitsKey(slot, sid, link, shard);
          EXPECT_TRUE(IsInternalKey(bits)) << bits;
          EXPECT_TRUE(IsInternalKey(bits + ":" + filters::NewId())) << bits;
        }
      }
      EXPECT_TRUE(IsInternalKey(slot + ":bf:" + sid + ":new")) << slot;
      // A slot has no marker; a name's marker next to slots is still one.
      EXPECT_TRUE(IsInternalKey(filters::MarkerKey(p, name))) << p;
    }
  }
}

TEST(IsInternalKeyTest, LiteralExamples) {
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:0.0"));
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:0:n"));
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:2.3:fedcba9876543210"));
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:new"));
  EXPECT_TRUE(IsInternalKey("{users}:bf:m:users"));
  EXPECT_TRUE(IsInternalKey("app{users}x:bf:m:app{users}x"));
  EXPECT_TRUE(IsInternalKey("{users}:cms:0123456789abcdef:0"));
  EXPECT_TRUE(IsInternalKey("app{users}x:cms:0123456789abcdef:12"));
  EXPECT_TRUE(IsInternalKey("{users}:cf:0123456789abcdef:0.0"));
  EXPECT_TRUE(IsInternalKey("{users}:cf:m:users"));
  EXPECT_TRUE(IsInternalKey("{users}:tk:0123456789abcdef:b.0"));
  EXPECT_TRUE(IsInternalKey("{users}:tk:0123456789abcdef:b.12"));
  EXPECT_TRUE(IsInternalKey("{users}:tk:0123456789abcdef:h"));
  EXPECT_TRUE(IsInternalKey("app{users}x:tk:0123456789abcdef:i"));
  EXPECT_TRUE(IsInternalKey("{users}:tk:m:users"));
  EXPECT_TRUE(IsInternalKey("{x:tk:m:y}:tk:m:x:tk:m:y"));
  EXPECT_TRUE(IsInternalKey("{users}:td:0123456789abcdef:d"));
  EXPECT_TRUE(IsInternalKey("app{users}x:td:0123456789abcdef:d"));
  EXPECT_TRUE(IsInternalKey("{users}:td:m:users"));
  EXPECT_TRUE(IsInternalKey("app{users}x:td:m:app{users}x"));
  EXPECT_TRUE(IsInternalKey("{x:td:m:y}:td:m:x:td:m:y"));
  // A name that holds another structure's infix: its t-digest's data key and marker.
  EXPECT_TRUE(IsInternalKey("{a:tk:m:b}:td:0123456789abcdef:d"));
  EXPECT_TRUE(IsInternalKey("{a:tk:0123456789abcdef:h}:td:m:a:tk:0123456789abcdef:h"));
  // The tag may sit anywhere in the prefix of a data key.
  EXPECT_TRUE(IsInternalKey("a{b}c:bf:0123456789abcdef:0.0"));
  // A name holding ":bf:m:" still has its marker found.
  EXPECT_TRUE(IsInternalKey("{x:bf:m:y}:bf:m:x:bf:m:y"));
  // A windowed filter's slot, and a slot's data keys.
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:w29400001"));
  EXPECT_TRUE(IsInternalKey("app{users}x:bf:0123456789abcdef:w0"));
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:w29400001:bf:fedcba9876543210:0.0"));
  EXPECT_TRUE(IsInternalKey("{users}:bf:0123456789abcdef:w29400001:bf:fedcba9876543210:1:n"));
}

TEST(IsInternalKeyTest, LookAlikesStayVisible) {
  for (std::string_view key : {
           // No tag in the prefix.
           "users:bf:0123456789abcdef:0.0",
           "users:bf:0123456789abcdef:0:n",
           "users:cms:0123456789abcdef:0",
           "a:bf:m",
           "a:bf:m:a",
           "{}:bf:0123456789abcdef:0.0",
           "}{:bf:0123456789abcdef:0.0",
           // A marker whose prefix is not its name's.
           "{a}:bf:m:b",
           "{a}:bf:m:",
           "{users}:bf:m:{users}x",
           "x{a}:bf:m:a",
           // Ids: too short, too long, upper case, not hex.
           "{a}:bf:0123456789abcde:0.0",
           "{a}:bf:0123456789abcdef0:0.0",
           "{a}:bf:0123456789ABCDEF:0.0",
           "{a}:bf:0123456789abcdeg:0.0",
           "{a}:cms:0123456789abcde:0",
           "{a}:cms:0123456789ABCDEF:0",
           "{a}:bf:0123456789abcdef:0.0:0123456789ABCDEF",
           "{a}:bf:0123456789abcdef:0.0:0123",
           // Numbers: empty, leading zero, signs, not digits, too long.
           "{a}:bf:0123456789abcdef:.0",
           "{a}:bf:0123456789abcdef:0.",
           "{a}:bf:0123456789abcdef:01.0",
           "{a}:bf:0123456789abcdef:0.00",
           "{a}:bf:0123456789abcdef:-1.0",
           "{a}:bf:0123456789abcdef:1x.0",
           "{a}:bf:0123456789abcdef:0.0.0",
           "{a}:bf:0123456789abcdef:123456789012345678901.0",
           "{a}:bf:0123456789abcdef::n",
           "{a}:bf:0123456789abcdef:01:n",
           "{a}:bf:0123456789abcdef:0:N",
           "{a}:bf:0123456789abcdef:0:nn",
           "{a}:cms:0123456789abcdef:",
           "{a}:cms:0123456789abcdef:00",
           "{a}:cms:0123456789abcdef:+1",
           "{a}:cms:0123456789abcdef:1.0",
           "users:cf:0123456789abcdef:0.0",
           "{a}:cf:0123456789abcdef:0",
           "{a}:cf:0123456789abcdef:0.",
           "{a}:cf:0123456789abcdef:01.0",
           "{a}:cf:0123456789abcdef:0:n",
           "{a}:cf:0123456789ABCDEF:0.0",
           "{a}:cf:m:b",
           "a:cf:m:a",
           "users:tk:0123456789abcdef:b.0",
           "users:tk:0123456789abcdef:h",
           "{a}:tk:0123456789abcdef:b",
           "{a}:tk:0123456789abcdef:b.",
           "{a}:tk:0123456789abcdef:b.01",
           "{a}:tk:0123456789abcdef:b.-1",
           "{a}:tk:0123456789abcdef:b0",
           "{a}:tk:0123456789abcdef:0",
           "{a}:tk:0123456789abcdef:0.0",
           "{a}:tk:0123456789abcdef:hh",
           "{a}:tk:0123456789abcdef:H",
           "{a}:tk:0123456789abcdef:i.0",
           "{a}:tk:0123456789abcdef:m",
           "{a}:tk:0123456789abcdef:",
           "{a}:tk:0123456789abcdef",
           "{a}:tk:0123456789ABCDEF:h",
           "{a}:tk:0123456789abcde:h",
           "{a}:TK:0123456789abcdef:h",
           "{a}:tk:m:b",
           "a:tk:m:a",
           "users:td:0123456789abcdef:d",
           "{a}:td:0123456789abcdef:",
           "{a}:td:0123456789abcdef",
           "{a}:td:0123456789abcdef:D",
           "{a}:td:0123456789abcdef:dd",
           "{a}:td:0123456789abcdef:d:",
           "{a}:td:0123456789abcdef:d.0",
           "{a}:td:0123456789abcdef:0",
           "{a}:td:0123456789abcdef:h",
           "{a}:td:0123456789abcdef:m",
           "{a}:td:0123456789ABCDEF:d",
           "{a}:td:0123456789abcde:d",
           "{a}:td:0123456789abcdef0:d",
           "{a}:TD:0123456789abcdef:d",
           "{a}:td:d",
           "{a}:td:m:b",
           "a:td:m:a",
           "{a}:td:m:",
           // Slots: no tag, no number, a leading zero, a sign, other shapes.
           "users:bf:0123456789abcdef:w5",
           "users:bf:0123456789abcdef:w5:bf:fedcba9876543210:0.0",
           "{a}:bf:0123456789abcdef:w",
           "{a}:bf:0123456789abcdef:w05",
           "{a}:bf:0123456789abcdef:w-1",
           "{a}:bf:0123456789abcdef:w+1",
           "{a}:bf:0123456789abcdef:W5",
           "{a}:bf:0123456789abcdef:w5x",
           "{a}:bf:0123456789abcdef:w5.0",
           "{a}:bf:0123456789abcdef:w5:n",
           "{a}:bf:0123456789abcdef:ww5",
           "{a}:bf:0123456789abcdef:w123456789012345678901",
           "{a}:bf:0123456789ABCDEF:w5",
           "{a}:bf:0123456789abcdef:w5:bf:fedcba9876543210",
           // Other shapes.
           "{a}:bf:0123456789abcdef",
           "{a}:bf:0123456789abcdef:",
           "{a}:bf:0123456789abcdef:New",
           "{a}:bf:0123456789abcdef:new:0",
           "{a}:bf:0123456789abcdef:0.0 ",
           "{a}:BF:0123456789abcdef:0.0",
           "{a}:CMS:0123456789abcdef:0",
           "{a}:bf:0123456789abcdef:0.0x",
           "{a}bf:0123456789abcdef:0.0",
           "",
           ":bf:m:",
           "{a}",
       }) {
    EXPECT_FALSE(IsInternalKey(key)) << key;
  }
}

TEST(IsInternalKeyTest, MarkerWithAnotherSlotsTag) {
  for (std::string_view name : {"a}b", "", "{}"}) {
    std::string p = filters::DataKeyPrefix(name);
    ASSERT_TRUE(IsInternalKey(filters::MarkerKey(p, name)));
    ASSERT_TRUE(IsInternalKey(filters::CmsMarkerKey(p, name)));
    ASSERT_TRUE(IsInternalKey(filters::CfMarkerKey(p, name)));
    ASSERT_TRUE(IsInternalKey(filters::TopkMarkerKey(p, name)));
    ASSERT_TRUE(IsInternalKey(filters::TdigestMarkerKey(p, name)));
    p[1] = p[1] == '0' ? '1' : '0';  // not SlotTag(): the one tag used
    EXPECT_FALSE(IsInternalKey(filters::MarkerKey(p, name))) << p;
    EXPECT_FALSE(IsInternalKey(filters::CmsMarkerKey(p, name))) << p;
    EXPECT_FALSE(IsInternalKey(filters::CfMarkerKey(p, name))) << p;
    EXPECT_FALSE(IsInternalKey(filters::TopkMarkerKey(p, name))) << p;
    EXPECT_FALSE(IsInternalKey(filters::TdigestMarkerKey(p, name))) << p;
  }
}

std::string Keys(const std::vector<std::string>& keys, char type = '*') {
  std::string out(1, type);
  out += std::to_string(keys.size()) + "\r\n";
  for (const std::string& k : keys) AppendBulk(&out, k);
  return out;
}

std::string Scan(std::string_view cursor, const std::vector<std::string>& keys) {
  std::string out = "*2\r\n";
  AppendBulk(&out, cursor);
  return out + Keys(keys);
}

const std::string kBits = "{f}:bf:0123456789abcdef:0.0";
const std::string kCount = "{f}:bf:0123456789abcdef:0:n";
const std::string kMark = "{f}:bf:m:f";
const std::string kPart = "{s}:cms:0123456789abcdef:0";
const std::string kSlot = "{f}:bf:0123456789abcdef:w7";
const std::string kTopkShard = "{t}:tk:0123456789abcdef:b.0";
const std::string kTopkHeap = "{t}:tk:0123456789abcdef:h";
const std::string kTopkItems = "{t}:tk:0123456789abcdef:i";
const std::string kTopkMark = "{t}:tk:m:t";
const std::string kDigest = "{d}:td:0123456789abcdef:d";
const std::string kDigestMark = "{d}:td:m:d";

TEST(HideInternalKeysTest, Keys) {
  EXPECT_EQ(HideInternalKeys(Keys({"f", kBits, "a", kCount, kMark, "s", kPart}), false),
            Keys({"f", "a", "s"}));
  EXPECT_EQ(HideInternalKeys(Keys({kBits, kCount, kMark}), false), Keys({}));
  EXPECT_EQ(HideInternalKeys(Keys({kBits}), false), "*0\r\n");
  // A Top-K sketch's keys alone (no other structure's infix in the reply).
  EXPECT_EQ(HideInternalKeys(Keys({"t", kTopkShard, kTopkHeap, "a", kTopkItems, kTopkMark}), false),
            Keys({"t", "a"}));
  // A t-digest's keys alone.
  EXPECT_EQ(HideInternalKeys(Keys({kDigestMark, "d", "a", kDigest}), false), Keys({"d", "a"}));
  EXPECT_EQ(HideInternalKeys(Keys({kDigest, kDigestMark}), false), "*0\r\n");
  EXPECT_EQ(HideInternalKeys(Keys({"f", kSlot, kMark, kSlot + ":bf:fedcba9876543210:0:n"}), false),
            Keys({"f"}));
  // Binary keys and look-alikes are kept byte for byte.
  const std::vector<std::string> kept = {std::string("\0\r\n$3", 5), "a:bf:m:a",
                                         "users:cms:0123456789abcdef:0", ""};
  std::vector<std::string> all = kept;
  all.insert(all.begin() + 2, kBits);
  EXPECT_EQ(HideInternalKeys(Keys(all), false), Keys(kept));
}

TEST(HideInternalKeysTest, NothingToHide) {
  for (const std::string& frame : {Keys({}), Keys({"a", "b"}), Keys({"a:bf:m:a", "x:cms:y"}),
                                   Keys({"a:tk:m:a", "{a}:tk:0123456789abcdef:b.01"}),
                                   Keys({"a:td:m:a", "{a}:td:0123456789abcdef:dd"})}) {
    EXPECT_EQ(HideInternalKeys(frame, false), frame);
  }
  EXPECT_EQ(HideInternalKeys(Scan("0", {}), true), Scan("0", {}));
  EXPECT_EQ(HideInternalKeys(Scan("17", {"a"}), true), Scan("17", {"a"}));
}

TEST(HideInternalKeysTest, Scan) {
  EXPECT_EQ(HideInternalKeys(Scan("0", {"f", kBits, kMark, "b"}), true), Scan("0", {"f", "b"}));
  EXPECT_EQ(HideInternalKeys(Scan("1234", {kBits, kPart}), true), Scan("1234", {}));
  EXPECT_EQ(HideInternalKeys(Scan("9", {kSlot, "b"}), true), Scan("9", {"b"}));
  EXPECT_EQ(HideInternalKeys(Scan("5", {kTopkMark, "t", kTopkHeap}), true), Scan("5", {"t"}));
  EXPECT_EQ(HideInternalKeys(Scan("6", {kDigest, "d", kDigestMark}), true), Scan("6", {"d"}));
  // A cursor that looks like an internal key is a cursor, kept as it is.
  EXPECT_EQ(HideInternalKeys(Scan(kBits, {kBits, "a"}), true), Scan(kBits, {"a"}));
}

TEST(HideInternalKeysTest, Resp3Sets) {
  EXPECT_EQ(HideInternalKeys(Keys({"a", kBits, "b"}, '~'), false), Keys({"a", "b"}, '~'));
  std::string scan = "*2\r\n$1\r\n0\r\n" + Keys({kMark, "a"}, '~');
  EXPECT_EQ(HideInternalKeys(scan, true), "*2\r\n$1\r\n0\r\n" + Keys({"a"}, '~'));
}

TEST(HideInternalKeysTest, OtherRepliesUnchanged) {
  const std::string keys = Keys({"a", kBits});
  const std::string scan = Scan("0", {"a", kBits});
  std::vector<std::string> frames = {
      "-ERR unknown command\r\n",
      "-ERR " + kBits + "\r\n",
      "+OK\r\n",
      ":1\r\n",
      "$-1\r\n",
      "*-1\r\n",
      "$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n",
      keys + "+extra\r\n",              // trailing bytes
      keys.substr(0, keys.size() - 1),  // truncated
      "*3\r\n$1\r\na\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n:1\r\n",
      "*2\r\n$1\r\na\r\n*1\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n",
      "*2\r\n$-1\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n",
      "*9\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n",  // count too large
      "*99999999999999999999\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n",
      "*1\r\n$99\r\n" + kBits + "\r\n",  // bulk length wrong
      "*1\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\n\n",
      "%1\r\n$" + std::to_string(kBits.size()) + "\r\n" + kBits + "\r\n:1\r\n",
  };
  for (const std::string& f : frames) EXPECT_EQ(HideInternalKeys(f, false), f) << f;
  // A KEYS reply read as SCAN's, and the reverse.
  EXPECT_EQ(HideInternalKeys(keys, true), keys);
  EXPECT_EQ(HideInternalKeys(scan, false), scan);
  // SCAN shapes that are not [cursor, keys].
  for (const std::string& f : {"*3" + scan.substr(2), "*2\r\n:0\r\n" + keys, Keys({kBits}),
                               "*2\r\n$1\r\n0\r\n" + keys + "+x\r\n"}) {
    EXPECT_EQ(HideInternalKeys(f, true), f) << f;
  }
}

}  // namespace
}  // namespace bloomproxy::protocol
