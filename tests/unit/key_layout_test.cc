// The data-key layout: every data key of a filter must hash to the filter name's Redis Cluster
// slot, whatever the name (the slot function itself: key_slot_test.cc).
#include "filters/common/key_layout.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "protocol/key_slot.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {
namespace {

TEST(DataKeyPrefixTest, TheThreeRules) {
  // 1. A name with a tag is its own prefix.
  EXPECT_EQ(DataKeyPrefix("app{users}x"), "app{users}x");
  EXPECT_EQ(DataKeyPrefix("{u}"), "{u}");
  // 2. A plain name becomes the tag.
  EXPECT_EQ(DataKeyPrefix("users"), "{users}");
  EXPECT_EQ(DataKeyPrefix("c1:a1"), "{c1:a1}");
  // 3. Anything else gets a 4-character [0-9a-z] tag of the same slot in front.
  for (std::string_view name : {"", "a}b", "a{b", "{}", "foo{}{bar}", "}{", "{", "}"}) {
    const std::string prefix = DataKeyPrefix(name);
    ASSERT_EQ(prefix.size(), name.size() + 6) << name;
    EXPECT_EQ(prefix[0], '{');
    EXPECT_EQ(prefix[5], '}');
    for (size_t i = 1; i < 5; ++i) {
      EXPECT_TRUE((prefix[i] >= '0' && prefix[i] <= '9') || (prefix[i] >= 'a' && prefix[i] <= 'z'))
          << prefix;
    }
    EXPECT_EQ(prefix.substr(6), name);
    EXPECT_EQ(protocol::KeySlot(prefix.substr(1, 4)), protocol::KeySlot(name));
    // Deterministic.
    EXPECT_EQ(DataKeyPrefix(name), prefix);
  }
}

TEST(DataKeyPrefixTest, TagsComeFromAFixedEnumeration) {
  // Tags are tried in base-36 order from "0000", so the slot of "0000" gets "0000".
  const uint16_t slot = protocol::KeySlot("0000");
  for (uint32_t n = 0; n < 2000000; ++n) {
    const std::string name = "}" + std::to_string(n);
    if (protocol::KeySlot(name) == slot) {
      EXPECT_EQ(DataKeyPrefix(name), "{0000}" + name);
      return;
    }
  }
  ADD_FAILURE() << "no name found in slot " << slot;
}

TEST(DataKeyPrefixTest, EverySlotHasATag) {
  // For each slot, find a brace-carrying name in that slot and check the prefix works; names
  // "}<n>" walk through all 16384 slots quickly.
  std::set<uint16_t> seen;
  for (uint32_t n = 0; seen.size() < 16384 && n < 2000000; ++n) {
    const std::string name = "}" + std::to_string(n);
    const uint16_t slot = protocol::KeySlot(name);
    if (!seen.insert(slot).second) continue;
    const std::string prefix = DataKeyPrefix(name);
    ASSERT_EQ(protocol::KeySlot(prefix), slot) << name;
    ASSERT_EQ(protocol::KeySlot(prefix.substr(1, 4)), slot) << name;
  }
  EXPECT_EQ(seen.size(), 16384u);
}

std::vector<std::string> SampleNames() {
  std::vector<std::string> names = {
      "",
      "users",
      "c1:a1",
      "app{users}x",
      "{users}:extra",
      "a}b",
      "a{b",
      "{}",
      "{}x",
      "foo{}{bar}",
      "foo{{bar}}zap",
      "}{",
      "{",
      "}",
      "{{}}",
      "x{y}z{w}",
      "with space",
      "ünïcødé",
      std::string("bin\0ary", 7),
      std::string("\0", 1),
      std::string("\r\n{\xff}", 5),
      std::string(300, 'k'),
      std::string(300, '{'),
  };
  for (int i = 0; i < 300; ++i) {
    names.push_back("plain:" + std::to_string(i));
    names.push_back("brace}" + std::to_string(i));
    names.push_back("open{" + std::to_string(i));
    names.push_back("t{" + std::to_string(i % 17) + "}:" + std::to_string(i));
    names.push_back(std::string(1, static_cast<char>(i & 0xff)) + std::to_string(i));
  }
  return names;
}

TEST(DataKeyTest, EveryDataKeyIsInTheNamesSlot) {
  for (const std::string& name : SampleNames()) {
    const std::string prefix = DataKeyPrefix(name);
    const uint16_t slot = protocol::KeySlot(name);
    EXPECT_EQ(protocol::KeySlot(prefix), slot) << name;
    for (std::string_view id : {"0", "5f3a9c21", "deadbeefcafebabe"}) {
      for (size_t link = 0; link < 12; link += 5) {
        EXPECT_EQ(protocol::KeySlot(CountKey(prefix, id, link)), slot) << name;
        for (size_t shard = 0; shard < 70; shard += 23) {
          EXPECT_EQ(protocol::KeySlot(BitsKey(prefix, id, link, shard)), slot) << name;
        }
      }
    }
  }
}

TEST(DataKeyTest, DifferentNamesGiveDifferentPrefixes) {
  std::set<std::string> prefixes;
  const std::vector<std::string> names = SampleNames();
  for (const std::string& name : names) prefixes.insert(DataKeyPrefix(name));
  EXPECT_EQ(prefixes.size(), names.size());
}

TEST(DataKeyTest, PrefixIsNotInjectiveAcrossRules) {
  // Documented: "users" (rule 2) and "{users}" (rule 1) share a prefix; the random filter id in
  // every data key is what keeps two such filters' keys apart.
  EXPECT_EQ(DataKeyPrefix("users"), DataKeyPrefix("{users}"));
}

TEST(DataKeyTest, KeyNames) {
  EXPECT_EQ(BitsKey("{users}", "ab12", 0, 0), "{users}:bf:ab12:0.0");
  EXPECT_EQ(BitsKey("app{users}x", "ab12", 3, 17), "app{users}x:bf:ab12:3.17");
  EXPECT_EQ(CountKey("{users}", "ab12", 0), "{users}:bf:ab12:0:n");
  EXPECT_EQ(CountKey("{users}", "ab12", 12), "{users}:bf:ab12:12:n");
  // Bits and count keys never collide.
  std::set<std::string> keys;
  for (size_t link = 0; link < 20; ++link) {
    EXPECT_TRUE(keys.insert(CountKey("{u}", "id", link)).second);
    for (size_t shard = 0; shard < 20; ++shard) {
      EXPECT_TRUE(keys.insert(BitsKey("{u}", "id", link, shard)).second);
    }
  }
}

// --- behind a sharding proxy ------------------------------------------------------------------

// What twemproxy hashes to pick a server (nc_server.c server_pool_idx, hash_tag "{}"): the text
// between the first '{' and the first '}' after it when that text is not empty, else the whole
// key.
std::string TwemproxyHashInput(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close - open > 1) {
      return std::string(key.substr(open + 1, close - open - 1));
    }
  }
  return std::string(key);
}

// What Codis hashes (pkg/proxy/mapper.go Hash): the text between the first '{' and the
// first '}' after it, even when empty; else the whole key.
std::string CodisHashInput(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos) return std::string(key.substr(open + 1, close - open - 1));
  }
  return std::string(key);
}

TEST(ShardingProxyNameTest, HashInputsOfTheTwoProxies) {
  EXPECT_EQ(TwemproxyHashInput("users"), "users");
  EXPECT_EQ(TwemproxyHashInput("{users}:bf:1"), "users");
  EXPECT_EQ(TwemproxyHashInput("a{}b{c}"), "a{}b{c}");
  EXPECT_EQ(CodisHashInput("a{}b{c}"), "");
  EXPECT_EQ(CodisHashInput("x{y}z{w}"), "y");
  EXPECT_EQ(CodisHashInput("a}b{"), "a}b{");
}

TEST(ShardingProxyNameTest, WhichNamesStayWhole) {
  // A {tag}, or no braces at all.
  for (std::string_view name : {"users", "c1:a1", "app{grp}x", "{u}", "{users}:extra", "x{y}z{w}",
                                "a{b}}", "with space", "a{{b}", "}a{b}"}) {
    EXPECT_TRUE(KeptWholeBehindShardingProxy(name)) << name;
  }
  // Empty, braces without a tag.
  for (std::string_view name :
       {"", "a}b", "a{b", "{}x", "x{}y{z}", "{}", "}{", "{", "}", "{}{x}"}) {
    EXPECT_FALSE(KeptWholeBehindShardingProxy(name)) << name;
  }
  // At most 7900 bytes.
  EXPECT_EQ(kShardingProxyMaxName, 7900u);
  EXPECT_TRUE(KeptWholeBehindShardingProxy(std::string(7900, 'n')));
  EXPECT_FALSE(KeptWholeBehindShardingProxy(std::string(7901, 'n')));
  EXPECT_TRUE(KeptWholeBehindShardingProxy("{t}" + std::string(7897, 'n')));
  EXPECT_FALSE(KeptWholeBehindShardingProxy("{t}" + std::string(7898, 'n')));
}

// The names KeptWholeBehindShardingProxy accepts, among SampleNames() and some of the longest.
std::vector<std::string> NamesKeptWhole() {
  std::vector<std::string> names;
  for (const std::string& name : SampleNames()) {
    if (KeptWholeBehindShardingProxy(name)) names.push_back(name);
  }
  names.push_back(std::string(kShardingProxyMaxName, 'n'));
  names.push_back(std::string(kShardingProxyMaxName - 3, '}') + "{t}");
  names.push_back("{" + std::string(kShardingProxyMaxName - 2, 't') + "}");
  names.push_back(std::string(kShardingProxyMaxName - 3, '{') + "{t}");
  names.push_back("{t}" + std::string(kShardingProxyMaxName - 3, '{'));
  return names;
}

TEST(ShardingProxyNameTest, EveryKeyOfAFilterKeptWholeGoesToTheNamesServer) {
  const std::vector<std::string> names = NamesKeptWhole();
  ASSERT_GT(names.size(), 600u);
  for (const std::string& name : names) {
    ASSERT_TRUE(KeptWholeBehindShardingProxy(name)) << name.substr(0, 40);
    const std::string prefix = DataKeyPrefix(name);
    const std::string twemproxy = TwemproxyHashInput(name);
    const std::string codis = CodisHashInput(name);
    std::vector<std::string> keys = {MarkerKey(prefix, name)};
    for (std::string_view id : {"0", "5f3a9c21", "deadbeefcafebabe", "ffffffffffffffff"}) {
      for (size_t link : {0, 1, 9, 63}) {
        keys.push_back(CountKey(prefix, id, link));
        for (size_t shard : {size_t{0}, size_t{1}, size_t{17}, size_t{4294967295}}) {
          keys.push_back(BitsKey(prefix, id, link, shard));
        }
      }
    }
    for (const std::string& key : keys) {
      EXPECT_EQ(TwemproxyHashInput(key), twemproxy) << key.substr(0, 60);
      EXPECT_EQ(CodisHashInput(key), codis) << key.substr(0, 60);
      EXPECT_LT(key.size(), protocol::kShardingProxyMaxKey) << key.substr(0, 60);
    }
    EXPECT_LT(name.size(), protocol::kShardingProxyMaxKey);
  }
}

TEST(ShardingProxyNameTest, NamesRefusedWouldBeSplit) {
  // Why the others are refused: some key of theirs goes elsewhere under one of the rules.
  for (std::string_view name : {"", "a}b", "a{b", "{}x", "x{}y{z}", "{}", "}{", "{", "}"}) {
    const std::string prefix = DataKeyPrefix(name);
    const std::string bits = BitsKey(prefix, "deadbeefcafebabe", 0, 0);
    EXPECT_TRUE(TwemproxyHashInput(bits) != TwemproxyHashInput(name) ||
                CodisHashInput(bits) != CodisHashInput(name))
        << name;
  }
  // Too long: the marker (the name twice) would reach twemproxy's key bound.
  const std::string name(2 * protocol::kShardingProxyMaxKey / 3, 'n');
  EXPECT_FALSE(KeptWholeBehindShardingProxy(name));
  EXPECT_GE(MarkerKey(DataKeyPrefix(name), name).size(), protocol::kShardingProxyMaxKey);
}

}  // namespace
}  // namespace bloomproxy::filters
