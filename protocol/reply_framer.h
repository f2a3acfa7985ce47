// Finds where each upstream reply ends, so the proxy can forward replies as the upstream's own
// bytes, never re-encoded and never copied into a second buffer.
//
// Why not hiredis's reader for this: Debian's hiredis 0.14 refuses replies nested deeper than
// seven levels, and Redis 7's COMMAND (depth 9) and COMMAND DOCS (depth 13) replies are deeper;
// it also copies every byte into its own buffer. Framing RESP2 needs no tree at all: a reply is
// complete when the count of values still owed drops to zero (each array of n adds n). The
// hiredis reader still decodes the few replies whose content the proxy must read
// (protocol/reply_decoder.h), and the unit tests check that both agree on framing.
//
// RESP3 frames the same way: a map `%n` and an attribute `|n` owe 2n values, a set `~n` and a
// push `>n` owe n; `_`, `#`, `,` and `(` are one line; `=` and `!` are sized like `$`. An
// attribute is no value of its own (the value it describes follows it, in the same frame), so
// the proxy forwards it with that value. A top-level push is a frame like any other: the
// connection tells it apart from a reply (UpstreamConn::OnFrame).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {

enum class FrameStatus {
  kComplete,  // one reply of *length bytes starts at the input's first byte
  kNeedMore,  // the reply continues past the input
  kError,     // not RESP; error() says why; the connection cannot be trusted any more
};

class ReplyFramer {
 public:
  // Scans the reply that starts at input[0]. Incremental: after kNeedMore, call again with the
  // same bytes plus more; the bytes already scanned are not scanned again. After kComplete the
  // framer is ready for the next reply (the caller drops *length bytes).
  FrameStatus Next(std::string_view input, size_t* length);

  const std::string& error() const { return error_; }
  void Reset();

 private:
  size_t pos_ = 0;    // scanned prefix of the current reply
  int64_t owed_ = 1;  // values still needed to complete the reply
  std::string error_;
};

// Splits one complete array reply into its elements' bytes. False for anything else: another
// type, a nil array, an incomplete array or bytes after it.
bool SplitArray(std::string_view reply, std::vector<std::string_view>* elements);

}  // namespace bloomproxy::protocol
