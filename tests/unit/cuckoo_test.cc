// Cuckoo-filter maths against RedisBloom: hashing and fingerprints, sizing, the dump header (every
// header RedisBloom dumped in the recordings decodes and encodes back to the same bytes) and
// LOADCHUNK's header checks. The data-dependent steps (insertion, kicks, deletion, compaction)
// run as scripts in Redis: tests/integration/test_cf_scripts.py and test_cf.py check them.
#include "filters/cuckoo/cuckoo.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "filters/cuckoo/cf_meta.h"
#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters {
namespace {

// The spec's examples (cf-commands.md, "Hashing and positions").
TEST(CuckooHash, RecordedItems) {
  const CfItemHash empty = CfHash("");
  EXPECT_EQ(empty.h, 0u);
  EXPECT_EQ(empty.fingerprint(), 1);
  EXPECT_EQ(empty.h % 512, 0u);
  EXPECT_EQ(empty.h2() % 512, 405u);

  const CfItemHash hello = CfHash("hello");
  EXPECT_EQ(hello.h, 0x1e68d17c457bf117ULL);
  EXPECT_EQ(hello.fingerprint(), 159);
  EXPECT_EQ(hello.h % 512, 279u);
  EXPECT_EQ(hello.h2() % 512, 156u);
  EXPECT_EQ(hello.hi(), 0x1e68d17cu);
  EXPECT_EQ(hello.lo(), 0x457bf117u);

  const CfItemHash a = CfHash("a");
  EXPECT_EQ(a.h, 0x071717d2d36b6b11ULL);
  EXPECT_EQ(a.fingerprint(), 196);
}

TEST(CuckooHash, FingerprintsAreNeverZero) {
  // fp = h % 255 + 1 is 1..255 for every hash; the scripts compute it as (hi + lo) % 255 + 1,
  // which is the same because 2^32 % 255 == 1.
  for (uint64_t h : std::initializer_list<uint64_t>{0, 254, 255, UINT64_MAX, 0x8000000000000000ULL,
                                                    0x123456789abcdefULL}) {
    const CfItemHash x{h};
    EXPECT_GE(x.fingerprint(), 1);
    EXPECT_EQ(x.fingerprint(), (uint64_t{x.hi()} + x.lo()) % 255 + 1) << h;
  }
}

TEST(CuckooSizing, BucketsAndExpansion) {
  EXPECT_EQ(CfNumBuckets(1000, 2), 512u);
  EXPECT_EQ(CfNumBuckets(1024, 2), 512u);
  EXPECT_EQ(CfNumBuckets(1026, 2), 1024u);
  EXPECT_EQ(CfNumBuckets(1000, 3), 512u);
  EXPECT_EQ(CfNumBuckets(100, 4), 32u);
  EXPECT_EQ(CfNumBuckets(510, 255), 2u);
  EXPECT_EQ(CfNumBuckets(6, 3), 2u);
  EXPECT_EQ(CfNumBuckets(4, 255), 1u);  // 0 becomes 1
  EXPECT_EQ(CfNumBuckets(uint64_t{1} << 30, 1), uint64_t{1} << 30);
  EXPECT_EQ(CfRoundExpansion(0), 0u);
  EXPECT_EQ(CfRoundExpansion(1), 1u);
  EXPECT_EQ(CfRoundExpansion(3), 4u);
  EXPECT_EQ(CfRoundExpansion(5), 8u);
  EXPECT_EQ(CfRoundExpansion(1000), 1024u);
  EXPECT_EQ(CfRoundExpansion(32768), 32768u);
}

TEST(CuckooSizing, InfoSizeAndSubfilters) {
  CfHeader h;
  h.num_buckets = 512;
  h.bucket_size = 2;
  h.num_filters = 1;
  h.expansion = 1;
  EXPECT_EQ(h.InfoSize(), 1080u);  // the default filter
  h.num_buckets = 4;
  h.num_filters = 3;
  h.expansion = 3;  // a LOADCHUNK header may carry any expansion
  EXPECT_EQ(h.SubfilterBuckets(0), 4u);
  EXPECT_EQ(h.SubfilterBuckets(1), 12u);
  EXPECT_EQ(h.SubfilterBuckets(2), 36u);
  EXPECT_EQ(h.InfoSize(), 40 + 16 * 3 + (4 + 12 + 36) * 2u);
  h.expansion = 32768;
  EXPECT_EQ(h.SubfilterBuckets(5), 0u);  // past 64 bits
}

TEST(CuckooSizing, DataKeysHoldWholeBuckets) {
  EXPECT_EQ(CfShardBytes(2, 64), 64u);
  EXPECT_EQ(CfShardBytes(3, 64), 63u);
  EXPECT_EQ(CfShardBytes(255, 64), 255u);  // at least one bucket
  EXPECT_EQ(CfShardBytes(2, 64ULL * 1024 * 1024 - 16), 64ULL * 1024 * 1024 - 16);
}

std::string Header(uint64_t items, uint64_t buckets, uint64_t deletes, uint64_t filters,
                   uint64_t bs, uint64_t mi, uint64_t exp) {
  CfHeader h;
  h.num_items = items;
  h.num_buckets = buckets;
  h.num_deletes = deletes;
  h.num_filters = filters;
  h.bucket_size = bs;
  h.max_iterations = mi;
  h.expansion = exp;
  return EncodeCfHeader(h);
}

CfHeaderVerdict Decode(std::string_view data, CfHeader* h, uint64_t max_bytes = kCfMaxBytes) {
  return DecodeCfHeader(data, max_bytes, h);
}

TEST(CuckooHeader, LayoutIsPackedLittleEndian) {
  const std::string h = Header(1, 512, 2, 3, 4, 20, 1);
  ASSERT_EQ(h.size(), kCfHeaderBytes);
  EXPECT_EQ(h, std::string("\x01\0\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\x02\0\0\0\0\0\0\0"
                           "\x03\0\0\0\0\0\0\0\x04\0\x14\0\x01\0",
                           38));
}

TEST(CuckooHeader, EveryRecordedDumpHeaderRoundTrips) {
  size_t headers = 0;
  for (const fixtures::Case& c : fixtures::LoadCases("cf")) {
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const auto& cmd = c.cmds[i];
      // A SCANDUMP 0 reply that is not the end: *2 :1 $38 <header>.
      if (cmd.size() != 3 || cmd[2] != "0" || c.replies[i].rfind("*2\r\n:1\r\n$38\r\n", 0) != 0) {
        continue;
      }
      const std::string bytes = c.replies[i].substr(13, kCfHeaderBytes);
      CfHeader h;
      ASSERT_EQ(Decode(bytes, &h), CfHeaderVerdict::kOk) << c.name << " #" << i;
      EXPECT_EQ(EncodeCfHeader(h), bytes) << c.name << " #" << i;
      ++headers;
    }
  }
  EXPECT_GE(headers, 19u);
}

TEST(CuckooHeader, LoadchunkChecks) {
  CfHeader h;
  EXPECT_EQ(Decode(Header(0, 4, 0, 1, 2, 20, 1).substr(1), &h), CfHeaderVerdict::kInvalidHeader);
  EXPECT_EQ(Decode(Header(0, 4, 0, 1, 2, 20, 1) + "x", &h), CfHeaderVerdict::kInvalidHeader);
  // numFilters is a uint16_t in RedisBloom: 65537 is one sub-filter, 65536 none.
  ASSERT_EQ(Decode(Header(0, 4, 0, 65537, 2, 20, 1), &h), CfHeaderVerdict::kOk);
  EXPECT_EQ(h.num_filters, 1u);
  EXPECT_EQ(Decode(Header(0, 4, 0, 65536, 2, 20, 1), &h), CfHeaderVerdict::kCannotCreate);
  // Counters are taken as they are.
  ASSERT_EQ(Decode(Header(UINT64_MAX, 4, 1ULL << 63, 1, 2, 20, 1), &h), CfHeaderVerdict::kOk);
  EXPECT_EQ(h.num_items, UINT64_MAX);
  EXPECT_EQ(h.num_deletes, 1ULL << 63);
  // Expansion need not be a power of two, and 0 is for one sub-filter only.
  EXPECT_EQ(Decode(Header(0, 4, 0, 3, 2, 20, 3), &h), CfHeaderVerdict::kOk);
  EXPECT_EQ(Decode(Header(0, 4, 0, 1, 2, 20, 0), &h), CfHeaderVerdict::kOk);
  EXPECT_EQ(Decode(Header(0, 4, 0, 2, 2, 20, 0), &h), CfHeaderVerdict::kCannotCreate);
  for (const std::string& bad : {
           Header(0, 4, 0, 1, 0, 20, 1),             // bucket size 0
           Header(0, 4, 0, 1, 256, 20, 1),           // bucket size past 255
           Header(0, 4, 0, 1, 2, 0, 1),              // no iterations
           Header(0, 4, 0, 1, 2, 20, 32769),         // expansion past 32768
           Header(0, 0, 0, 1, 2, 20, 1),             // no bucket
           Header(0, 6, 0, 1, 2, 20, 1),             // not a power of two
           Header(0, 1ULL << 56, 0, 1, 2, 20, 1),    // past 2^56 - 1 buckets
           Header(0, 1ULL << 46, 0, 1, 2, 20, 1),    // 2^47 bytes: no allocation gives that
           Header(0, 1ULL << 40, 0, 200, 1, 20, 2),  // nor the sub-filters together
       }) {
    EXPECT_EQ(Decode(bad, &h), CfHeaderVerdict::kCannotCreate);
  }
  // sketch-max-bytes lowers the bound: 4 sub-filters of 8, 16, 32 and 64 bytes is 120.
  const std::string four = Header(0, 4, 0, 4, 2, 20, 2);
  EXPECT_EQ(Decode(four, &h, 121), CfHeaderVerdict::kOk);
  EXPECT_EQ(Decode(four, &h, 120), CfHeaderVerdict::kCannotCreate);
}

// RedisBloom accepts a header of 65535 sub-filters (expansion 1: each as large as the first).
// Decoding it and sizing it take one pass over the sub-filters, not one per sub-filter each:
// the proxy does both on its event loop.
TEST(CuckooHeader, SixtyFiveThousandSubfiltersInOnePass) {
  const std::string header = Header(3, 2, 0, 65535, 1, 20, 1);
  const auto start = std::chrono::steady_clock::now();
  CfHeader h;
  ASSERT_EQ(Decode(header, &h), CfHeaderVerdict::kOk);
  ASSERT_EQ(h.num_filters, 65535u);
  EXPECT_EQ(h.SubfilterBuckets(65534), 2u);
  EXPECT_EQ(h.InfoSize(), 40 + 16 * 65535u + 65535 * 2u);
  // Quadratic work (2^31 steps each) took about 11 s on a busy 2-core machine; one pass takes
  // microseconds.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // The same count with a growing expansion is refused, quickly too.
  EXPECT_EQ(Decode(Header(3, 2, 0, 65535, 1, 20, 2), &h), CfHeaderVerdict::kCannotCreate);
  // Expansion 0 (one sub-filter only): none past the first.
  h.num_buckets = 8;
  h.expansion = 0;
  EXPECT_EQ(h.SubfilterBuckets(0), 8u);
  EXPECT_EQ(h.SubfilterBuckets(60000), 0u);
}

// What the proxy keeps of such a filter: its fast-path checks take one pass too.
TEST(CuckooHeader, SixtyFiveThousandSubfiltersInTheMetaCache) {
  CfMeta m;
  m.num_buckets = 2;
  m.bucket_size = 1;
  m.expansion = 1;
  m.num_filters = 65535;
  m.shard_bytes = 64;
  const auto start = std::chrono::steady_clock::now();
  uint64_t buckets = 0;
  for (uint64_t i = 0; i < m.num_filters; ++i) buckets += m.Buckets(i);
  EXPECT_EQ(buckets, 2 * 65535u);
  EXPECT_TRUE(m.Simple());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  m.expansion = 2;
  m.num_filters = 7;
  EXPECT_EQ(m.Buckets(6), 128u);
  EXPECT_FALSE(m.Simple());  // sub-filter 6's 128 bytes: past one 64-byte data key
  m.num_filters = 6;
  EXPECT_TRUE(m.Simple());
}

TEST(CuckooDebug, Text) {
  CfHeader h;
  h.num_buckets = 512;
  h.bucket_size = 2;
  h.num_filters = 1;
  h.max_iterations = 20;
  h.expansion = 1;
  h.num_items = UINT64_MAX;  // unsigned, where CF.INFO shows -1
  EXPECT_EQ(CfDebugText(h),
            "bktsize:2 buckets:512 items:18446744073709551615 deletes:0 filters:1 "
            "max_iterations:20 expansion:1");
}

}  // namespace
}  // namespace bloomproxy::filters
