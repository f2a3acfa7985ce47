// A reference model of RedisBloom built only from filters/bloom/bloom.h and
// filters/bloom/bf_args.h, replayed over every recorded BF.* session (tests/fixtures/bf): each
// reply must come out byte for byte.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bloom.h"
#include "filters/common/murmur_hash.h"
#include "tests/unit/bf_fixtures.h"

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

std::vector<std::string_view> Views(const std::vector<std::string>& args) {
  return std::vector<std::string_view>(args.begin(), args.end());
}

bool TestBit(const std::string& bytes, uint64_t pos) {
  return (static_cast<unsigned char>(bytes[pos >> 3]) & (1u << (pos & 7))) != 0;
}

class Model {
 public:
  std::string Run(const std::vector<std::string>& cmd) {
    BfCommand command;
    if (!LookupBfCommand(cmd[0], &command)) {
      OtherCommand(cmd);
      return {};
    }
    const std::vector<std::string_view> args = Views(cmd);
    BfRequest req;
    std::string err = ParseBfRequest(args, BfDefaults{}, &req);
    const bool arity = err.find("wrong number of arguments") != std::string::npos;
    if (!err.empty() &&
        (arity || (command != BfCommand::kInfo && command != BfCommand::kScanDump))) {
      return err;
    }
    const std::string key(req.key);
    const bool wrong_type = others_.count(key) > 0;
    Chain* chain = filters_.count(key) > 0 ? &filters_[key] : nullptr;
    const std::string kWrongType =
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

    switch (command) {
      case BfCommand::kReserve:
        if (wrong_type) return kWrongType;
        if (chain != nullptr) return "-ERR item exists\r\n";
        Create(key, req);
        return "+OK\r\n";
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
      case BfCommand::kInsert: {
        if (wrong_type) return kWrongType;
        if (chain == nullptr) {
          if (req.nocreate) return "-ERR not found\r\n";
          chain = Create(key, req);
        }
        std::string body;
        size_t n = 0;
        for (std::string_view item : req.items) {
          const int rv = Add(chain, item);
          ++n;
          body +=
              rv == -2 ? "-ERR non scaling filter is full\r\n" : ":" + std::to_string(rv) + "\r\n";
          if (rv == -2) break;
        }
        if (command == BfCommand::kAdd) return body;
        return "*" + std::to_string(n) + "\r\n" + body;
      }
      case BfCommand::kExists:
      case BfCommand::kMExists: {
        std::string body;
        for (std::string_view item : req.items) {
          body += chain != nullptr && Check(*chain, item) ? ":1\r\n" : ":0\r\n";
        }
        if (command == BfCommand::kExists) return body;
        return "*" + std::to_string(req.items.size()) + "\r\n" + body;
      }
      case BfCommand::kCard:
        if (wrong_type) return kWrongType;
        return ":" + std::to_string(chain != nullptr ? chain->total : 0) + "\r\n";
      case BfCommand::kInfo:
        if (wrong_type) return kWrongType;
        if (chain == nullptr) return "-ERR not found\r\n";
        if (!err.empty()) return err;
        return Info(*chain, req.info_field);
      case BfCommand::kScanDump: {
        if (wrong_type) return kWrongType;
        if (chain == nullptr) return "-ERR not found\r\n";
        if (!err.empty()) return err;
        if (req.iterator == 0) {
          const std::string h = EncodeDumpHeader(Header(*chain));
          return "*2\r\n:1\r\n$" + std::to_string(h.size()) + "\r\n" + h + "\r\n";
        }
        const ChunkPos pos = LocateDumpChunk(Sizes(*chain), req.iterator);
        if (pos.end) return "*2\r\n:0\r\n$0\r\n\r\n";
        const std::string data = chain->links[pos.link].bytes.substr(pos.offset, pos.length);
        return "*2\r\n:" + std::to_string(req.iterator + static_cast<int64_t>(pos.length)) +
               "\r\n$" + std::to_string(data.size()) + "\r\n" + data + "\r\n";
      }
      case BfCommand::kDebug:  // no recording has it: bf_debug_test checks BF.DEBUG
        break;
      case BfCommand::kLoadChunk: {
        if (wrong_type) return kWrongType;
        if (chain == nullptr && req.iterator == 1) {
          DumpHeader h;
          if (!DecodeDumpHeader(req.data, &h)) return "-ERR received bad data\r\n";
          Chain& fresh = filters_[key];
          fresh.loaded = true;
          fresh.nonscaling = (h.options & kOptNoScaling) != 0;
          fresh.expansion = h.expansion;
          fresh.options = h.options;
          fresh.total = h.total_items;
          for (const DumpLink& l : h.links) {
            fresh.links.push_back(Link{l.params, l.items, std::string(l.params.bytes, '\0')});
          }
          return "+OK\r\n";
        }
        if (chain == nullptr) return "-ERR not found\r\n";
        size_t link = 0;
        uint64_t offset = 0;
        if (!LocateLoadChunk(Sizes(*chain), req.iterator, req.data.size(), &link, &offset)) {
          return "-ERR invalid offset - no link found\r\n";
        }
        chain->links[link].bytes.replace(offset, req.data.size(), req.data);
        return "+OK\r\n";
      }
    }
    return "-model: unreachable\r\n";
  }

 private:
  struct Link {
    LinkParams params;
    uint64_t items = 0;
    std::string bytes;
  };
  struct Chain {
    bool loaded = false;
    double error = 0;
    uint64_t capacity = 0;
    uint32_t expansion = 0;
    bool nonscaling = false;
    uint32_t options = 0;
    uint64_t total = 0;
    std::vector<Link> links;
  };

  void OtherCommand(const std::vector<std::string>& cmd) {
    std::string name = cmd[0];
    for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (name == "SET") {
      filters_.erase(cmd[1]);
      others_.insert(cmd[1]);
    } else if (name == "DEL" || name == "UNLINK") {
      for (size_t i = 1; i < cmd.size(); ++i) {
        filters_.erase(cmd[i]);
        others_.erase(cmd[i]);
      }
    } else if (name == "RENAME" && filters_.count(cmd[1]) > 0) {
      filters_[cmd[2]] = filters_[cmd[1]];
      filters_.erase(cmd[1]);
    }
  }

  Chain* Create(const std::string& key, const BfRequest& req) {
    Chain& c = filters_[key];
    c.error = req.error_rate;
    c.capacity = req.capacity;
    c.expansion = req.expansion;
    c.nonscaling = req.nonscaling;
    c.options = req.nonscaling ? kOptionsNonScaling : kOptionsScaling;
    const LinkParams p = ChainLink(c.error, c.capacity, c.expansion, c.nonscaling, 0);
    c.links.push_back(Link{p, 0, std::string(p.bytes, '\0')});
    return &c;
  }

  static bool AllSet(const Link& l, const ItemHash& h) {
    for (uint32_t i = 0; i < l.params.k; ++i) {
      if (!TestBit(l.bytes, BitPosition(h, i, l.params.bits))) return false;
    }
    return true;
  }

  static bool Check(const Chain& c, std::string_view item) {
    const ItemHash h = HashItem(item);
    for (auto it = c.links.rbegin(); it != c.links.rend(); ++it) {
      if (AllSet(*it, h)) return true;
    }
    return false;
  }

  int Add(Chain* c, std::string_view item) {
    if (Check(*c, item)) return 0;
    const ItemHash h = HashItem(item);
    if (c->links.back().items >= c->links.back().params.capacity) {
      if (c->nonscaling) return -2;
      // RedisBloom's step: the last link's error halved, its capacity times the expansion.
      const LinkParams& last = c->links.back().params;
      LinkParams next = SizeLink(last.capacity * c->expansion, last.error * 0.5);
      if (!c->loaded) {
        const LinkParams ours =
            ChainLink(c->error, c->capacity, c->expansion, false, c->links.size());
        EXPECT_EQ(ours.bytes, next.bytes);
        EXPECT_EQ(ours.k, next.k);
        EXPECT_EQ(ours.error, next.error);
        EXPECT_EQ(ours.capacity, next.capacity);
      }
      c->links.push_back(Link{next, 0, std::string(next.bytes, '\0')});
    }
    Link& cur = c->links.back();
    for (uint32_t i = 0; i < cur.params.k; ++i) {
      const uint64_t pos = BitPosition(h, i, cur.params.bits);
      cur.bytes[pos >> 3] = static_cast<char>(cur.bytes[pos >> 3] | (1 << (pos & 7)));
    }
    ++cur.items;
    ++c->total;
    return 1;
  }

  static std::vector<uint64_t> Sizes(const Chain& c) {
    std::vector<uint64_t> sizes;
    for (const Link& l : c.links) sizes.push_back(l.params.bytes);
    return sizes;
  }

  static DumpHeader Header(const Chain& c) {
    DumpHeader h;
    h.total_items = c.total;
    h.options = c.options;
    h.expansion = c.expansion;
    for (const Link& l : c.links) h.links.push_back(DumpLink{l.params, l.items});
    return h;
  }

  static std::string Info(const Chain& c, InfoField field) {
    uint64_t capacity = 0;
    uint64_t size = 32 + 64 * c.links.size();
    for (const Link& l : c.links) {
      capacity += l.params.capacity;
      size += l.params.bytes;
    }
    auto num = [](uint64_t v) { return ":" + std::to_string(v) + "\r\n"; };
    const std::string expansion = c.nonscaling ? "$-1\r\n" : num(c.expansion);
    switch (field) {
      case InfoField::kCapacity:
        return "*1\r\n" + num(capacity);
      case InfoField::kSize:
        return "*1\r\n" + num(size);
      case InfoField::kFilters:
        return "*1\r\n" + num(c.links.size());
      case InfoField::kItems:
        return "*1\r\n" + num(c.total);
      case InfoField::kExpansion:
        return "*1\r\n" + expansion;
      case InfoField::kAll:
        break;
    }
    return "*10\r\n+Capacity\r\n" + num(capacity) + "+Size\r\n" + num(size) +
           "+Number of filters\r\n" + num(c.links.size()) + "+Number of items inserted\r\n" +
           num(c.total) + "+Expansion rate\r\n" + expansion;
  }

  std::map<std::string, Chain> filters_;
  std::set<std::string> others_;
};

TEST(ReplayTest, EveryRecordedBfReply) {
  int compared = 0;
  for (const Case& c : Cases()) {
    Model model;
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      BfCommand command;
      const bool bf = LookupBfCommand(c.cmds[i][0], &command);
      const std::string got = model.Run(c.cmds[i]);
      if (!bf) continue;
      EXPECT_TRUE(got == c.replies[i])
          << c.name << " command " << i << " (" << c.cmds[i][0] << ")\n got: " << got.substr(0, 200)
          << "\nwant: " << c.replies[i].substr(0, 200);
      ++compared;
    }
  }
  EXPECT_GT(compared, 200);
}

}  // namespace
}  // namespace bloomproxy::filters
