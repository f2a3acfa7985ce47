// RESP request parser: the bytes a client sends, turned into commands.
//
// Accepts what Redis 7 accepts (src/networking.c processMultibulkBuffer / processInlineBuffer):
//   multibulk  "*<n>\r\n" then n times "$<len>\r\n<bytes>\r\n"
//   inline     "<word> <word> ...\n" (optional "\r"), words split like sdssplitargs, so
//              "double quotes" with \n \r \t \b \a \\ \" \xHH escapes and 'single quotes'
//              with \' work, and an unbalanced quote is an error.
// and rejects what Redis rejects, with Redis's exact error text.
//
// The parser is a plain value: no sockets, no clock, no allocation per command once its
// Command storage has grown to the working size. It is incremental: a caller that gets
// kNeedMore calls again with the same unconsumed bytes plus whatever arrived since; the
// parser remembers how far it validated, so a large bulk is not scanned twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bloomproxy::protocol {

// Limits, defaults as in Redis 7.0.
struct ParserLimits {
  // proto-max-bulk-len: largest bulk argument accepted.
  int64_t max_bulk_len = 512LL * 1024 * 1024;
  // An inline request, a "*<n>" or "$<n>" line longer than this without its newline is an
  // error (Redis PROTO_INLINE_MAX_SIZE).
  size_t max_inline_len = 64 * 1024;
  // A client that must still authenticate may send at most this many arguments and bulks of at
  // most this many bytes (Redis: "unauthenticated multibulk length" / "bulk length").
  int64_t unauth_max_multibulk_len = 10;
  int64_t unauth_max_bulk_len = 16384;
};

enum class ParseStatus {
  kOk,        // one command is complete in *cmd; *consumed bytes belong to it
  kNeedMore,  // no complete command yet; *consumed bytes may be dropped (empty lines, "*0")
  kError,     // protocol error; error() is the reply text; the connection must be closed
};

// One parsed command. Argument views point into the input passed to Parse() (multibulk and
// unquoted inline words) or into this object's own storage (inline words with escapes), so they
// stay valid until the caller changes the input bytes or parses the next command into it.
struct Command {
  std::vector<std::string_view> args;
  // The command's exact bytes in the input when it arrived as multibulk with canonical framing
  // ("\r\n" terminators everywhere), so it can be forwarded without re-encoding. Empty for
  // inline commands and for multibulk that Redis tolerates but that is not canonical (a bulk
  // not followed by "\r\n": Redis skips two bytes without looking at them).
  std::string_view raw;
  bool is_inline = false;

  // Storage for inline words that had to be unescaped. Internal to the parser.
  std::vector<std::string> owned;

  void Clear();
};

class RequestParser {
 public:
  explicit RequestParser(const ParserLimits& limits = ParserLimits()) : limits_(limits) {}

  // Parses at most one command from the start of `input`.
  //
  //   kOk:       *cmd holds the command; *consumed is its length in bytes (plus any empty
  //              commands skipped before it). The caller drops those bytes before the next call.
  //   kNeedMore: *consumed (possibly 0) bytes were empty commands ("\r\n", "*0\r\n", "*-1\r\n")
  //              and may be dropped. Call again with the remaining bytes plus more input.
  //   kError:    error() holds the reply without the leading '-' and trailing CRLF, e.g.
  //              "ERR Protocol error: invalid bulk length". The parser stays in the error state
  //              until Reset().
  //
  // `authenticated` selects the tighter limits for a client that must still authenticate.
  ParseStatus Parse(std::string_view input, bool authenticated, size_t* consumed, Command* cmd);

  const std::string& error() const { return error_; }

  // Forgets any partial command (used when the caller discards its input).
  void Reset();

  // Bytes the partial command is known to need in total (from the bulk length headers parsed
  // so far), or 0 if unknown; lets the caller reserve its buffer once for a big bulk.
  size_t expected_size() const { return expected_size_; }

 private:
  // Outcome of parsing the command at the start of the unconsumed input.
  enum class Step {
    kCommand,  // complete command in *cmd, *length bytes long
    kEmpty,    // an empty command (blank line, "*0"), *length bytes long, to be skipped
    kPartial,  // incomplete; resume state saved
    kFailed,   // protocol error; error_ set
  };

  Step ParseInline(std::string_view in, Command* cmd, size_t* length);
  Step ParseMultibulk(std::string_view in, bool authenticated, Command* cmd, size_t* length);
  // Splits one inline line like sdssplitargs into cmd->args; false on unbalanced quotes.
  bool SplitInline(std::string_view line, Command* cmd);
  // Where the line starting at `start` ends: the offset of the first `terminator` at or after
  // `start`, or npos while there is none. Like Redis's strchr() on its NUL-terminated buffer, a
  // NUL byte before the terminator hides it for good. Resumes where the previous call stopped.
  size_t FindLineEnd(std::string_view in, size_t start, char terminator);
  Step Fail(std::string message);
  // Forgets the command in progress (not the error).
  void ResetCommandState();

  ParserLimits limits_;
  std::string error_;
  // Resume state of a partial command (offsets relative to the command's first byte, which is
  // the input start on the next call once the caller dropped `consumed` bytes).
  int64_t multibulk_left_ = 0;  // arguments still to read; 0 = no command in progress
  int64_t bulk_len_ = -1;       // length of the bulk being read, -1 = its header not read yet
  size_t pos_ = 0;              // validated prefix of the input
  size_t scan_ = 0;             // the current line's terminator is not in [pos_, scan_)
  bool line_blocked_ = false;   // a NUL precedes the current line's terminator (see FindLineEnd)
  bool canonical_ = true;
  size_t expected_size_ = 0;
  std::vector<std::pair<size_t, size_t>> arg_spans_;  // (offset, length) of args read so far
};

// Redis's string2ll: a strict decimal integer ("-"? then no leading zeros, fits int64).
bool StringToInt64(std::string_view s, int64_t* out);

}  // namespace bloomproxy::protocol
