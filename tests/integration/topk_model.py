"""A Python model of RedisBloom's Top-K (HeavyKeeper), exactly as
/work/shared/spec/topk-commands.md (RedisBloom src/topk.c) describes it, for the TOPK.* tests:

    fp(item)        = MurmurHash2(item, seed 1919)
    bucket(item, i) = (uint32)(i * width) + MurmurHash2(item, seed i) % width      (row i)

    ADD / INCRBY of (item, n), items in argument order, each seeing the previous one's state:
      heapMin = count of heap slot 0 (read first; not necessarily the least count)
      per row, best = 0 at the start:
        empty bucket (count 0)  -> {fp, n}; best = max(best, n)   (n = 0: fp set, still empty)
        bucket of the same fp   -> count += n mod 2^32; best = max(best, count)
        foreign bucket          -> for r = n .. 1: decrement with probability P(count); at 0 it
                                   becomes {fp, r}, best = max(best, r), stop
      best >= heapMin: the item's slot (searched k-1 .. 0) takes count best and sifts down, or
      else slot 0 is overwritten by the item and sifts down, its previous item expelled.
    P(c) = T[c] (T[c] = pow(decay, c), c < 256), else pow(T[255], c // 255) * T[c % 255].
    decay 1: the closed form (n >= c: {fp, n - c + 1}; n < c: count -= n), no random numbers.
    decay < 1: one Bernoulli(P) trial per step, drawn from `rng` (a callable returning a uniform
    float in [0, 1); default: Python's random.Random(seed).random). RedisBloom draws glibc's
    rand() from an unseeded state, so only the statistics can agree there.
    The heap is the exact k-slot array, sift-down only (ties go left; the first move also for an
    equal child, then only for strictly smaller ones). LIST: the array stably sorted by count,
    highest first, up to the first count 0, items cut at their first NUL. COUNT: the largest
    count of the item's buckets holding its fp, only buckets >= heapMin when it is in the heap.

Only the Python standard library (plus cms_vectors' MurmurHash2) is used.
"""

import math
import random

from cms_vectors import murmur2

FP_SEED = 1919
DEFAULT_WIDTH = 8
DEFAULT_DEPTH = 7
DEFAULT_DECAY = 0.9
DECAY_TABLE_SIZE = 256
MAX_INCREMENT = 100000
U32 = 0xFFFFFFFF

ERR_INCREMENT = (b"-TopK: increment must be an integer greater or equal to 0" + b" " * 28
                 + b"and smaller or equal to 100,000\r\n")


def fingerprint(item):
    return murmur2(item, FP_SEED)


def bucket_index(item, width, row):
    """Row `row`'s bucket of `item`: the row start is a uint32 product (it wraps), the column
    MurmurHash2(item, seed row) % width."""
    return ((row * width) & U32) + murmur2(item, row) % width


def decay_table(decay):
    # CPython's float ** float is C's pow(), as RedisBloom's table.
    return [math.pow(decay, c) for c in range(DECAY_TABLE_SIZE)]


def decay_probability(table, count):
    if count < DECAY_TABLE_SIZE:
        return table[count]
    last = DECAY_TABLE_SIZE - 1
    return math.pow(table[last], count // last) * table[count % last]


def reply_item(item):
    """An item as RedisBloom replies it (a C string): the bytes before the first NUL."""
    cut = item.find(b"\0")
    return item if cut < 0 else item[:cut]


def format_decay(decay):
    """TOPK.INFO's decay as Redis 7.0 prints it (%.17g)."""
    return ("%.17g" % decay).encode()


class NoRandom(Exception):
    """Raised by no_random: a step whose outcome depends on the random numbers."""


def no_random():
    raise NoRandom("a decay step drew a random number")


class TopK:
    """One Top-K sketch. Items are bytes."""

    def __init__(self, k, width=DEFAULT_WIDTH, depth=DEFAULT_DEPTH, decay=DEFAULT_DECAY,
                 rng=None, seed=None, hash_cache=None):
        assert k >= 1 and width >= 1 and depth >= 1 and 0 < decay <= 1
        self.k, self.width, self.depth, self.decay = k, width, depth, decay
        self.table = decay_table(decay)
        self.rng = rng if rng is not None else random.Random(seed).random
        self.fps = [0] * (width * depth)      # bucket fingerprints, row-major
        self.counts = [0] * (width * depth)   # bucket counts (0: empty whatever the fp)
        self.h_fp = [0] * k                   # heap slots: fp, item (None: never filled), count
        self.h_item = [None] * k
        self.h_count = [0] * k
        # item -> (fp, bucket indexes): a cache, which sketches of one width and depth may share
        self._where = hash_cache if hash_cache is not None else {}

    # -- hashing --------------------------------------------------------------------------------

    def where(self, item):
        w = self._where.get(item)
        if w is None:
            w = (fingerprint(item), tuple(bucket_index(item, self.width, r)
                                          for r in range(self.depth)))
            if len(self._where) < 1 << 20:
                self._where[item] = w
        return w

    # -- buckets --------------------------------------------------------------------------------

    def _update_bucket(self, b, fp, n):
        """One row's bucket meeting increment n: returns what it offers the item's count."""
        counts = self.counts
        c = counts[b]
        if c == 0:
            self.fps[b] = fp
            counts[b] = n
            return n
        if self.fps[b] == fp:
            c = (c + n) & U32
            counts[b] = c
            return c
        if self.decay == 1.0:
            if n < c:
                counts[b] = c - n
                return 0
            self.fps[b] = fp
            counts[b] = n - c + 1
            return n - c + 1
        table, rng = self.table, self.rng
        for r in range(n, 0, -1):
            p = table[c] if c < DECAY_TABLE_SIZE else decay_probability(table, c)
            if p == 0.0:      # can never win a trial, and c cannot change any more
                break
            if rng() < p:
                c -= 1
                if c == 0:
                    self.fps[b] = fp
                    counts[b] = r
                    return r
        counts[b] = c
        return 0

    # -- heap -----------------------------------------------------------------------------------

    def find(self, item):
        """The slot holding `item` (same fp and bytes), searched from k-1 down to 0, or None."""
        for i in range(self.k - 1, -1, -1):
            if self.h_item[i] == item:
                return i
        return None

    def _find_fast(self, item):
        # An item is never in two slots (it enters only when not found), so any search order
        # finds the same slot; list.index runs in C.
        try:
            return self.h_item.index(item)
        except ValueError:
            return None

    def sift_down(self, start):
        fp, it, cnt = self.h_fp, self.h_item, self.h_count
        n = self.k
        if n < 2 or (n - 2) // 2 < start:
            return

        def smaller_child(parent):
            c = 2 * parent + 1
            return c + 1 if c + 1 < n and cnt[c] > cnt[c + 1] else c

        child = smaller_child(start)
        if cnt[child] > cnt[start]:
            return
        moving = (fp[start], it[start], cnt[start])
        hole = start
        while True:
            fp[hole], it[hole], cnt[hole] = fp[child], it[child], cnt[child]
            hole = child
            if (n - 2) // 2 < child:
                break
            child = smaller_child(child)
            if not cnt[child] < moving[2]:
                break
        fp[hole], it[hole], cnt[hole] = moving

    # -- commands -------------------------------------------------------------------------------

    def add(self, item, n=1):
        """TOPK.ADD (n = 1) / TOPK.INCRBY of one item, 0 <= n <= 100000: the expelled item's full
        bytes, or None."""
        fp, rows = self.where(item)
        heap_min = self.h_count[0]
        best = 0
        fps, counts = self.fps, self.counts
        for b in rows:
            c = counts[b]
            if c and fps[b] == fp:      # the common cases inline: the item's own bucket ...
                c = (c + n) & U32
                counts[b] = c
            elif not c:                 # ... or an empty one
                fps[b] = fp
                counts[b] = c = n
            else:
                c = self._update_bucket(b, fp, n)
            if c > best:
                best = c
        if best < heap_min:
            return None
        at = self._find_fast(item)
        if at is not None:
            self.h_count[at] = best   # not max(): it may go down; never sifts up
            self.sift_down(at)
            return None
        expelled = self.h_item[0]
        self.h_fp[0], self.h_item[0], self.h_count[0] = fp, item, best
        self.sift_down(0)
        return expelled

    def query(self, item):
        return self._find_fast(item) is not None

    def count(self, item):
        fp, rows = self.where(item)
        in_heap = self.query(item)
        heap_min = self.h_count[0]
        best = 0
        for b in rows:
            if self.fps[b] == fp and (not in_heap or self.counts[b] >= heap_min):
                best = max(best, self.counts[b])
        return best

    def list(self):
        """[(item as replied, count)]: the heap array stably sorted by count, highest first, up to
        the first count 0."""
        order = sorted(range(self.k), key=lambda i: -self.h_count[i])
        out = []
        for i in order:
            if self.h_count[i] == 0:
                break
            out.append((reply_item(self.h_item[i]), self.h_count[i]))
        return out

    def info(self):
        return {"k": self.k, "width": self.width, "depth": self.depth, "decay": self.decay}


# ---------------------------------------------------------------------------------------------
# Replies, as RedisBloom sends them (for the vector replay)


def _int(v):
    return b":%d\r\n" % v


def _bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def _null(resp3):
    return b"_\r\n" if resp3 else b"$-1\r\n"


def strict_int(arg):
    """Redis's string2ll: an optional '-', digits, no leading zeros, no '-0'; None otherwise."""
    s = arg.decode("latin-1")
    if s == "0":
        return 0
    body = s[1:] if s.startswith("-") else s
    if not body or not body.isdigit() or not body.isascii() or body[0] == "0":
        return None
    v = int(s)
    return v if -(1 << 63) <= v < (1 << 63) else None


def parse_decay(arg):
    """The decay of a well-formed RESERVE (a plain decimal, or C99 hex), else None. Python's
    float() is laxer than strtod on the whole string (spaces, '_'): those forms give None."""
    s = arg.decode("latin-1")
    if s != s.strip() or "_" in s or not s:
        return None
    for parse in (float, float.fromhex):
        try:
            v = parse(s)
        except ValueError:
            continue
        return v if 0 < v <= 1 else None
    return None


def withcount_token(arg):
    """strncasecmp(arg, "WITHCOUNT", len(arg)) == 0: byte by byte, case-insensitively, ending
    early at a NUL both sides share (any prefix of WITHCOUNT, also WITHCOUNT\\0...)."""
    word = b"withcount"
    for i, c in enumerate(arg.lower()):
        w = word[i] if i < len(word) else 0
        if c != w:
            return False
        if c == 0:
            return True
    return True


def topk_reply(sketches, args, resp3=False, rng=no_random):
    """The raw reply of one well-formed TOPK command on `sketches` ({key: TopK}), or None when the
    model cannot answer it (arguments or keys whose errors it does not model). RESERVE creates
    the sketch when the key is new."""
    name = args[0].upper()
    if len(args) < 2:
        return None
    key = args[1]
    if name == b"TOPK.RESERVE":
        if key in sketches or len(args) not in (3, 6):
            return None
        k = strict_int(args[2])
        if len(args) == 6:
            width, depth, decay = strict_int(args[3]), strict_int(args[4]), parse_decay(args[5])
        else:
            width, depth, decay = DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY
        if None in (k, width, depth, decay) or not all(1 <= v <= U32 for v in (k, width, depth)):
            return None
        if width * depth > (1 << 25):
            return None
        sketches[key] = TopK(k, width, depth, decay, rng=rng)
        return b"+OK\r\n"
    s = sketches.get(key)
    if s is None:
        return None
    items = args[2:]
    if name == b"TOPK.ADD" and items:
        out = [b"*%d\r\n" % len(items)]
        for it in items:
            e = s.add(it, 1)
            out.append(_null(resp3) if e is None else _bulk(reply_item(e)))
        return b"".join(out)
    if name == b"TOPK.INCRBY" and items and len(items) % 2 == 0:
        out = [b"*%d\r\n" % (len(items) // 2)]
        for i in range(0, len(items), 2):
            n = strict_int(items[i + 1])
            if n is None or not 0 <= n <= MAX_INCREMENT:
                out.append(ERR_INCREMENT)
                break
            e = s.add(items[i], n)
            out.append(_null(resp3) if e is None else _bulk(reply_item(e)))
        return b"".join(out)
    if name == b"TOPK.QUERY" and items:
        found = [s.query(it) for it in items]
        return b"*%d\r\n" % len(items) + b"".join(
            (b"#t\r\n" if f else b"#f\r\n") if resp3 else _int(f) for f in found)
    if name == b"TOPK.COUNT" and items:
        return b"*%d\r\n" % len(items) + b"".join(_int(s.count(it)) for it in items)
    if name == b"TOPK.LIST" and len(items) <= 1:
        with_count = False
        if items:
            if not withcount_token(items[0]):
                return None
            with_count = True
        entries = s.list()
        out = [b"*%d\r\n" % (len(entries) * (2 if with_count else 1))]
        for it, c in entries:
            out.append(_bulk(it))
            if with_count:
                out.append(_int(c))
        return b"".join(out)
    if name == b"TOPK.INFO" and not items:
        d = format_decay(s.decay)
        return ((b"%4\r\n" if resp3 else b"*8\r\n") + b"+k\r\n" + _int(s.k) + b"+width\r\n"
                + _int(s.width) + b"+depth\r\n" + _int(s.depth) + b"+decay\r\n"
                + (b"," + d + b"\r\n" if resp3 else _bulk(d)))
    return None
