// BF.* inside MULTI (filters/bloom/multi_bf.h): what QueueBfCommand queues (a refusal for a wrong
// arity Redis itself checks, PING and a known reply for other immediate errors, else one EVAL of
// the script with the keys and arguments it reads), and the RedisBloom replies Reply() makes of the
// script's answers. The script itself runs against a real redis-server in
// tests/integration/test_multi_bf.py.
#include <gtest/gtest.h>

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bf_meta.h"
#include "filters/bloom/bloom.h"
#include "filters/bloom/multi_bf.h"
#include "filters/common/key_layout.h"
#include "filters/common/multi_command.h"
#include "protocol/reply_decoder.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string_view>;
using Strings = std::vector<std::string>;

const std::string kWrongTypeReply =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const std::string kDamaged = "-ERR bloomproxy: the filter's metadata is damaged: ";

struct Queued {
  std::unique_ptr<QueuedSketch> sketch;
  std::string refusal;
  Strings request;  // the queued command's arguments
};

Queued Queue(const Args& args, const BfConfig& config = BfConfig()) {
  Queued q;
  q.sketch = QueueBfCommand(args, config, &q.refusal);
  if (q.sketch == nullptr) return q;
  protocol::RequestParser parser;
  protocol::Command cmd;
  size_t consumed = 0;
  const std::string& bytes = q.sketch->request();
  EXPECT_EQ(parser.Parse(bytes, true, &consumed, &cmd), protocol::ParseStatus::kOk);
  EXPECT_EQ(consumed, bytes.size());
  for (std::string_view a : cmd.args) q.request.emplace_back(a);
  // The script's text, when it is exactly the script, is shown short in the expectations.
  if (q.request.size() > 1 && q.request[1] == MultiBfScript()) q.request[1] = "<script>";
  return q;
}

std::string Reply(const Queued& q, std::string_view answer) {
  protocol::ReplyDecoder decoder;
  return q.sketch->Reply(answer, &decoder);
}

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

// The script's arguments up to <creates>: EVAL script 2 name marker op prefix deferred creates.
Strings Head(std::string_view name, std::string_view op, std::string_view deferred, bool creates) {
  const std::string prefix = DataKeyPrefix(name);
  return {"EVAL",
          "<script>",
          "2",
          std::string(name),
          MarkerKey(prefix, name),
          std::string(op),
          prefix,
          std::string(deferred),
          creates ? "1" : "0"};
}

Strings Concat(Strings a, const Strings& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The item arguments: their count, then each item's two hashes in hex.
Strings ItemArgs(const Strings& items) {
  Strings out = {std::to_string(items.size())};
  for (const std::string& item : items) {
    const ItemHash h = HashItem(item);
    out.push_back(Hex(h.a));
    out.push_back(Hex(h.b));
  }
  return out;
}

// The new filter's fields (the random id as queued) and counts a creating command passes:
// F, fields, C, counts.
Strings NewFilterArgs(const Strings& request, double error, uint64_t capacity, uint32_t expansion,
                      bool nonscaling, uint64_t shard) {
  EXPECT_GT(request.size(), 13u);
  if (request.size() <= 13) return {};
  const LinkParams l0 = ChainLink(error, capacity, expansion, nonscaling, 0);
  return {"16",
          "bloomproxy",
          "1",
          "id",
          request[13],
          "error",
          DoubleBits(error),
          "capacity",
          std::to_string(capacity),
          "expansion",
          nonscaling ? "0" : std::to_string(expansion),  // a non-scaling chain does not expand
          "options",
          nonscaling ? "13" : "5",
          "shard",
          std::to_string(shard),
          "l0",
          EncodeLink(l0),
          "1",
          "0"};
}

bool IsDamaged(const std::string& reply) { return reply.rfind(kDamaged, 0) == 0; }

std::string Answer(std::string_view status) {
  return "*1\r\n$" + std::to_string(status.size()) + "\r\n" + std::string(status) + "\r\n";
}

// ---------------------------------------------------------------------------------------------
// Queueing.

TEST(MultiBfQueue, WrongArityIsRefusedWhenQueued) {
  // Redis checks a command's arity (RedisBloom's: bf.add 3, bf.madd -3, ...) when it queues it.
  const struct {
    Args args;
    const char* name;
  } cases[] = {
      {{"BF.ADD", "f"}, "bf.add"},
      {{"bf.add", "f", "a", "b"}, "bf.add"},
      {{"BF.MADD", "f"}, "bf.madd"},
      {{"BF.EXISTS", "f"}, "bf.exists"},
      {{"BF.EXISTS", "f", "a", "b"}, "bf.exists"},
      {{"BF.MEXISTS", "f"}, "bf.mexists"},
      {{"BF.RESERVE", "f", "0.01"}, "bf.reserve"},
      {{"BF.INSERT", "f", "ITEMS"}, "bf.insert"},
      {{"BF.CARD"}, "bf.card"},
      {{"BF.CARD", "f", "x"}, "bf.card"},
      {{"BF.INFO"}, "bf.info"},
      {{"BF.SCANDUMP", "f"}, "bf.scandump"},
      {{"BF.LOADCHUNK", "f", "1"}, "bf.loadchunk"},
      {{"BF.LOADCHUNK", "f", "1", "d", "e"}, "bf.loadchunk"},
  };
  for (const auto& c : cases) {
    Queued q = Queue(c.args);
    EXPECT_EQ(q.sketch, nullptr) << c.name;
    EXPECT_EQ(q.refusal,
              "-ERR wrong number of arguments for '" + std::string(c.name) + "' command\r\n")
        << c.name;
  }
}

TEST(MultiBfQueue, ArgumentCountTheModuleChecksIsAnsweredAtExec) {
  // These pass Redis's arity check (bf.reserve -4, bf.insert -4, bf.info -2): Redis queues them,
  // and RedisBloom's own check answers them when EXEC runs them, inside EXEC's array.
  for (const Args& args :
       {Args{"BF.RESERVE", "f", "0.01", "10", "EXPANSION", "2", "NONSCALING", "x"},
        Args{"BF.INSERT", "f", "CAPACITY", "10"}, Args{"BF.INSERT", "f", "ERROR", "0.1", "ITEMS"},
        Args{"BF.INSERT", "f", "NONSCALING", "CAPACITY"}, Args{"BF.INFO", "f", "CAPACITY", "x"}}) {
    Queued q = Queue(args);
    ASSERT_NE(q.sketch, nullptr) << args[0] << " " << args.size() << " refused: " << q.refusal;
    EXPECT_EQ(q.request, Strings{"PING"});
    std::string lower(args[0]);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(Reply(q, "+PONG\r\n"),
              "-ERR wrong number of arguments for '" + lower + "' command\r\n");
  }
}

TEST(MultiBfQueue, ParseErrorIsAKnownReply) {
  const struct {
    Args args;
    std::string reply;
  } cases[] = {
      {{"BF.RESERVE", "f", "2", "100"},
       "-ERR error rate must be in the range (0.000000, 1.000000)\r\n"},
      {{"BF.RESERVE", "f", "0.01", "x"}, "-ERR bad capacity\r\n"},
      {{"BF.INSERT", "f", "CAPACITY", "x", "ITEMS", "a"}, "-Bad capacity\r\n"},
      {{"BF.INSERT", "f", "FOO", "ITEMS", "a"}, "-Unknown argument received\r\n"},
  };
  for (const auto& c : cases) {
    Queued q = Queue(c.args);
    ASSERT_NE(q.sketch, nullptr) << c.reply;
    EXPECT_EQ(q.sketch->request(), "*1\r\n$4\r\nPING\r\n");
    EXPECT_EQ(Reply(q, "+PONG\r\n"), c.reply);
    // An error in PING's place (the transaction did not run as queued) is passed on.
    EXPECT_EQ(Reply(q, "-ERR something else\r\n"), "-ERR something else\r\n");
  }
}

TEST(MultiBfQueue, AddIsOneEvalThatCreatesWithTheConfiguredDefaults) {
  BfConfig config;
  config.defaults.error_rate = 0.02;
  config.defaults.capacity = 7;
  config.defaults.expansion = 3;
  config.max_shard_bytes = 64;
  Queued q = Queue({"bf.add", "users", "a"}, config);
  ASSERT_NE(q.sketch, nullptr);
  ASSERT_GT(q.request.size(), 13u);
  EXPECT_EQ(q.request[12], "id");
  EXPECT_EQ(q.request[13].size(), 16u);
  const Strings want = Concat(
      Concat(Head("users", "add", "", true), NewFilterArgs(q.request, 0.02, 7, 3, false, 64)),
      ItemArgs({"a"}));
  EXPECT_EQ(q.request, want);
  // Each queued creation gets its own id.
  Queued again = Queue({"BF.ADD", "users", "a"}, config);
  ASSERT_GT(again.request.size(), 13u);
  EXPECT_NE(again.request[13], q.request[13]);
}

TEST(MultiBfQueue, MaddAndInsertPassEveryItemsHashes) {
  const Strings items = {"a", "", std::string("\0\xff", 2), "a"};
  Queued q = Queue({"BF.MADD", "{t}x", "a", "", std::string_view("\0\xff", 2), "a"});
  ASSERT_NE(q.sketch, nullptr);
  EXPECT_EQ(
      q.request,
      Concat(Concat(Head("{t}x", "add", "", true),
                    NewFilterArgs(q.request, 0.01, 100, 2, false, BfConfig().max_shard_bytes)),
             ItemArgs(items)));
  q = Queue({"BF.INSERT", "f", "CAPACITY", "5", "ERROR", "0.1", "NONSCALING", "ITEMS", "b", "c"});
  EXPECT_EQ(q.request,
            Concat(Concat(Head("f", "add", "", true),
                          NewFilterArgs(q.request, 0.1, 5, 2, true, BfConfig().max_shard_bytes)),
                   ItemArgs({"b", "c"})));
  // NOCREATE: nothing to create with.
  q = Queue({"BF.INSERT", "f", "NOCREATE", "ITEMS", "b"});
  EXPECT_EQ(q.request, Concat(Concat(Head("f", "add", "", false), {"0", "0"}), ItemArgs({"b"})));
}

TEST(MultiBfQueue, ReadsCreateNothing) {
  Queued q = Queue({"BF.EXISTS", "f", "a"});
  EXPECT_EQ(q.request, Concat(Concat(Head("f", "exists", "", false), {"0", "0"}), ItemArgs({"a"})));
  q = Queue({"BF.MEXISTS", "f", "a", "b"});
  EXPECT_EQ(q.request,
            Concat(Concat(Head("f", "exists", "", false), {"0", "0"}), ItemArgs({"a", "b"})));
  q = Queue({"BF.CARD", "f"});
  EXPECT_EQ(q.request, Concat(Head("f", "counts", "", false), {"0", "0", "0"}));
  q = Queue({"BF.INFO", "f", "items"});
  EXPECT_EQ(q.request, Concat(Head("f", "counts", "", false), {"0", "0", "0"}));
  q = Queue({"BF.SCANDUMP", "f", "0"});
  EXPECT_EQ(q.request, Concat(Head("f", "counts", "", false), {"0", "0", "0"}));
  q = Queue({"BF.SCANDUMP", "f", "17"});
  EXPECT_EQ(q.request, Concat(Head("f", "dump", "", false), {"0", "0", "17"}));
}

TEST(MultiBfQueue, ReserveCreatesWithItsParameters) {
  Queued q = Queue({"BF.RESERVE", "f", "0.001", "1000", "EXPANSION", "4"});
  EXPECT_EQ(
      q.request,
      Concat(Concat(Head("f", "reserve", "", true),
                    NewFilterArgs(q.request, 0.001, 1000, 4, false, BfConfig().max_shard_bytes)),
             {"0"}));
}

TEST(MultiBfQueue, ErrorsRedisBloomGivesAfterTheKeyCheckAreDeferred) {
  // BF.INFO's field and BF.SCANDUMP's iterator are checked after the key (not found first).
  Queued q = Queue({"BF.INFO", "f", "bogus"});
  ASSERT_NE(q.sketch, nullptr);
  ASSERT_GT(q.request.size(), 7u);
  const std::string info_error = q.request[7];
  EXPECT_EQ(info_error, "-Invalid information value\r\n");
  EXPECT_EQ(q.request, Concat(Head("f", "counts", info_error, false), {"0", "0", "0"}));
  EXPECT_EQ(Reply(q, Answer("deferred")), info_error);
  EXPECT_EQ(Reply(q, Answer("missing")), "-ERR not found\r\n");
  EXPECT_EQ(Reply(q, Answer("wrongtype")), kWrongTypeReply);
  q = Queue({"BF.SCANDUMP", "f", "x"});
  ASSERT_GT(q.request.size(), 7u);
  EXPECT_EQ(q.request[7], "-Second argument must be numeric\r\n");
  EXPECT_EQ(Reply(q, Answer("deferred")), q.request[7]);
  // A header LOADCHUNK cannot load: received bad data, once the name is known to be free.
  q = Queue({"BF.LOADCHUNK", "f", "1", "junk"});
  ASSERT_GT(q.request.size(), 7u);
  EXPECT_EQ(q.request,
            Concat(Head("f", "load", "-ERR received bad data\r\n", true), {"0", "0", "1", "junk"}));
  EXPECT_EQ(Reply(q, Answer("deferred")), "-ERR received bad data\r\n");
  EXPECT_EQ(Reply(q, Answer("baddata")), "-ERR received bad data\r\n");
}

TEST(MultiBfQueue, LoadChunkOfAHeaderCreatesItsFilter) {
  DumpHeader header;
  header.total_items = 3;
  header.expansion = 4;
  for (size_t i = 0; i < 2; ++i) {
    DumpLink link;
    link.params = ChainLink(0.01, 10, 4, false, i);
    link.items = i == 0 ? 10 : 3;
    header.total_items = 13;
    header.links.push_back(link);
  }
  const std::string data = EncodeDumpHeader(header);
  Queued q = Queue({"BF.LOADCHUNK", "f", "1", data});
  ASSERT_GT(q.request.size(), 13u);
  const Strings fields = {"18",
                          "bloomproxy",
                          "1",
                          "id",
                          q.request[13],
                          "error",
                          DoubleBits(0.01),
                          "capacity",
                          "10",
                          "expansion",
                          "4",
                          "options",
                          "5",
                          "shard",
                          std::to_string(BfConfig().max_shard_bytes),
                          "l0",
                          EncodeLink(header.links[0].params),
                          "l1",
                          EncodeLink(header.links[1].params),
                          "2",
                          "10",
                          "3"};
  EXPECT_EQ(q.request, Concat(Concat(Head("f", "load", "", true), fields), {"1", data}));
  EXPECT_EQ(Reply(q, Answer("ok")), "+OK\r\n");
  // A later chunk creates nothing.
  q = Queue({"BF.LOADCHUNK", "f", "81", "bits"});
  EXPECT_EQ(q.request, Concat(Head("f", "load", "", false), {"0", "0", "81", "bits"}));
  EXPECT_EQ(Reply(q, Answer("ok")), "+OK\r\n");
  EXPECT_EQ(Reply(q, Answer("nolink")), "-ERR invalid offset - no link found\r\n");
  EXPECT_EQ(Reply(q, Answer("toobig")), "-ERR invalid chunk - Too big for current filter\r\n");
  EXPECT_EQ(Reply(q, Answer("missing")), "-ERR not found\r\n");
}

// ---------------------------------------------------------------------------------------------
// Replies.

TEST(MultiBfReply, StatesOfTheName) {
  Queued add = Queue({"BF.ADD", "f", "a"});
  Queued card = Queue({"BF.CARD", "f"});
  Queued info = Queue({"BF.INFO", "f"});
  Queued reserve = Queue({"BF.RESERVE", "f", "0.01", "10"});
  EXPECT_EQ(Reply(add, Answer("wrongtype")), kWrongTypeReply);
  EXPECT_EQ(Reply(card, Answer("wrongtype")), kWrongTypeReply);
  // A missing filter: BF.CARD answers 0, the others not found.
  EXPECT_EQ(Reply(card, Answer("missing")), ":0\r\n");
  EXPECT_EQ(Reply(info, Answer("missing")), "-ERR not found\r\n");
  EXPECT_EQ(Reply(Queue({"BF.SCANDUMP", "f", "0"}), Answer("missing")), "-ERR not found\r\n");
  EXPECT_EQ(Reply(reserve, Answer("exists")), "-ERR item exists\r\n");
  EXPECT_EQ(Reply(reserve, Answer("ok")), "+OK\r\n");
  EXPECT_EQ(Reply(add, "*2\r\n$7\r\ndamaged\r\n$7\r\nno link\r\n"), kDamaged + "no link\r\n");
}

TEST(MultiBfReply, AddAndExists) {
  Queued add = Queue({"BF.ADD", "f", "a"});
  EXPECT_EQ(Reply(add, "*2\r\n$3\r\nadd\r\n:1\r\n"), ":1\r\n");
  EXPECT_EQ(Reply(add, "*2\r\n$3\r\nadd\r\n:0\r\n"), ":0\r\n");
  EXPECT_EQ(Reply(add, "*2\r\n$3\r\nadd\r\n:2\r\n"), "-ERR non scaling filter is full\r\n");
  EXPECT_TRUE(IsDamaged(Reply(add, "*3\r\n$3\r\nadd\r\n:1\r\n:1\r\n")));
  EXPECT_TRUE(IsDamaged(Reply(add, "*1\r\n$3\r\nadd\r\n")));
  // MADD and INSERT: an array; a full filter ends it with the error (nothing added after).
  for (const Args& args :
       {Args{"BF.MADD", "f", "a", "b", "c"}, Args{"BF.INSERT", "f", "ITEMS", "a", "b", "c"}}) {
    Queued q = Queue(args);
    EXPECT_EQ(Reply(q, "*4\r\n$3\r\nadd\r\n:1\r\n:0\r\n:1\r\n"), "*3\r\n:1\r\n:0\r\n:1\r\n");
    EXPECT_EQ(Reply(q, "*3\r\n$3\r\nadd\r\n:1\r\n:2\r\n"),
              "*2\r\n:1\r\n-ERR non scaling filter is full\r\n");
    EXPECT_TRUE(IsDamaged(Reply(q, "*3\r\n$3\r\nadd\r\n:1\r\n:3\r\n")));
    EXPECT_TRUE(IsDamaged(Reply(q, "*3\r\n$3\r\nadd\r\n:1\r\n:-1\r\n")));
    EXPECT_TRUE(IsDamaged(Reply(q, "*3\r\n$3\r\nadd\r\n:1\r\n$1\r\n1\r\n")));
  }
  Queued exists = Queue({"BF.EXISTS", "f", "a"});
  EXPECT_EQ(Reply(exists, "*2\r\n$5\r\nfound\r\n:1\r\n"), ":1\r\n");
  EXPECT_EQ(Reply(exists, "*2\r\n$5\r\nfound\r\n:0\r\n"), ":0\r\n");
  Queued mexists = Queue({"BF.MEXISTS", "f", "a", "b"});
  EXPECT_EQ(Reply(mexists, "*3\r\n$5\r\nfound\r\n:0\r\n:1\r\n"), "*2\r\n:0\r\n:1\r\n");
}

// HGETALL of a filter reserved with 0.001 1000 EXPANSION 4 (one link), as the script answers it
// with its counts.
std::string CountsAnswer(const Strings& counts, bool drop_capacity = false) {
  BfRequest req;
  req.command = BfCommand::kReserve;
  req.key = "f";
  req.error_rate = 0.001;
  req.capacity = 1000;
  req.expansion = 4;
  const Strings fields = MetaHashFields(NewFilterMeta("f", req, nullptr, BfConfig()));
  std::string hash;
  size_t n = 0;
  for (size_t i = 0; i < fields.size(); i += 2) {
    if (drop_capacity && fields[i] == "capacity") continue;
    for (size_t j = i; j < i + 2; ++j) {
      hash += "$" + std::to_string(fields[j].size()) + "\r\n" + fields[j] + "\r\n";
    }
    n += 2;
  }
  std::string out = "*3\r\n$6\r\ncounts\r\n*" + std::to_string(n) + "\r\n" + hash;
  out += "*" + std::to_string(counts.size()) + "\r\n";
  for (const std::string& c : counts) out += "$" + std::to_string(c.size()) + "\r\n" + c + "\r\n";
  return out;
}

TEST(MultiBfReply, CountsMakeInfoCardAndTheDumpHeader) {
  const std::string answer = CountsAnswer({"2"});
  // RedisBloom's recorded reply (tests/fixtures/keycmd, multi_reserve_info).
  EXPECT_EQ(Reply(Queue({"BF.INFO", "f"}), answer),
            "*10\r\n+Capacity\r\n:1000\r\n+Size\r\n:2080\r\n+Number of filters\r\n:1\r\n"
            "+Number of items inserted\r\n:2\r\n+Expansion rate\r\n:4\r\n");
  EXPECT_EQ(Reply(Queue({"BF.INFO", "f", "CAPACITY"}), answer), "*1\r\n:1000\r\n");
  EXPECT_EQ(Reply(Queue({"BF.INFO", "f", "items"}), answer), "*1\r\n:2\r\n");
  EXPECT_EQ(Reply(Queue({"BF.CARD", "f"}), answer), ":2\r\n");
  const std::string dump = Reply(Queue({"BF.SCANDUMP", "f", "0"}), answer);
  DumpHeader header;
  const std::string start = "*2\r\n:1\r\n$";
  ASSERT_EQ(dump.rfind(start, 0), 0u) << dump;
  const size_t eol = dump.find("\r\n", start.size());
  const std::string data = dump.substr(eol + 2, dump.size() - eol - 4);
  EXPECT_EQ(dump.substr(start.size(), eol - start.size()), std::to_string(data.size()));
  ASSERT_TRUE(DecodeDumpHeader(data, &header));
  EXPECT_EQ(header.total_items, 2u);
  EXPECT_EQ(header.expansion, 4u);
  ASSERT_EQ(header.links.size(), 1u);
  EXPECT_EQ(header.links[0].params.capacity, 1000u);
  EXPECT_EQ(header.links[0].params.bytes, 1984u);
}

TEST(MultiBfReply, CountsThatMakeNoSense) {
  Queued info = Queue({"BF.INFO", "f"});
  EXPECT_TRUE(IsDamaged(Reply(info, CountsAnswer({"2", "3"}))));  // more counts than links
  EXPECT_TRUE(IsDamaged(Reply(info, CountsAnswer({}))));
  EXPECT_TRUE(IsDamaged(Reply(info, CountsAnswer({"x"}))));
  EXPECT_TRUE(IsDamaged(Reply(info, CountsAnswer({"-1"}))));
  EXPECT_TRUE(IsDamaged(Reply(info, CountsAnswer({"2"}, /*drop_capacity=*/true))));
  EXPECT_TRUE(IsDamaged(Reply(info, "*2\r\n$6\r\ncounts\r\n*0\r\n")));
  EXPECT_TRUE(IsDamaged(Reply(info, "*3\r\n$6\r\ncounts\r\n:1\r\n*0\r\n")));
}

TEST(MultiBfReply, Chunks) {
  Queued q = Queue({"BF.SCANDUMP", "f", "17"});
  const std::string data("a\0b", 3);
  EXPECT_EQ(Reply(q, "*3\r\n$5\r\nchunk\r\n:49\r\n$3\r\n" + data + "\r\n"),
            "*2\r\n:49\r\n$3\r\n" + data + "\r\n");
  EXPECT_EQ(Reply(q, "*3\r\n$5\r\nchunk\r\n:0\r\n$0\r\n\r\n"), "*2\r\n:0\r\n$0\r\n\r\n");
  EXPECT_TRUE(IsDamaged(Reply(q, "*3\r\n$5\r\nchunk\r\n$2\r\n49\r\n$1\r\na\r\n")));
  EXPECT_TRUE(IsDamaged(Reply(q, "*2\r\n$5\r\nchunk\r\n:49\r\n")));
}

TEST(MultiBfReply, ScriptErrorsAndGarbage) {
  Queued q = Queue({"BF.ADD", "f", "a"});
  // An error the script raised (or the server's: OOM, BUSY) is passed on as it is.
  const std::string raised =
      "-ERR bloomproxy: shard 0 of link 0 of the filter is missing or was overwritten script: "
      "abc, on @user_script:80.\r\n";
  EXPECT_EQ(Reply(q, raised), raised);
  EXPECT_EQ(Reply(q, "-OOM command not allowed\r\n"), "-OOM command not allowed\r\n");
  // Anything else the script cannot answer is an error reply, never a made-up answer.
  for (std::string_view garbage :
       {":1\r\n", "$3\r\nadd\r\n", "*0\r\n", "*1\r\n:1\r\n", "*1\r\n$5\r\nweird\r\n", "$-1\r\n",
        "*-1\r\n", "+OK\r\n", "*2\r\n$7\r\ndamaged\r\n:1\r\n", "*1\r\n$5\r\nchunk\r\n"}) {
    EXPECT_TRUE(IsDamaged(Reply(q, garbage))) << garbage;
  }
  // The same for a read.
  EXPECT_TRUE(IsDamaged(Reply(Queue({"BF.CARD", "f"}), "*1\r\n$5\r\nfound\r\n")));
}

}  // namespace
}  // namespace bloomproxy::filters
