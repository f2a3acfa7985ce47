// Bloom-filter maths against RedisBloom: the spec's sizing examples, the recorded BF.INFO sizes,
// the recorded SCANDUMP bytes (which pin MurmurHash64A, the bit positions and the bit order),
// measured false-positive rates, and the dump header. The replay of the recorded sessions through
// a reference model is bf_replay_test.cc.
#include "filters/bloom/bloom.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/common/murmur_hash.h"
#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

const Case& FindCase(std::string_view name) {
  for (const Case& c : Cases()) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no fixture case " << name;
  static const Case empty;
  return empty;
}

std::vector<std::string_view> Views(const std::vector<std::string>& args) {
  return std::vector<std::string_view>(args.begin(), args.end());
}

// "*2\r\n:<iter>\r\n$<len>\r\n<data>\r\n" -> iter, data.
bool ParseScanDumpReply(std::string_view reply, int64_t* iter, std::string* data) {
  if (reply.substr(0, 5) != "*2\r\n:") return false;
  size_t p = 5;
  size_t eol = reply.find("\r\n", p);
  *iter = std::stoll(std::string(reply.substr(p, eol - p)));
  p = eol + 2;
  if (reply[p] != '$') return false;
  eol = reply.find("\r\n", p);
  const size_t len = std::stoul(std::string(reply.substr(p + 1, eol - p - 1)));
  *data = std::string(reply.substr(eol + 2, len));
  return reply.size() == eol + 2 + len + 2;
}

// The integer following "+<field>\r\n" in a BF.INFO reply.
int64_t InfoValue(std::string_view reply, std::string_view field) {
  const std::string tag = "+" + std::string(field) + "\r\n";
  const size_t at = reply.find(tag);
  if (at == std::string_view::npos || reply[at + tag.size()] != ':') return -1;
  const size_t start = at + tag.size() + 1;
  return std::stoll(std::string(reply.substr(start, reply.find("\r\n", start) - start)));
}

// ---------------------------------------------------------------------------------------------
// Sizing.

TEST(SizeLinkTest, SpecExamples) {
  // Default filter (E = 0.01, scaling): first link at e = 0.005, C = 100.
  LinkParams first = ChainLink(kDefaultErrorRate, kDefaultCapacity, kDefaultExpansion, false, 0);
  EXPECT_EQ(first.bytes, 144u);
  EXPECT_EQ(first.bits, 1152u);
  EXPECT_EQ(first.k, 8u);
  EXPECT_EQ(first.capacity, 100u);
  EXPECT_DOUBLE_EQ(first.error, 0.005);
  EXPECT_EQ(first.n2, 0);

  LinkParams direct = SizeLink(100, 0.005);
  EXPECT_EQ(direct.bytes, first.bytes);
  EXPECT_EQ(direct.k, first.k);
  EXPECT_EQ(direct.bpe, first.bpe);

  // 0.01 100 NONSCALING: the only link has the full error.
  LinkParams ns = ChainLink(0.01, 100, 2, true, 0);
  EXPECT_EQ(ns.bytes, 120u);
  EXPECT_EQ(ns.bits, 960u);
  EXPECT_EQ(ns.k, 7u);
  EXPECT_DOUBLE_EQ(ns.error, 0.01);

  // ln 2 * bpe for 0.125 is 3 in exact maths but a hair above in doubles.
  EXPECT_EQ(SizeLink(100, 0.125).k, 4u);
}

TEST(SizeLinkTest, MinimumOneBitAndWordRounding) {
  // A tiny link still has one 64-bit word.
  LinkParams tiny = SizeLink(1, 0.9);
  EXPECT_EQ(tiny.bytes, 8u);
  EXPECT_EQ(tiny.bits, 64u);
  // bits0 a multiple of 64 is not rounded further: 64 / bpe items.
  for (uint64_t c = 1; c < 5000; c += 7) {
    LinkParams p = SizeLink(c, 0.01);
    EXPECT_EQ(p.bytes % 8, 0u);
    EXPECT_EQ(p.bits, p.bytes * 8);
    EXPECT_GE(static_cast<double>(p.bits), std::floor(c * p.bpe));
    EXPECT_LT(static_cast<double>(p.bits), std::floor(c * p.bpe) + 64);
  }
}

TEST(ChainLinkTest, ScalingGeometry) {
  for (size_t i = 0; i < 6; ++i) {
    LinkParams p = ChainLink(0.01, 1000, 3, false, i);
    EXPECT_EQ(p.capacity, 1000u * static_cast<uint64_t>(std::pow(3, i)));
    EXPECT_EQ(p.error, 0.01 * std::pow(0.5, static_cast<double>(i + 1)));
    // Same as RedisBloom's step from the previous link: error * 0.5, capacity * expansion.
    if (i > 0) {
      LinkParams prev = ChainLink(0.01, 1000, 3, false, i - 1);
      LinkParams step = SizeLink(prev.capacity * 3, prev.error * 0.5);
      EXPECT_EQ(step.bytes, p.bytes);
      EXPECT_EQ(step.k, p.k);
      EXPECT_EQ(step.error, p.error);
    }
  }
}

TEST(ChainLinkTest, ErrorRateAboveQuarterIsCapped) {
  // The requested rate is capped to 0.25 before the tightening: the first link of a scaling
  // filter never gets more than 0.125, a non-scaling one never more than 0.25.
  for (double e : {0.3, 0.5, 0.9, 0.999}) {
    LinkParams s = ChainLink(e, 100, 2, false, 0);
    LinkParams ref = ChainLink(0.25, 100, 2, false, 0);
    EXPECT_EQ(s.error, 0.125) << e;
    EXPECT_EQ(s.bytes, ref.bytes) << e;
    EXPECT_EQ(s.k, 4u) << e;
    EXPECT_EQ(ChainLink(e, 100, 2, false, 1).error, 0.0625) << e;
    LinkParams ns = ChainLink(e, 100, 2, true, 0);
    EXPECT_EQ(ns.error, 0.25) << e;
    EXPECT_EQ(ns.bytes, SizeLink(100, 0.25).bytes) << e;
  }
  EXPECT_EQ(ChainLink(0.25, 100, 2, false, 0).error, 0.125);
  EXPECT_EQ(ChainLink(0.2, 100, 2, false, 0).error, 0.1);
}

TEST(ChainLinkTest, AbsurdInputsStayDefined) {
  // Far-out links saturate instead of overflowing (UBSan would flag a bad conversion).
  for (size_t index : {size_t{10}, size_t{50}, size_t{3000}}) {
    const LinkParams p = ChainLink(0.01, kMaxCapacity, kMaxExpansion, false, index);
    EXPECT_EQ(p.bits, p.bytes * 8);
    EXPECT_GT(p.bytes, 0u);
  }
  EXPECT_EQ(ChainLink(0.01, 100, 1, false, 1000000).capacity, 100u);
  const LinkParams zero = SizeLink(100, 0.0);
  EXPECT_EQ(zero.bits, zero.bytes * 8);
}

// Tracks what each fixture key was created with, to recompute its BF.INFO Size and Capacity.
TEST(SizeLinkTest, EveryRecordedInfoSize) {
  int checked = 0;
  for (const Case& c : Cases()) {
    struct Made {
      bool from_header = false;
      BfRequest req;
      DumpHeader header;
    };
    std::map<std::string, Made> made;
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const auto& cmd = c.cmds[i];
      const std::string& reply = c.replies[i];
      BfCommand command;
      if (cmd.size() < 2 || !LookupBfCommand(cmd[0], &command)) {
        continue;
      }
      std::vector<std::string> owned = cmd;
      BfRequest req;
      if (!ParseBfRequest(Views(owned), BfDefaults{}, &req).empty()) continue;
      const std::string key(req.key);
      const bool creating = command == BfCommand::kReserve || command == BfCommand::kAdd ||
                            command == BfCommand::kMAdd || command == BfCommand::kInsert;
      if (creating && reply[0] != '-' && made.count(key) == 0) {
        Made m;
        m.req = req;
        m.req.items.clear();
        made[key] = m;
      }
      if (command == BfCommand::kLoadChunk && req.iterator == 1 && reply == "+OK\r\n" &&
          made.count(key) == 0) {
        Made m;
        m.from_header = true;
        ASSERT_TRUE(DecodeDumpHeader(req.data, &m.header));
        made[key] = m;
      }
      if (command != BfCommand::kInfo || req.info_field != InfoField::kAll || reply[0] != '*') {
        continue;
      }
      ASSERT_EQ(made.count(key), 1u) << c.name << " " << key;
      const Made& m = made[key];
      const int64_t links = InfoValue(reply, "Number of filters");
      uint64_t bytes = 0;
      uint64_t capacity = 0;
      for (int64_t l = 0; l < links; ++l) {
        LinkParams p = m.from_header ? m.header.links[l].params
                                     : ChainLink(m.req.error_rate, m.req.capacity, m.req.expansion,
                                                 m.req.nonscaling, l);
        bytes += p.bytes;
        capacity += p.capacity;
      }
      EXPECT_EQ(InfoValue(reply, "Size"), static_cast<int64_t>(32 + 64 * links + bytes))
          << c.name << " command " << i;
      EXPECT_EQ(InfoValue(reply, "Capacity"), static_cast<int64_t>(capacity))
          << c.name << " command " << i;
      ++checked;
    }
  }
  EXPECT_GE(checked, 9);
}

// ---------------------------------------------------------------------------------------------
// Hashing and bit positions against the recorded dump.

// Builds a chain from items exactly as RedisBloom's SBChain_Add does, setting bits either
// RedisBloom's way (LSB first) or Redis's SETBIT way through RedisBitOffset.
struct BuiltLink {
  LinkParams params;
  uint64_t items = 0;
  std::string lsb_bytes;     // byte[pos >> 3] |= 1 << (pos & 7)
  std::string setbit_bytes;  // SETBIT RedisBitOffset(pos): byte[off >> 3] |= 0x80 >> (off & 7)
};

bool TestBit(const std::string& bytes, uint64_t pos) {
  return (static_cast<unsigned char>(bytes[pos >> 3]) & (1u << (pos & 7))) != 0;
}

int AddToChain(std::vector<BuiltLink>* links, double error, uint64_t capacity, uint32_t expansion,
               bool nonscaling, std::string_view item) {
  const ItemHash h = HashItem(item);
  for (auto it = links->rbegin(); it != links->rend(); ++it) {
    bool all = true;
    for (uint32_t i = 0; i < it->params.k && all; ++i) {
      all = TestBit(it->lsb_bytes, BitPosition(h, i, it->params.bits));
    }
    if (all) return 0;
  }
  if (links->back().items >= links->back().params.capacity) {
    if (nonscaling) return -2;
    BuiltLink next;
    next.params = ChainLink(error, capacity, expansion, false, links->size());
    next.lsb_bytes.assign(next.params.bytes, '\0');
    next.setbit_bytes.assign(next.params.bytes, '\0');
    links->push_back(std::move(next));
  }
  BuiltLink& cur = links->back();
  for (uint32_t i = 0; i < cur.params.k; ++i) {
    const uint64_t pos = BitPosition(h, i, cur.params.bits);
    cur.lsb_bytes[pos >> 3] = static_cast<char>(cur.lsb_bytes[pos >> 3] | (1 << (pos & 7)));
    const uint64_t off = RedisBitOffset(pos);
    // Same byte, and the MSB-first bit index (7 - (off & 7)) is the LSB-first index pos & 7.
    EXPECT_EQ(off >> 3, pos >> 3);
    EXPECT_EQ(0x80u >> (off & 7), 1u << (pos & 7));
    cur.setbit_bytes[off >> 3] =
        static_cast<char>(cur.setbit_bytes[off >> 3] | (0x80 >> (off & 7)));
  }
  ++cur.items;
  return 1;
}

void CheckDumpCase(std::string_view name, bool full) {
  const Case& c = FindCase(name);
  ASSERT_FALSE(c.cmds.empty());
  BfRequest reserve;
  std::vector<std::string> first = c.cmds[0];
  ASSERT_EQ(ParseBfRequest(Views(first), BfDefaults{}, &reserve), "");
  ASSERT_EQ(reserve.command, BfCommand::kReserve);

  std::vector<BuiltLink> links(1);
  links[0].params =
      ChainLink(reserve.error_rate, reserve.capacity, reserve.expansion, reserve.nonscaling, 0);
  links[0].lsb_bytes.assign(links[0].params.bytes, '\0');
  links[0].setbit_bytes.assign(links[0].params.bytes, '\0');

  std::string header_reply;
  std::vector<std::pair<int64_t, std::string>> chunks;  // (iterator asked, reply)
  int adds = 0;
  for (size_t i = 1; i < c.cmds.size(); ++i) {
    const auto& cmd = c.cmds[i];
    if (cmd[0] == "BF.MADD") {
      std::string expected = "*" + std::to_string(cmd.size() - 2) + "\r\n";
      for (size_t j = 2; j < cmd.size(); ++j) {
        const int rv = AddToChain(&links, reserve.error_rate, reserve.capacity, reserve.expansion,
                                  reserve.nonscaling, cmd[j]);
        expected += ":" + std::to_string(rv) + "\r\n";
        ++adds;
      }
      EXPECT_EQ(expected, c.replies[i]) << "MADD " << i;
    } else if (cmd[0] == "BF.SCANDUMP") {
      if (cmd[2] == "0") {
        header_reply = c.replies[i];
      } else {
        chunks.emplace_back(std::stoll(cmd[2]), c.replies[i]);
      }
    }
  }
  EXPECT_GT(adds, 1000);

  // The header: what our chain would dump, byte for byte.
  int64_t iter = -1;
  std::string header_bytes;
  ASSERT_TRUE(ParseScanDumpReply(header_reply, &iter, &header_bytes));
  EXPECT_EQ(iter, 1);
  DumpHeader ours;
  ours.options = reserve.nonscaling ? kOptionsNonScaling : kOptionsScaling;
  ours.expansion = reserve.expansion;
  for (const BuiltLink& l : links) {
    ours.links.push_back(DumpLink{l.params, l.items});
    ours.total_items += l.items;
  }
  EXPECT_EQ(EncodeDumpHeader(ours), header_bytes);
  EXPECT_EQ(links.size(), 2u);
  if (!full) return;

  // The data chunks: every link's bytes, both bit orders.
  std::vector<uint64_t> sizes;
  for (const BuiltLink& l : links) sizes.push_back(l.params.bytes);
  ASSERT_EQ(chunks.size(), links.size() + 1);
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::string data;
    ASSERT_TRUE(ParseScanDumpReply(chunks[i].second, &iter, &data));
    const ChunkPos pos = LocateDumpChunk(sizes, chunks[i].first);
    if (i == links.size()) {
      EXPECT_TRUE(pos.end);
      EXPECT_EQ(iter, 0);
      EXPECT_EQ(data, "");
      continue;
    }
    ASSERT_FALSE(pos.end);
    EXPECT_EQ(pos.link, i);
    EXPECT_EQ(pos.offset, 0u);
    EXPECT_EQ(pos.length, data.size());
    EXPECT_EQ(iter, chunks[i].first + static_cast<int64_t>(pos.length));
    EXPECT_TRUE(data == links[i].lsb_bytes) << "link " << i << " differs from RedisBloom's dump";
    EXPECT_TRUE(data == links[i].setbit_bytes) << "link " << i << " (SETBIT order) differs";
    size_t link_out = 99;
    uint64_t offset_out = 99;
    EXPECT_TRUE(LocateLoadChunk(sizes, iter, data.size(), &link_out, &offset_out));
    EXPECT_EQ(link_out, i);
    EXPECT_EQ(offset_out, 0u);
  }
}

TEST(HashTest, ScanDumpFullMatchesRedisBloomBytes) { CheckDumpCase("scandump_full", true); }
TEST(HashTest, ScanDumpHeaderMatchesRedisBloom) { CheckDumpCase("scandump_header", false); }

TEST(HashTest, MurmurSeedsChain) {
  const ItemHash h = HashItem("hello");
  EXPECT_EQ(h.a, MurmurHash64A("hello", kBloomSeed));
  EXPECT_EQ(h.b, MurmurHash64A("hello", h.a));
  EXPECT_NE(HashItem("").a, HashItem(std::string_view("\0", 1)).a);
}

TEST(HashTest, RedisBitOffsetIsAnInvolutionWithinTheByte) {
  for (uint64_t pos = 0; pos < 4096; ++pos) {
    const uint64_t off = RedisBitOffset(pos);
    EXPECT_EQ(off >> 3, pos >> 3);
    EXPECT_EQ(RedisBitOffset(off), pos);
  }
  EXPECT_EQ(RedisBitOffset(0), 7u);
  EXPECT_EQ(RedisBitOffset(7), 0u);
  EXPECT_EQ(RedisBitOffset(9), 14u);
}

// ---------------------------------------------------------------------------------------------
// False positives.

std::string Member(uint64_t i) { return "member:" + std::to_string(i); }
std::string Stranger(uint64_t i) { return "stranger:" + std::to_string(i); }

TEST(FalsePositiveTest, SingleLinkAtCapacityMeetsItsRate) {
  constexpr uint64_t kItems = 100000;
  const LinkParams p = ChainLink(0.01, kItems, 2, true, 0);
  std::vector<uint8_t> bits(p.bytes, 0);
  for (uint64_t i = 0; i < kItems; ++i) {
    const ItemHash h = HashItem(Member(i));
    for (uint32_t j = 0; j < p.k; ++j) {
      const uint64_t pos = BitPosition(h, j, p.bits);
      bits[pos >> 3] |= static_cast<uint8_t>(1u << (pos & 7));
    }
  }
  uint64_t false_positives = 0;
  for (uint64_t i = 0; i < kItems; ++i) {
    const ItemHash h = HashItem(Stranger(i));
    bool all = true;
    for (uint32_t j = 0; j < p.k && all; ++j) {
      const uint64_t pos = BitPosition(h, j, p.bits);
      all = (bits[pos >> 3] & (1u << (pos & 7))) != 0;
    }
    false_positives += all ? 1 : 0;
  }
  const double rate = static_cast<double>(false_positives) / kItems;
  EXPECT_LE(rate, 0.01 * 1.2) << false_positives << " false positives";
  EXPECT_GT(rate, 0.01 * 0.5) << "suspiciously few: is the filter wider than it should be?";
}

TEST(FalsePositiveTest, ScalingChainStaysBelowTheRequestedRate) {
  constexpr double kError = 0.01;
  constexpr uint64_t kCapacity = 100;
  constexpr size_t kLinks = 10;
  // The errors of the links sum to E * (1/2 + 1/4 + ... + 1/2^10) < E.
  double sum = 0;
  for (size_t i = 0; i < kLinks; ++i) {
    const LinkParams p = ChainLink(kError, kCapacity, 2, false, i);
    EXPECT_EQ(p.error, kError * std::pow(0.5, static_cast<double>(i + 1)));
    sum += p.error;
  }
  EXPECT_LT(sum, kError);

  // Fill all ten links to capacity and measure the compound rate.
  struct L {
    LinkParams p;
    std::vector<uint8_t> bits;
  };
  std::vector<L> links;
  uint64_t next = 0;
  for (size_t i = 0; i < kLinks; ++i) {
    L l{ChainLink(kError, kCapacity, 2, false, i), {}};
    l.bits.assign(l.p.bytes, 0);
    for (uint64_t n = 0; n < l.p.capacity; ++n) {
      const ItemHash h = HashItem(Member(next++));
      for (uint32_t j = 0; j < l.p.k; ++j) {
        const uint64_t pos = BitPosition(h, j, l.p.bits);
        l.bits[pos >> 3] |= static_cast<uint8_t>(1u << (pos & 7));
      }
    }
    links.push_back(std::move(l));
  }
  EXPECT_EQ(next, kCapacity * ((1u << kLinks) - 1));
  constexpr uint64_t kProbes = 100000;
  uint64_t false_positives = 0;
  for (uint64_t i = 0; i < kProbes; ++i) {
    const ItemHash h = HashItem(Stranger(i));
    bool hit = false;
    for (const L& l : links) {
      bool all = true;
      for (uint32_t j = 0; j < l.p.k && all; ++j) {
        const uint64_t pos = BitPosition(h, j, l.p.bits);
        all = (l.bits[pos >> 3] & (1u << (pos & 7))) != 0;
      }
      if (all) {
        hit = true;
        break;
      }
    }
    false_positives += hit ? 1 : 0;
  }
  // Expected about 0.009; 0.0105 leaves five standard deviations of sampling noise.
  EXPECT_LT(static_cast<double>(false_positives) / kProbes, kError * 1.05)
      << false_positives << " false positives";
}

// ---------------------------------------------------------------------------------------------
// Dump header.

DumpHeader SampleHeader() {
  DumpHeader h;
  h.options = kOptionsScaling;
  h.expansion = 2;
  for (size_t i = 0; i < 3; ++i) {
    DumpLink l{ChainLink(0.01, 100, 2, false, i), 100u << i};
    h.links.push_back(l);
    h.total_items += l.items;
  }
  h.links.back().items -= 7;
  h.total_items -= 7;
  return h;
}

TEST(DumpHeaderTest, RoundTrip) {
  const DumpHeader h = SampleHeader();
  const std::string bytes = EncodeDumpHeader(h);
  ASSERT_EQ(bytes.size(), 20u + 53u * 3);
  // Little-endian whatever the host: total_items first.
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), (h.total_items & 0xff));
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), ((h.total_items >> 8) & 0xff));
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), 3);
  EXPECT_EQ(static_cast<unsigned char>(bytes[12]), 5);
  DumpHeader back;
  ASSERT_TRUE(DecodeDumpHeader(bytes, &back));
  EXPECT_EQ(back.total_items, h.total_items);
  EXPECT_EQ(back.options, h.options);
  EXPECT_EQ(back.expansion, h.expansion);
  ASSERT_EQ(back.links.size(), h.links.size());
  for (size_t i = 0; i < h.links.size(); ++i) {
    EXPECT_EQ(back.links[i].items, h.links[i].items);
    EXPECT_EQ(back.links[i].params.bytes, h.links[i].params.bytes);
    EXPECT_EQ(back.links[i].params.bits, h.links[i].params.bits);
    EXPECT_EQ(back.links[i].params.capacity, h.links[i].params.capacity);
    EXPECT_EQ(back.links[i].params.error, h.links[i].params.error);
    EXPECT_EQ(back.links[i].params.bpe, h.links[i].params.bpe);
    EXPECT_EQ(back.links[i].params.k, h.links[i].params.k);
    EXPECT_EQ(back.links[i].params.n2, h.links[i].params.n2);
  }
  EXPECT_EQ(EncodeDumpHeader(back), bytes);
}

TEST(DumpHeaderTest, RecordedHeadersDecodeAndReencode) {
  std::vector<std::string> headers;
  for (const Case& c : Cases()) {
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const auto& cmd = c.cmds[i];
      if (cmd[0] == "BF.SCANDUMP" && cmd.size() == 3 && cmd[2] == "0" && c.replies[i][0] == '*') {
        int64_t iter;
        std::string data;
        ASSERT_TRUE(ParseScanDumpReply(c.replies[i], &iter, &data));
        headers.push_back(data);
      }
      if (cmd[0] == "BF.LOADCHUNK" && cmd.size() == 4 && cmd[2] == "1") headers.push_back(cmd[3]);
    }
  }
  ASSERT_GE(headers.size(), 3u);
  for (const std::string& bytes : headers) {
    DumpHeader h;
    ASSERT_TRUE(DecodeDumpHeader(bytes, &h));
    EXPECT_EQ(EncodeDumpHeader(h), bytes);
    EXPECT_EQ(h.options, kOptionsScaling);
    uint64_t sum = 0;
    for (size_t i = 0; i < h.links.size(); ++i) {
      sum += h.links[i].items;
      // Every recorded link is the link our sizing would make for it.
      const LinkParams p = SizeLink(h.links[i].params.capacity, h.links[i].params.error);
      EXPECT_EQ(p.bytes, h.links[i].params.bytes);
      EXPECT_EQ(p.bits, h.links[i].params.bits);
      EXPECT_EQ(p.k, h.links[i].params.k);
      EXPECT_EQ(p.bpe, h.links[i].params.bpe);
    }
    EXPECT_EQ(sum, h.total_items);
  }
}

TEST(DumpHeaderTest, RejectsEveryInvalidHeader) {
  const std::string good = EncodeDumpHeader(SampleHeader());
  DumpHeader out;
  ASSERT_TRUE(DecodeDumpHeader(good, &out));

  auto with = [&](auto mutate) {
    DumpHeader h = SampleHeader();
    mutate(&h);
    return EncodeDumpHeader(h);
  };
  // Length: short, long, truncated fixed part, empty.
  EXPECT_FALSE(DecodeDumpHeader(good.substr(0, good.size() - 1), &out));
  EXPECT_FALSE(DecodeDumpHeader(good + "x", &out));
  EXPECT_FALSE(DecodeDumpHeader(good.substr(0, 19), &out));
  EXPECT_FALSE(DecodeDumpHeader("", &out));
  // Zero links.
  EXPECT_FALSE(DecodeDumpHeader(good.substr(0, 20).replace(8, 4, std::string(4, '\0')), &out));
  // A link count that does not match the length.
  std::string wrong_count = good;
  wrong_count[8] = 2;
  EXPECT_FALSE(DecodeDumpHeader(wrong_count, &out));
  // Unknown option bits (every known combination is fine).
  for (uint32_t opts = 0; opts < 16; ++opts) {
    EXPECT_TRUE(DecodeDumpHeader(with([&](DumpHeader* h) { h->options = opts; }), &out));
  }
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->options = 16 | 5; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->options = 0x80000005u; }), &out));
  // Total that is not the sum of the links' items.
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->total_items += 1; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->total_items -= 1; }), &out));
  // Items that overflow the sum.
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) {
                                  h->links[0].items = ~uint64_t{0};
                                  h->links[1].items = 2;
                                  h->total_items = 1 + h->links[2].items;
                                }),
                                &out));
  // Error outside (0, 1).
  for (double e : {0.0, -0.1, 1.0, 1.5, std::nan("")}) {
    EXPECT_FALSE(DecodeDumpHeader(with([&](DumpHeader* h) { h->links[1].params.error = e; }), &out))
        << e;
  }
  // n2 above 63, or a power-of-two modulus larger than the bits.
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[0].params.n2 = 64; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[0].params.n2 = 20; }), &out));
  EXPECT_TRUE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[0].params.n2 = 10; }), &out));
  // bits != bytes * 8, or no bits at all.
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[2].params.bits += 8; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[2].params.bytes += 1; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) {
                                  h->links[2].params.bytes = 0;
                                  h->links[2].params.bits = 0;
                                }),
                                &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) {
                                  h->links[2].params.bytes = uint64_t{1} << 61;
                                  h->links[2].params.bits = 0;
                                }),
                                &out));
  // k that is not ceil(ln 2 * bpe), including a bpe no k matches.
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[1].params.k += 1; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[1].params.k -= 1; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[1].params.bpe += 3; }), &out));
  EXPECT_FALSE(DecodeDumpHeader(with([](DumpHeader* h) { h->links[1].params.bpe = 1e300; }), &out));
  EXPECT_FALSE(
      DecodeDumpHeader(with([](DumpHeader* h) { h->links[1].params.bpe = std::nan(""); }), &out));
  // A failed decode leaves *out alone.
  DumpHeader untouched;
  untouched.expansion = 77;
  EXPECT_FALSE(DecodeDumpHeader("", &untouched));
  EXPECT_EQ(untouched.expansion, 77u);
}

// ---------------------------------------------------------------------------------------------
// Chunk positions.

TEST(ChunkTest, DumpChunksWalkEveryLink) {
  const std::vector<uint64_t> sizes = {100, 50, 200};
  ChunkPos p = LocateDumpChunk(sizes, 1);
  EXPECT_FALSE(p.end);
  EXPECT_EQ(p.link, 0u);
  EXPECT_EQ(p.offset, 0u);
  EXPECT_EQ(p.length, 100u);
  p = LocateDumpChunk(sizes, 101);
  EXPECT_EQ(p.link, 1u);
  EXPECT_EQ(p.offset, 0u);
  EXPECT_EQ(p.length, 50u);
  p = LocateDumpChunk(sizes, 120);  // mid-link: the rest of that link only
  EXPECT_EQ(p.link, 1u);
  EXPECT_EQ(p.offset, 19u);
  EXPECT_EQ(p.length, 31u);
  p = LocateDumpChunk(sizes, 151);
  EXPECT_EQ(p.link, 2u);
  EXPECT_EQ(p.length, 200u);
  p = LocateDumpChunk(sizes, 350);  // the very last byte
  EXPECT_FALSE(p.end);
  EXPECT_EQ(p.link, 2u);
  EXPECT_EQ(p.offset, 199u);
  EXPECT_EQ(p.length, 1u);
  EXPECT_TRUE(LocateDumpChunk(sizes, 351).end);
  EXPECT_TRUE(LocateDumpChunk(sizes, INT64_MAX).end);
  EXPECT_TRUE(LocateDumpChunk(sizes, 0).end);
  EXPECT_TRUE(LocateDumpChunk(sizes, -5).end);
  EXPECT_TRUE(LocateDumpChunk({}, 1).end);
  // A small cap splits a link; the iterator walk visits every byte once.
  uint64_t covered = 0;
  int64_t it = 1;
  int chunks = 0;
  for (;;) {
    p = LocateDumpChunk(sizes, it, 64);
    if (p.end) break;
    EXPECT_LE(p.length, 64u);
    covered += p.length;
    it += static_cast<int64_t>(p.length);
    ++chunks;
  }
  EXPECT_EQ(covered, 350u);
  EXPECT_EQ(chunks, 2 + 1 + 4);
}

TEST(ChunkTest, SixteenMebibyteCap) {
  const uint64_t big = 40ull * 1024 * 1024 + 5;
  const std::vector<uint64_t> sizes = {144, big};
  ChunkPos p = LocateDumpChunk(sizes, 145);
  EXPECT_EQ(p.link, 1u);
  EXPECT_EQ(p.length, kMaxDumpChunk);
  p = LocateDumpChunk(sizes, 145 + 2 * static_cast<int64_t>(kMaxDumpChunk));
  EXPECT_EQ(p.offset, 2 * kMaxDumpChunk);
  EXPECT_EQ(p.length, big - 2 * kMaxDumpChunk);
  // LOADCHUNK of each of those chunks lands where it came from.
  size_t link = 0;
  uint64_t offset = 0;
  const int64_t after = 145 + 2 * static_cast<int64_t>(kMaxDumpChunk);
  ASSERT_TRUE(LocateLoadChunk(sizes, after, kMaxDumpChunk, &link, &offset));
  EXPECT_EQ(link, 1u);
  EXPECT_EQ(offset, kMaxDumpChunk);
}

TEST(ChunkTest, LoadChunkPositions) {
  const std::vector<uint64_t> sizes = {100, 50};
  size_t link = 9;
  uint64_t offset = 9;
  // SCANDUMP 1 returned 100 bytes with iterator 101.
  ASSERT_TRUE(LocateLoadChunk(sizes, 101, 100, &link, &offset));
  EXPECT_EQ(link, 0u);
  EXPECT_EQ(offset, 0u);
  ASSERT_TRUE(LocateLoadChunk(sizes, 151, 50, &link, &offset));
  EXPECT_EQ(link, 1u);
  EXPECT_EQ(offset, 0u);
  ASSERT_TRUE(LocateLoadChunk(sizes, 151, 10, &link, &offset));  // the last 10 bytes
  EXPECT_EQ(link, 1u);
  EXPECT_EQ(offset, 40u);
  ASSERT_TRUE(LocateLoadChunk(sizes, 51, 20, &link, &offset));  // inside the first link
  EXPECT_EQ(link, 0u);
  EXPECT_EQ(offset, 30u);
  // Crossing from link 0 into link 1, past the end, before the start, bad iterators.
  EXPECT_FALSE(LocateLoadChunk(sizes, 111, 20, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, 152, 1, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, 200, 10, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, 100, 100, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, 5, 10, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, 0, 0, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, -1, 0, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, INT64_MAX, 1, &link, &offset));
  EXPECT_FALSE(LocateLoadChunk(sizes, 10, ~uint64_t{0}, &link, &offset));
}

}  // namespace
}  // namespace bloomproxy::filters
