// The keys bloomproxy keeps next to a filter's or a sketch's name (filters/common/key_layout.h),
// and KEYS and SCAN replies with those keys taken out, so a client sees the names it created and
// nothing else. Pure; no sockets.
//
// The rule, exactly. H is 16 characters of [0-9a-f] (an id, filters/bloom/bf_meta.cc NewId), D a
// decimal number as std::to_string writes it ("0", or 1-20 digits without a leading zero), and
// P a prefix that holds a Redis hash tag (a '{', later a '}', at least one byte between the
// first '{' and the first '}' after it): every DataKeyPrefix() has one, and any string with a
// tag is the DataKeyPrefix of itself. A key is internal when it is one of
//
//   P:bf:H:D.D           a Bloom filter's bits (link.shard)            BitsKey
//   P:bf:H:D:n           a link's item count                            CountKey
//   P:bf:H:D.D:H         a new link's shard under its private name      bf_plan_create.cc
//   P:bf:H:new           a new filter's metadata before it is published bf_plan_create.cc
//   P:bf:H:wD            a windowed filter's slot D (a filter's hash)   SlotName (window_slots.h)
//   P:cms:H:D            a count-min sketch's part                      (CMS layout)
//   P:cf:H:D.D           a cuckoo filter's slots (sub-filter.data key)  (CF layout)
//   P:tk:H:b.D           a Top-K sketch's bucket shard D                (Top-K layout)
//   P:tk:H:h, P:tk:H:i   a Top-K sketch's heap slots and heap items     (Top-K layout)
//   P:td:H:d             a t-digest's data (the digest itself)          (t-digest layout)
//   P:bf:m:N, P:cms:m:N, the marker of the filter or sketch named N, where P is exactly
//   P:cf:m:N, P:tk:m:N,  DataKeyPrefix(N): "N" when N has a tag, "{N}" when N is non-empty
//   P:td:m:N             without braces, else "{T}N" with T = SlotTag(KeySlot(N))
//
// A slot is a filter of its own whose data-key prefix is its name (which holds P's tag), so its
// keys are already in the list: P:bf:H:wD:bf:H:D.D, P:bf:H:wD:bf:H:D:n, ... And nothing else:
// "a:bf:m:a" (no tag), "{a}:bf:m:b" (not b's prefix), "{a}:bf:0123:0.0" (short id),
// "{a}:bf:0123456789ABCDEF:0.0" (upper case), "{a}:bf:0123456789abcdef:01.0" (leading zero),
// "{a}:bf:0123456789abcdef:w-1" (a sign) are user keys and stay visible.
#pragma once

#include <string>
#include <string_view>

namespace bloomproxy::protocol {

// Whether `key` is one of bloomproxy's internal keys (the rule above).
bool IsInternalKey(std::string_view key);

// The pieces internal key names are made of, for whatever else reads them (the leftover sweep):
// a structure's id (16 lower-case hex digits), a number as std::to_string writes it, and `s`
// split at its first `sep` (false when there is none).
bool IsInternalKeyId(std::string_view s);
bool IsKeyNumber(std::string_view s);
bool SplitAt(std::string_view s, char sep, std::string_view* head, std::string_view* tail);

// `frame` is one complete reply: KEYS's (an array of bulk strings) when `scan` is false, SCAN's
// (an array of a cursor bulk and an array of key bulks) when it is true; a RESP3 set ('~') is
// accepted wherever a key array is. Returns the same reply without the internal keys, the
// array's count fixed and every other byte as it was. Any other reply (an error, a null, a
// different shape, trailing bytes) is returned unchanged, as is a reply with no internal key.
std::string HideInternalKeys(std::string_view frame, bool scan);

}  // namespace bloomproxy::protocol
