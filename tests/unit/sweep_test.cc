// The sweep's pure half (filters/common/sweep.h): which keys it takes for internal keys (exactly
// the ones KEYS and SCAN hide), who may own each, and the requests and replies of its script.
#include "filters/common/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "filters/bloom/bf_meta.h"
#include "filters/bloom/window/window_slots.h"
#include "filters/cms/cms_meta.h"
#include "filters/common/key_layout.h"
#include "protocol/encoder.h"
#include "protocol/internal_keys.h"
#include "protocol/key_slot.h"
#include "protocol/reply_decoder.h"
#include "tests/unit/key_names.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kId = test::kKeyId;
const std::vector<std::string>& Names() { return test::KeyNames(); }

bool HasOwner(const SweepKey& k, std::string_view name, std::string_view mark, std::string_view id,
              std::string_view field) {
  return std::any_of(k.owners.begin(), k.owners.end(), [&](const SweepOwner& o) {
    return o.name == name && o.mark == mark && o.id == id && o.field == field;
  });
}

TEST(PrefixOwnersTest, EveryNameIsAnOwnerOfItsPrefix) {
  for (const std::string& name : Names()) {
    const std::vector<std::string> owners = PrefixOwners(DataKeyPrefix(name));
    EXPECT_NE(std::find(owners.begin(), owners.end(), name), owners.end()) << name;
    // And every owner listed really has that prefix.
    for (const std::string& o : owners) EXPECT_EQ(DataKeyPrefix(o), DataKeyPrefix(name)) << o;
  }
}

TEST(PrefixOwnersTest, SharedPrefixes) {
  // "users" (rule 2) and "{users}" (rule 1) share "{users}".
  EXPECT_EQ(PrefixOwners("{users}"), (std::vector<std::string>{"{users}", "users"}));
  EXPECT_EQ(PrefixOwners("app{users}x"), (std::vector<std::string>{"app{users}x"}));
  // Rule 3: "{T}a}b" is the prefix of "a}b" and, having a tag, of itself.
  const std::string p = DataKeyPrefix("a}b");
  EXPECT_EQ(PrefixOwners(p), (std::vector<std::string>{p, "a}b"}));
  const std::string empty = DataKeyPrefix("");
  // "{T}" itself, "T", and "" (whose slot tag T is).
  EXPECT_EQ(PrefixOwners(empty), (std::vector<std::string>{empty, empty.substr(1, 4), ""}));
  // No tag: no owner.
  EXPECT_TRUE(PrefixOwners("users").empty());
  EXPECT_TRUE(PrefixOwners("{}").empty());
}

TEST(ParseSweepKeyTest, DataKeysAndTheirOwners) {
  for (const std::string& name : Names()) {
    const std::string p = DataKeyPrefix(name);
    SweepKey k;
    ASSERT_TRUE(ParseSweepKey(BitsKey(p, kId, 3, 1), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "bloomproxy", kId, "l3")) << name;
    ASSERT_TRUE(ParseSweepKey(CountKey(p, kId, 12), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "bloomproxy", kId, "l12")) << name;
    CmsConfig config;
    config.max_part_bytes = 1024;
    auto meta = NewCmsMeta(name, 100, 7, config);
    for (const std::string& part : meta->PartKeys()) {
      ASSERT_TRUE(ParseSweepKey(part, &k)) << part;
      EXPECT_TRUE(HasOwner(k, name, "cms", meta->id, "")) << part;
    }
    ASSERT_TRUE(ParseSweepKey(MarkerKey(p, name), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "bloomproxy", "", "")) << name;
    ASSERT_TRUE(ParseSweepKey(CmsMarkerKey(p, name), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "cms", "", "")) << name;
    // A cuckoo filter's data keys (sub-filter.key) and marker.
    ASSERT_TRUE(ParseSweepKey(p + ":cf:" + std::string(kId) + ":3.0", &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "cf", kId, "")) << name;
    ASSERT_TRUE(ParseSweepKey(CfMarkerKey(p, name), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "cf", "", "")) << name;
    // A Top-K sketch's bucket shards, heap, heap items and marker.
    for (std::string_view key : {"b.0", "b.5", "h", "i"}) {
      ASSERT_TRUE(ParseSweepKey(p + ":tk:" + std::string(kId) + ":" + std::string(key), &k))
          << name;
      EXPECT_TRUE(HasOwner(k, name, "tk", kId, "")) << name;
    }
    ASSERT_TRUE(ParseSweepKey(TopkMarkerKey(p, name), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "tk", "", "")) << name;
    // A t-digest's data and marker.
    ASSERT_TRUE(ParseSweepKey(p + ":td:" + std::string(kId) + ":d", &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "td", kId, "")) << name;
    ASSERT_TRUE(ParseSweepKey(TdigestMarkerKey(p, name), &k)) << name;
    EXPECT_TRUE(HasOwner(k, name, "td", "", "")) << name;
    // The name itself is no internal key.
    EXPECT_FALSE(ParseSweepKey(name, &k)) << name;
  }
}

// A windowed filter's slot is owned by the windowed filter of its id (a hash with the field
// window: a plain filter of that id does not own it); a slot's data keys by the slot, a filter
// whose prefix is its own name. So a live slot is never swept, and one whose windowed filter is
// gone is, like any leftover (if it does not expire first).
TEST(ParseSweepKeyTest, SlotsAndTheirOwners) {
  constexpr std::string_view kSlotId = "fedcba9876543210";
  for (const std::string& name : Names()) {
    const std::string p = DataKeyPrefix(name);
    for (int64_t e : {int64_t{0}, int64_t{7}, int64_t{1176000001}}) {
      const std::string slot = SlotName(p, kId, e);
      SweepKey k;
      ASSERT_TRUE(ParseSweepKey(slot, &k)) << slot;
      EXPECT_TRUE(HasOwner(k, name, "bloomproxy", kId, "window")) << slot;
      for (const SweepOwner& o : k.owners) {
        if (o.field == "window") {
          EXPECT_EQ(DataKeyPrefix(o.name), p) << slot;
        }
      }
      ASSERT_TRUE(ParseSweepKey(BitsKey(slot, kSlotId, 2, 1), &k)) << slot;
      EXPECT_TRUE(HasOwner(k, slot, "bloomproxy", kSlotId, "l2")) << slot;
      ASSERT_TRUE(ParseSweepKey(CountKey(slot, kSlotId, 0), &k)) << slot;
      EXPECT_TRUE(HasOwner(k, slot, "bloomproxy", kSlotId, "l0")) << slot;
      // A slot's creation's temporary keys are nobody's, as a filter's.
      ASSERT_TRUE(ParseSweepKey(slot + ":bf:" + std::string(kSlotId) + ":new", &k)) << slot;
      for (const SweepOwner& o : k.owners) EXPECT_NE(o.name, slot) << slot;
    }
  }
  SweepKey k;
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:w7", &k));
  ASSERT_EQ(k.owners.size(), 2u);
  EXPECT_TRUE(HasOwner(k, "{users}", "bloomproxy", kId, "window"));
  EXPECT_TRUE(HasOwner(k, "users", "bloomproxy", kId, "window"));
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:w7:bf:fedcba9876543210:0.3", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "{users}:bf:0123456789abcdef:w7", "bloomproxy", kSlotId, "l0"));
}

TEST(ParseSweepKeyTest, TemporaryKeysHaveNoOwner) {
  SweepKey k;
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:new", &k));
  EXPECT_TRUE(k.owners.empty());
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:2.3:fedcba9876543210", &k));
  EXPECT_TRUE(k.owners.empty());
}

TEST(ParseSweepKeyTest, ExactOwnersOfLiteralKeys) {
  SweepKey k;
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:0.0", &k));
  ASSERT_EQ(k.owners.size(), 2u);
  EXPECT_TRUE(HasOwner(k, "{users}", "bloomproxy", kId, "l0"));
  EXPECT_TRUE(HasOwner(k, "users", "bloomproxy", kId, "l0"));
  ASSERT_TRUE(ParseSweepKey("app{users}x:cms:0123456789abcdef:4", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "app{users}x", "cms", kId, ""));
  ASSERT_TRUE(ParseSweepKey("{users}:bf:m:users", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "users", "bloomproxy", "", ""));
  ASSERT_TRUE(ParseSweepKey("{users}:tk:0123456789abcdef:b.3", &k));
  ASSERT_EQ(k.owners.size(), 2u);
  EXPECT_TRUE(HasOwner(k, "{users}", "tk", kId, ""));
  EXPECT_TRUE(HasOwner(k, "users", "tk", kId, ""));
  ASSERT_TRUE(ParseSweepKey("app{users}x:tk:0123456789abcdef:h", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "app{users}x", "tk", kId, ""));
  ASSERT_TRUE(ParseSweepKey("{users}:tk:0123456789abcdef:i", &k));
  ASSERT_EQ(k.owners.size(), 2u);
  ASSERT_TRUE(ParseSweepKey("{users}:tk:m:users", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "users", "tk", "", ""));
  EXPECT_FALSE(ParseSweepKey("{users}:tk:0123456789abcdef:b.01", &k));
  EXPECT_FALSE(ParseSweepKey("users:tk:0123456789abcdef:h", &k));
  ASSERT_TRUE(ParseSweepKey("{users}:td:0123456789abcdef:d", &k));
  ASSERT_EQ(k.owners.size(), 2u);
  EXPECT_TRUE(HasOwner(k, "{users}", "td", kId, ""));
  EXPECT_TRUE(HasOwner(k, "users", "td", kId, ""));
  ASSERT_TRUE(ParseSweepKey("app{users}x:td:0123456789abcdef:d", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "app{users}x", "td", kId, ""));
  ASSERT_TRUE(ParseSweepKey("{users}:td:m:users", &k));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_TRUE(HasOwner(k, "users", "td", "", ""));
  EXPECT_FALSE(ParseSweepKey("{users}:td:0123456789abcdef:dd", &k));
  EXPECT_FALSE(ParseSweepKey("{users}:td:0123456789abcdef:0", &k));
  EXPECT_FALSE(ParseSweepKey("users:td:0123456789abcdef:d", &k));
  EXPECT_FALSE(ParseSweepKey("{users}:td:m:other", &k));
}

// A key that reads both as a marker and as a data key is kept if either reading's owner owns
// it: here the marker of a filter whose name ends like a data key.
TEST(ParseSweepKeyTest, TwoReadingsKeepBothOwners) {
  const std::string name = "{t}:bf:0123456789abcdef:0.0";
  const std::string marker = MarkerKey(DataKeyPrefix(name), name);
  SweepKey k;
  ASSERT_TRUE(ParseSweepKey(marker, &k));
  EXPECT_TRUE(HasOwner(k, name, "bloomproxy", "", ""));
  EXPECT_TRUE(HasOwner(k, "{t}:bf:0123456789abcdef:0.0:bf:m:{t}", "bloomproxy", kId, "l0"));
}

// The sweep takes for internal exactly what KEYS and SCAN hide (protocol/internal_keys.h).
TEST(ParseSweepKeyTest, AgreesWithIsInternalKey) {
  std::vector<std::string> keys = {"users:bf:0123456789abcdef:0.0",
                                   "a:bf:m:a",
                                   "{a}:bf:m:b",
                                   "{a}:bf:0123456789ABCDEF:0.0",
                                   "{a}:bf:0123456789abcdef:01.0",
                                   "{a}:bf:0123456789abcdef:0:N",
                                   "{a}:cms:0123456789abcdef:",
                                   "{a}:cms:0123456789abcdef:00",
                                   "{a}:bf:0123456789abcdef:new:0",
                                   "{a}:bf:m:",
                                   "",
                                   ":bf:m:",
                                   "{users}:bf:m:{users}x",
                                   "x{a}:bf:m:a",
                                   "{a}:bf:0123456789abcdef:0.0:0123",
                                   "{x:bf:m:y}:bf:m:x:bf:m:y",
                                   "a{b}c:bf:0123456789abcdef:0.0",
                                   "{a}:bf:0123456789abcdef:w",
                                   "{a}:bf:0123456789abcdef:w05",
                                   "{a}:bf:0123456789abcdef:w-1",
                                   "{a}:bf:0123456789abcdef:w5:n",
                                   "{a}:bf:0123456789abcdef:w5.0",
                                   "users:bf:0123456789abcdef:w5",
                                   "{a}:tk:0123456789abcdef:b.",
                                   "{a}:tk:0123456789abcdef:b.00",
                                   "{a}:tk:0123456789abcdef:hi",
                                   "{a}:tk:0123456789abcdef:0",
                                   "{a}:tk:m:b",
                                   "a:tk:m:a",
                                   "users:tk:0123456789abcdef:i",
                                   "{a}:td:0123456789abcdef:",
                                   "{a}:td:0123456789abcdef:D",
                                   "{a}:td:0123456789abcdef:d0",
                                   "{a}:td:0123456789ABCDEF:d",
                                   "{a}:td:m:b",
                                   "a:td:m:a",
                                   "users:td:0123456789abcdef:d",
                                   "{a:td:m:b}:td:0123456789abcdef:d"};
  for (const std::string& name : Names()) {
    const std::string p = DataKeyPrefix(name);
    keys.push_back(BitsKey(p, kId, 0, 0));
    keys.push_back(CountKey(p, kId, 5));
    keys.push_back(MarkerKey(p, name));
    keys.push_back(CmsMarkerKey(p, name));
    keys.push_back(p + ":cms:" + std::string(kId) + ":7");
    keys.push_back(p + ":cf:" + std::string(kId) + ":0.12");
    keys.push_back(p + ":cf:" + std::string(kId) + ":0");
    keys.push_back(CfMarkerKey(p, name));
    for (std::string_view key : {"b.0", "b.12", "h", "i", "b", "x"}) {
      keys.push_back(p + ":tk:" + std::string(kId) + ":" + std::string(key));
    }
    keys.push_back(TopkMarkerKey(p, name));
    for (std::string_view key : {"d", "h", "0", "d.0"}) {
      keys.push_back(p + ":td:" + std::string(kId) + ":" + std::string(key));
    }
    keys.push_back(TdigestMarkerKey(p, name));
    keys.push_back(p + ":bf:" + std::string(kId) + ":new");
    const std::string slot = SlotName(p, kId, 1176000001);
    keys.push_back(slot);
    keys.push_back(BitsKey(slot, kId, 0, 1));
    keys.push_back(CountKey(slot, kId, 3));
    keys.push_back(name);
    keys.push_back(MarkerKey("{x}", name));
  }
  SweepKey k;
  for (const std::string& key : keys) {
    EXPECT_EQ(ParseSweepKey(key, &k), protocol::IsInternalKey(key)) << key;
  }
}

// Redis's glob (util.c stringmatchlen) for what kSweepMatch uses: '*', '[...]' and literals.
bool Glob(std::string_view p, std::string_view s) {
  if (p.empty()) return s.empty();
  if (p[0] == '*') {
    for (size_t i = 0; i <= s.size(); ++i) {
      if (Glob(p.substr(1), s.substr(i))) return true;
    }
    return false;
  }
  if (s.empty()) return false;
  if (p[0] == '[') {
    const size_t end = p.find(']');
    return p.substr(1, end - 1).find(s[0]) != std::string_view::npos &&
           Glob(p.substr(end + 1), s.substr(1));
  }
  return p[0] == s[0] && Glob(p.substr(1), s.substr(1));
}

// SCAN's MATCH lets every internal key through.
TEST(SweepMatchTest, EveryInternalKeyMatches) {
  for (const std::string& name : Names()) {
    const std::string p = DataKeyPrefix(name);
    for (const std::string& key :
         {BitsKey(p, kId, 0, 3), CountKey(p, kId, 2), MarkerKey(p, name), CmsMarkerKey(p, name),
          CfMarkerKey(p, name), p + ":cf:" + std::string(kId) + ":2.1", TopkMarkerKey(p, name),
          p + ":tk:" + std::string(kId) + ":b.3", p + ":tk:" + std::string(kId) + ":h",
          p + ":tk:" + std::string(kId) + ":i", TdigestMarkerKey(p, name),
          p + ":td:" + std::string(kId) + ":d", p + ":cms:" + std::string(kId) + ":0",
          p + ":bf:" + std::string(kId) + ":new", BitsKey(p, kId, 1, 0) + ":" + std::string(kId),
          SlotName(p, kId, 42), BitsKey(SlotName(p, kId, 42), kId, 0, 0),
          CountKey(SlotName(p, kId, 42), kId, 1)}) {
      ASSERT_TRUE(protocol::IsInternalKey(key)) << key;
      EXPECT_TRUE(Glob(kSweepMatch, key)) << key;
    }
  }
  EXPECT_FALSE(Glob(kSweepMatch, "users"));
  EXPECT_FALSE(Glob(kSweepMatch, "a:b:c"));
  // The match before Top-K let every other structure's keys through, and no Top-K key.
  EXPECT_TRUE(Glob(kSweepMatchBeforeTopk, "{u}:cf:m:u"));
  EXPECT_FALSE(Glob(kSweepMatchBeforeTopk, "{u}:tk:m:u"));
  // The match before t-digests let every other structure's keys through, and no t-digest key.
  EXPECT_TRUE(Glob(kSweepMatchBeforeTdigest, "{u}:tk:m:u"));
  EXPECT_TRUE(Glob(kSweepMatchBeforeTdigest, "{u}:cms:0123456789abcdef:0"));
  EXPECT_FALSE(Glob(kSweepMatchBeforeTdigest, "{u}:td:m:u"));
  EXPECT_FALSE(Glob(kSweepMatchBeforeTdigest, "{u}:td:0123456789abcdef:d"));
}

// Decodes one RESP frame with hiredis, as the proxy does.
protocol::ReplyPtr Decode(std::string_view frame) {
  static protocol::ReplyDecoder decoder;
  return decoder.Decode(frame);
}

std::vector<std::string> Args(std::string_view request) {
  protocol::ReplyPtr r = Decode(request);  // a multibulk request decodes as an array of bulks
  std::vector<std::string> out;
  for (size_t i = 0; r && i < r->elements; ++i) {
    out.emplace_back(r->element[i]->str, r->element[i]->len);
  }
  return out;
}

TEST(SweepRequestTest, KeysAndArguments) {
  SweepKey bits, marker, tmp;
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:1.0", &bits));
  ASSERT_TRUE(ParseSweepKey("{users}:bf:m:users", &marker));
  ASSERT_TRUE(ParseSweepKey("{users}:bf:0123456789abcdef:new", &tmp));
  std::string request;
  AppendSweepRequest(&request, "sha1",
                     {{"{users}:bf:0123456789abcdef:1.0", &bits, true},
                      {"{users}:bf:m:users", &marker, false},
                      {"{users}:bf:0123456789abcdef:new", &tmp, true}});
  const std::vector<std::string> expected = {
      "EVALSHA", "sha1", "6",
      // KEYS: each key, then its owners.
      "{users}:bf:0123456789abcdef:1.0", "{users}", "users", "{users}:bf:m:users", "users",
      "{users}:bf:0123456789abcdef:new",
      // ARGV: mode, owner count, (mark, id, field) per owner.
      "d", "2", "bloomproxy", "0123456789abcdef", "l1", "bloomproxy", "0123456789abcdef", "l1", "c",
      "1", "bloomproxy", "", "", "d", "0"};
  EXPECT_EQ(Args(request), expected);
  // Every key of one call is in one slot.
  for (std::string_view k : {"{users}:bf:0123456789abcdef:1.0", "{users}", "users"}) {
    EXPECT_EQ(protocol::KeySlot(k), protocol::KeySlot("users")) << k;
  }
}

TEST(SweepRequestTest, ScriptLoadAndLock) {
  std::string load;
  AppendSweepLoad(&load);
  const std::vector<std::string> args = Args(load);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0], "SCRIPT");
  EXPECT_EQ(args[1], "LOAD");
  EXPECT_EQ(args[2], SweepScript());
  std::string lock;
  AppendSweepLock(&lock, "me", 180000);
  const std::vector<std::string> l = Args(lock);
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(l[0], "EVAL");
  EXPECT_EQ(l[2], "1");
  EXPECT_EQ(l[3], kSweepLockKey);
  EXPECT_EQ(l[4], "me");
  EXPECT_EQ(l[5], "180000");
  EXPECT_NE(l[1].find("'PX'"), std::string::npos);
}

// Any proxy's sweep is known by its commands (a MONITOR's filter hides them): what this proxy
// sends, in any case, and nothing else.
TEST(SweepTraceTest, RecognisesTheSweepsCommands) {
  std::string lock, load, scan, check;
  AppendSweepLock(&lock, "me", 180000);
  AppendSweepLoad(&load);
  protocol::AppendCommand(
      &scan, std::vector<std::string_view>{"SCAN", "0", "MATCH", kSweepMatch, "COUNT", "100"});
  const SweepKey parsed;
  AppendSweepRequest(&check, SweepScriptSha1(), {{"{a}:bf:0123456789abcdef:new", &parsed, true}});
  EXPECT_EQ(RecogniseSweep(Args(lock)), SweepTrace::kLock);
  EXPECT_EQ(RecogniseSweep(Args(load)), SweepTrace::kPass);
  EXPECT_EQ(RecogniseSweep(Args(scan)), SweepTrace::kPass);
  EXPECT_EQ(RecogniseSweep(Args(check)), SweepTrace::kPass);
  EXPECT_EQ(RecogniseSweep({"evalsha", "abc", "1", std::string(kSweepLockKey), "o", "1"}),
            SweepTrace::kLock);
  EXPECT_EQ(RecogniseSweep({"scan", "0", "match", std::string(kSweepMatch)}), SweepTrace::kPass);
  // A proxy of the version before Top-K sketches, or before t-digests, during an upgrade.
  EXPECT_EQ(
      RecogniseSweep({"SCAN", "7", "MATCH", std::string(kSweepMatchBeforeTopk), "COUNT", "100"}),
      SweepTrace::kPass);
  EXPECT_EQ(
      RecogniseSweep({"SCAN", "7", "MATCH", std::string(kSweepMatchBeforeTdigest), "COUNT", "100"}),
      SweepTrace::kPass);
  for (const std::vector<std::string>& other :
       std::vector<std::vector<std::string>>{{},
                                             {"GET", std::string(kSweepLockKey)},
                                             {"EVAL", "return 1", "0"},
                                             {"EVAL", "return 1", "1", "other-key"},
                                             {"SCAN", "0", "MATCH", "user:*"},
                                             {"SCAN", "0", "COUNT", std::string(kSweepMatch)},
                                             {"SCRIPT", "LOAD", "return 1"},
                                             {"KEYS", std::string(kSweepMatch)}}) {
    EXPECT_EQ(RecogniseSweep(other), SweepTrace::kNone) << (other.empty() ? "" : other[0]);
  }
}

TEST(SweepReplyTest, Verdicts) {
  std::vector<SweepVerdict> v;
  ASSERT_TRUE(ParseSweepReply(Decode("*4\r\n:0\r\n:1\r\n:2\r\n:3\r\n").get(), 4, &v));
  EXPECT_EQ(v, (std::vector<SweepVerdict>{SweepVerdict::kLive, SweepVerdict::kOrphan,
                                          SweepVerdict::kDeleted, SweepVerdict::kGone}));
  EXPECT_FALSE(ParseSweepReply(Decode("*1\r\n:0\r\n").get(), 2, &v));
  EXPECT_FALSE(ParseSweepReply(Decode("*1\r\n:4\r\n").get(), 1, &v));
  EXPECT_FALSE(ParseSweepReply(Decode("*1\r\n$1\r\n0\r\n").get(), 1, &v));
  EXPECT_FALSE(ParseSweepReply(Decode("-NOSCRIPT No matching script.\r\n").get(), 0, &v));
  EXPECT_FALSE(ParseSweepReply(nullptr, 0, &v));
}

TEST(SweepReplyTest, Scan) {
  std::string cursor;
  std::vector<std::string_view> keys;
  protocol::ReplyPtr r = Decode("*2\r\n$3\r\n176\r\n*2\r\n$1\r\na\r\n$0\r\n\r\n");
  ASSERT_TRUE(ParseScanReply(r.get(), &cursor, &keys));
  EXPECT_EQ(cursor, "176");
  EXPECT_EQ(keys, (std::vector<std::string_view>{"a", ""}));
  EXPECT_FALSE(ParseScanReply(Decode("-ERR no\r\n").get(), &cursor, &keys));
  EXPECT_FALSE(ParseScanReply(Decode("*2\r\n:1\r\n*0\r\n").get(), &cursor, &keys));
}

TEST(SweepReplyTest, KeyspaceDatabases) {
  EXPECT_EQ(KeyspaceDatabases("# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\n"
                              "db12:keys=1,expires=1,avg_ttl=5\r\n"),
            (std::vector<int>{0, 12}));
  EXPECT_TRUE(KeyspaceDatabases("# Keyspace\r\n").empty());
  EXPECT_TRUE(KeyspaceDatabases("dbx:keys=1\r\ndb:keys=1\r\n").empty());
}

}  // namespace
}  // namespace bloomproxy::filters
