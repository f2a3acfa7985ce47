// ReplyFramer: finds reply boundaries in upstream bytes, across any split, at any depth, and
// agrees with hiredis's reader wherever hiredis can decode.
#include "protocol/reply_framer.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <random>
#include <string>
#include <vector>

#include "protocol/reply_decoder.h"

namespace bloomproxy::protocol {
namespace {

// Frames `stream` fed in chunks of `chunk` bytes; returns the reply lengths found.
std::vector<size_t> FrameAll(const std::string& stream, size_t chunk, bool* error) {
  ReplyFramer framer;
  std::vector<size_t> lengths;
  std::string buffered;
  size_t fed = 0;
  *error = false;
  while (fed < stream.size() || !buffered.empty()) {
    if (fed < stream.size()) {
      size_t n = std::min(chunk, stream.size() - fed);
      buffered.append(stream, fed, n);
      fed += n;
    }
    for (;;) {
      size_t len = 0;
      FrameStatus st = framer.Next(buffered, &len);
      if (st == FrameStatus::kError) {
        *error = true;
        return lengths;
      }
      if (st == FrameStatus::kNeedMore) break;
      lengths.push_back(len);
      buffered.erase(0, len);
    }
    if (fed == stream.size()) break;
  }
  return lengths;
}

const std::vector<std::string> kReplies = {
    "+OK\r\n",
    "-ERR unknown command 'FOO', with args beginning with: \r\n",
    ":0\r\n",
    ":-9223372036854775808\r\n",
    "$-1\r\n",
    "$0\r\n\r\n",
    "$5\r\nhello\r\n",
    std::string("$6\r\na\r\n\0b\n\r\n", 12),
    "*-1\r\n",
    "*0\r\n",
    "*2\r\n$3\r\nfoo\r\n:1\r\n",
    "*3\r\n*1\r\n*0\r\n$-1\r\n*2\r\n+a\r\n-b\r\n",
    "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
    // RESP3 (HELLO 3): every type Redis 7 sends.
    "_\r\n",
    "#t\r\n",
    "#f\r\n",
    ",3.14\r\n",
    ",-inf\r\n",
    "(3492890328409238509324850943850943825024385\r\n",
    "=15\r\ntxt:Some string\r\n",
    "!21\r\nSYNTAX invalid syntax\r\n",
    "%0\r\n",
    "%2\r\n+first\r\n:1\r\n+second\r\n%1\r\n$1\r\nk\r\n~2\r\n:1\r\n#f\r\n",
    "~3\r\n$1\r\na\r\n_\r\n,1.5\r\n",
    ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n",
    ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    // An attribute belongs to the value after it: one frame.
    "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.19\r\n$1\r\nb\r\n,0.5\r\n*2\r\n:2\r\n:9\r\n",
    "*2\r\n|1\r\n+ttl\r\n:3600\r\n$1\r\nx\r\n:1\r\n",
};

TEST(ReplyFramer, EveryReplyAlone) {
  for (const std::string& r : kReplies) {
    bool error = false;
    auto lengths = FrameAll(r, r.size(), &error);
    ASSERT_FALSE(error) << r;
    ASSERT_EQ(lengths, std::vector<size_t>{r.size()}) << r;
  }
}

TEST(ReplyFramer, PipelinedAtEverySplit) {
  std::string stream;
  std::vector<size_t> expected;
  for (const std::string& r : kReplies) {
    stream += r;
    expected.push_back(r.size());
  }
  for (size_t chunk = 1; chunk <= stream.size(); ++chunk) {
    bool error = false;
    EXPECT_EQ(FrameAll(stream, chunk, &error), expected) << "chunk " << chunk;
    EXPECT_FALSE(error);
  }
}

TEST(ReplyFramer, DeepNestingBeyondHiredisLimit) {
  // COMMAND DOCS replies nest 13 levels; hiredis 0.14 stops at 7.
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  bool error = false;
  EXPECT_EQ(FrameAll(deep + "+OK\r\n", 1, &error), (std::vector<size_t>{deep.size(), 5}));
  EXPECT_FALSE(error);
}

TEST(ReplyFramer, IncompleteNeedsMore) {
  ReplyFramer framer;
  size_t len = 0;
  EXPECT_EQ(framer.Next("*2\r\n$3\r\nfoo\r\n", &len), FrameStatus::kNeedMore);
  EXPECT_EQ(framer.Next("*2\r\n$3\r\nfoo\r\n:", &len), FrameStatus::kNeedMore);
  EXPECT_EQ(framer.Next("*2\r\n$3\r\nfoo\r\n:1\r", &len), FrameStatus::kNeedMore);
  EXPECT_EQ(framer.Next("*2\r\n$3\r\nfoo\r\n:1\r\n", &len), FrameStatus::kComplete);
  EXPECT_EQ(len, 17u);
  // An attribute alone is not a reply yet.
  ReplyFramer attr;
  EXPECT_EQ(attr.Next("|1\r\n+a\r\n:1\r\n", &len), FrameStatus::kNeedMore);
  EXPECT_EQ(attr.Next("|1\r\n+a\r\n:1\r\n#t\r\n", &len), FrameStatus::kComplete);
  EXPECT_EQ(len, 16u);
}

TEST(ReplyFramer, RejectsWhatIsNotResp) {
  for (const char* bad :
       {"!x\r\n", "$abc\r\n", "$-2\r\n", "*-5\r\n", "$3\r\nfooXY", "+OK\rX", "$01\r\nx\r\n",
        "%-1\r\n", "=-1\r\n", "$?\r\n", "&1\r\n", "*922\r\n*9223372036854775806\r\n",
        "%4611686018427387904\r\n", "$9223372036854775807\r\n"}) {
    ReplyFramer framer;
    size_t len = 0;
    EXPECT_EQ(framer.Next(bad, &len), FrameStatus::kError) << bad;
    EXPECT_FALSE(framer.error().empty());
    // The framer stays failed: the connection cannot be trusted any more.
    EXPECT_EQ(framer.Next("+OK\r\n", &len), FrameStatus::kError);
  }
}

// Random replies of depth <= 6, framed by us and decoded by hiredis: both must agree on where
// every reply ends.
std::string RandomReply(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 0 ? 6 : 4);
  switch (kind(rng)) {
    case 0:
      return "+simple\r\n";
    case 1:
      return "-ERR failure\r\n";
    case 2:
      return ":" + std::to_string(rng() % 100000) + "\r\n";
    case 3:
      return "$-1\r\n";
    case 4: {
      std::string s(rng() % 40, '\0');
      for (char& c : s) c = static_cast<char>(rng() % 256);
      return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
    }
    default: {
      int n = static_cast<int>(rng() % 5);
      std::string s = "*" + std::to_string(n) + "\r\n";
      for (int i = 0; i < n; ++i) s += RandomReply(rng, depth - 1);
      return s;
    }
  }
}

TEST(ReplyFramer, AgreesWithHiredis) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 200; ++round) {
    std::string stream;
    std::vector<size_t> expected;
    for (int i = 0; i < 8; ++i) {
      std::string r = RandomReply(rng, 6);
      stream += r;
      expected.push_back(r.size());
    }
    bool error = false;
    EXPECT_EQ(FrameAll(stream, 1 + rng() % 17, &error), expected);
    EXPECT_FALSE(error);

    // hiredis reads the same stream into the same number of replies.
    redisReader* reader = redisReaderCreate();
    ASSERT_EQ(redisReaderFeed(reader, stream.data(), stream.size()), REDIS_OK);
    size_t replies = 0;
    void* reply = nullptr;
    while (redisReaderGetReply(reader, &reply) == REDIS_OK && reply != nullptr) {
      ++replies;
      freeReplyObject(reply);
    }
    redisReaderFree(reader);
    EXPECT_EQ(replies, expected.size());
  }
}

TEST(ReplyDecoder, DecodesOneFrameAndRecoversFromBadInput) {
  ReplyDecoder decoder;
  ReplyPtr r = decoder.Decode("*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 3u);
  EXPECT_EQ(ReplyString(r->element[0]), "subscribe");
  EXPECT_EQ(r->element[2]->integer, 1);
  EXPECT_FALSE(decoder.Decode("!bad\r\n"));
  ReplyPtr ok = decoder.Decode("$5\r\nhello\r\n");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ReplyString(ok.get()), "hello");
}

}  // namespace
}  // namespace bloomproxy::protocol
