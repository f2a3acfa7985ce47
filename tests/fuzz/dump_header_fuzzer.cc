// libFuzzer target for the SCANDUMP / LOADCHUNK header and chunk addressing
// (filters/bloom/bloom.h).
//
// Input layout:
//   bytes 0-7   an iterator (int64, little-endian)
//   bytes 8-15  a LOADCHUNK data length (uint64, little-endian)
//   byte  16    the largest chunk: 0 = kMaxDumpChunk, else that many bytes
//   the rest    a dump header, as LOADCHUNK with iterator 1 receives it
// DecodeDumpHeader runs on the header bytes. When it accepts them:
//   - the decoded header satisfies every check bloom.h documents, and EncodeDumpHeader gives
//     back exactly the input bytes;
//   - over the decoded links' sizes, LocateDumpChunk and LocateLoadChunk, at the fuzzer's
//     iterator and data length and at every link boundary (and next to it), agree with a model
//     of the links laid end to end: a chunk is always inside one link, never empty, never
//     longer than the largest chunk, and LOADCHUNK puts what SCANDUMP read back where it was.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bloom.h"

namespace {

using bloomproxy::filters::ChunkPos;
using bloomproxy::filters::DecodeDumpHeader;
using bloomproxy::filters::DumpHeader;
using bloomproxy::filters::DumpLink;
using bloomproxy::filters::EncodeDumpHeader;
using bloomproxy::filters::kMaxDumpChunk;
using bloomproxy::filters::kOptHash64;
using bloomproxy::filters::kOptNoRound;
using bloomproxy::filters::kOptNoScaling;
using bloomproxy::filters::kOptRawBits;
using bloomproxy::filters::LocateDumpChunk;
using bloomproxy::filters::LocateLoadChunk;

using u128 = unsigned __int128;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Aborts with a message, so the crash report says which invariant broke.
#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

uint64_t Le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// The checks bloom.h lists for an accepted header.
void CheckHeader(const DumpHeader& h) {
  FUZZ_CHECK(!h.links.empty());
  FUZZ_CHECK((h.options & ~(kOptNoRound | kOptRawBits | kOptHash64 | kOptNoScaling)) == 0);
  u128 total = 0;
  for (const DumpLink& link : h.links) {
    total += link.items;
    FUZZ_CHECK(link.params.error > 0 && link.params.error < 1);
    FUZZ_CHECK(link.params.n2 <= 63);
    FUZZ_CHECK(u128{link.params.bits} == u128{link.params.bytes} * 8);
    // k = ceil(ln 2 * bpe), with RedisBloom's digits of ln 2.
    const double k = std::ceil(0.693147180559945 * link.params.bpe);
    FUZZ_CHECK(k >= 0 && k <= static_cast<double>(std::numeric_limits<uint32_t>::max()));
    FUZZ_CHECK(link.params.k == static_cast<uint32_t>(k));
  }
  FUZZ_CHECK(total == h.total_items);
}

// The links laid end to end: iterator it (>= 1) addresses byte it - 1.
ChunkPos ModelDump(const std::vector<uint64_t>& sizes, int64_t iter, uint64_t max_chunk) {
  ChunkPos pos;
  pos.end = true;
  if (iter < 1) return pos;
  const u128 at = static_cast<u128>(iter) - 1;
  u128 start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (at < start + sizes[i]) {
      pos.end = false;
      pos.link = i;
      pos.offset = static_cast<uint64_t>(at - start);
      pos.length = std::min(sizes[i] - pos.offset, max_chunk);
      return pos;
    }
    start += sizes[i];
  }
  return pos;
}

// LOADCHUNK: data_len bytes starting at byte iter - data_len - 1, all inside one link.
bool ModelLoad(const std::vector<uint64_t>& sizes, int64_t iter, uint64_t data_len, size_t* link,
               uint64_t* offset) {
  if (iter < 1 || static_cast<u128>(iter) < u128{data_len} + 1) return false;
  const u128 at = static_cast<u128>(iter) - data_len - 1;
  u128 start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (at < start + sizes[i]) {
      const uint64_t off = static_cast<uint64_t>(at - start);
      if (data_len > sizes[i] - off) return false;
      *link = i;
      *offset = off;
      return true;
    }
    start += sizes[i];
  }
  return false;
}

void CheckDump(const std::vector<uint64_t>& sizes, int64_t iter, uint64_t max_chunk,
               ChunkPos* out) {
  const ChunkPos got = LocateDumpChunk(sizes, iter, max_chunk);
  const ChunkPos want = ModelDump(sizes, iter, max_chunk);
  FUZZ_CHECK(got.end == want.end);
  if (!got.end) {
    FUZZ_CHECK(got.link < sizes.size());
    FUZZ_CHECK(got.offset < sizes[got.link]);
    FUZZ_CHECK(got.length >= 1 && got.length <= max_chunk);
    FUZZ_CHECK(got.length <= sizes[got.link] - got.offset);
    FUZZ_CHECK(got.link == want.link && got.offset == want.offset && got.length == want.length);
  }
  *out = got;
}

void CheckLoad(const std::vector<uint64_t>& sizes, int64_t iter, uint64_t data_len) {
  size_t link = 12345, want_link = 0;
  uint64_t offset = 67890, want_offset = 0;
  const bool got = LocateLoadChunk(sizes, iter, data_len, &link, &offset);
  const bool want = ModelLoad(sizes, iter, data_len, &want_link, &want_offset);
  FUZZ_CHECK(got == want);
  if (got) {
    FUZZ_CHECK(link < sizes.size());
    FUZZ_CHECK(offset < sizes[link]);
    FUZZ_CHECK(data_len <= sizes[link] - offset);
    FUZZ_CHECK(link == want_link && offset == want_offset);
  }
}

// SCANDUMP at `iter`, then LOADCHUNK of what it read, which replies the next iterator.
void CheckIterator(const std::vector<uint64_t>& sizes, int64_t iter, uint64_t max_chunk,
                   uint64_t data_len) {
  for (uint64_t chunk : {max_chunk, kMaxDumpChunk}) {
    ChunkPos pos;
    CheckDump(sizes, iter, chunk, &pos);
    if (!pos.end && pos.length <= static_cast<uint64_t>(kInt64Max - iter)) {
      const int64_t next = iter + static_cast<int64_t>(pos.length);
      size_t link = 0;
      uint64_t offset = 0;
      FUZZ_CHECK(LocateLoadChunk(sizes, next, pos.length, &link, &offset));
      FUZZ_CHECK(link == pos.link && offset == pos.offset);
    }
  }
  for (uint64_t len : {data_len, uint64_t{0}, uint64_t{1}, data_len % 64}) {
    CheckLoad(sizes, iter, len);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  constexpr size_t kPrefix = 17;
  if (size < kPrefix) {
    DumpHeader h;
    FUZZ_CHECK(!DecodeDumpHeader(std::string_view(reinterpret_cast<const char*>(bytes), size), &h));
    return 0;
  }
  const int64_t iter = static_cast<int64_t>(Le(bytes, 8));
  const uint64_t data_len = Le(bytes + 8, 8);
  const uint64_t max_chunk = bytes[16] == 0 ? kMaxDumpChunk : bytes[16];
  const std::string_view data(reinterpret_cast<const char*>(bytes) + kPrefix, size - kPrefix);

  DumpHeader header;
  if (!DecodeDumpHeader(data, &header)) return 0;
  CheckHeader(header);
  FUZZ_CHECK(EncodeDumpHeader(header) == data);

  std::vector<uint64_t> sizes;
  u128 total = 0;
  for (const DumpLink& link : header.links) {
    sizes.push_back(link.params.bytes);
    total += link.params.bytes;
  }

  // The fuzzer's iterator, as is and folded into the links, the extremes, and every link
  // boundary with its neighbours.
  std::vector<int64_t> iters = {iter, 0, 1, 2, -1, std::numeric_limits<int64_t>::min(), kInt64Max};
  iters.push_back(static_cast<int64_t>(static_cast<uint64_t>(iter) % (total + 2)));
  u128 boundary = 0;
  for (size_t i = 0; i <= sizes.size(); ++i) {
    for (u128 it = boundary; it <= boundary + 2; ++it) {
      if (it <= static_cast<u128>(kInt64Max)) iters.push_back(static_cast<int64_t>(it));
    }
    if (i < sizes.size()) boundary += sizes[i];
  }
  for (int64_t it : iters) CheckIterator(sizes, it, max_chunk, data_len);

  // A SCANDUMP loop from the start, as a client runs it, for a few steps.
  int64_t it = 1;
  for (int step = 0; step < 16; ++step) {
    ChunkPos pos;
    CheckDump(sizes, it, max_chunk, &pos);
    if (pos.end || pos.length > static_cast<uint64_t>(kInt64Max - it)) break;
    it += static_cast<int64_t>(pos.length);
    CheckLoad(sizes, it, pos.length);
  }
  return 0;
}
