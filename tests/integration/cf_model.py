"""A reference model of RedisBloom's cuckoo filter (CF.*), as shared/spec/cf-commands.md describes
it and RedisBloom's src/cuckoo.c, src/cf.c and src/rebloom.c do it: the slots of every
sub-filter, byte for byte, and the exact RESP2 reply of every CF command.

    h = MurmurHash64A(item, seed 0)     fp = h % 255 + 1     h1 = h     h2 = h ^ fp * 0x5bd1e995
    sub-filter i: nb * expansion^i buckets of bs one-byte slots (0 = empty); an item's buckets
    in a sub-filter of n buckets are h1 % n and h2 % n (a true modulo: expansion 3 gives 4, 12,
    36 ... buckets), and the other bucket of bucket b for fp is (b ^ fp * 0x5bd1e995) % n.

test_cf_model.test_model_agrees_with_vectors checks the model against every recorded reply, so
the other tests can take its replies and SCANDUMP bytes as RedisBloom's.

Outside the model: sub-filters of 2^32 buckets or more (RedisBloom's kick chain and slot offsets
are 32-bit there), RESP3, MULTI's own replies, and key commands other than EXISTS, TYPE, DEL,
UNLINK and SET.
An allocation that fails in RedisBloom is modelled by the proxy's stand-in for it: no filter
holds MAX_BYTES or more bytes of slots (filters/cuckoo/cuckoo.h, kCfMaxBytes).

Only the Python standard library (plus bf_vectors' MurmurHash64A) is used.
"""

import re
import struct

from bf_vectors import murmur64a

M64 = (1 << 64) - 1
ALT_MULT = 0x5bd1e995
HEADER = struct.Struct("<QQQQHHH")  # numItems numBuckets numDeletes numFilters bs mi expansion
MAX_CHUNK = 16 * 1024 * 1024  # SCANDUMP answers larger sub-filters in pieces of this size
MAX_EXPANSIONS = 32  # cf-max-expansions: writes refused from this many sub-filters on
MAX_FILTERS = 65535  # numFilters is a uint16_t
MAX_BUCKETS = (1 << 56) - 1
MAX_CAPACITY = 1 << 30
MAX_BYTES = 1 << 47  # the proxy's stand-in for a failed allocation (kCfMaxBytes)
DEFAULT_CAPACITY, DEFAULT_BUCKET_SIZE, DEFAULT_MAX_ITERATIONS, DEFAULT_EXPANSION = 1024, 2, 20, 1

# Insertion outcomes (CuckooInsertStatus).
INSERTED, EXISTS, NO_SPACE, NO_MEMORY = "inserted", "exists", "nospace", "memory"

OK = b"+OK\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_FOUND = b"-ERR not found\r\n"
ITEM_EXISTS = b"-ERR item exists\r\n"
MAX_EXPANSIONS_REACHED = b"-Maximum expansions reached\r\n"
FILTER_FULL = b"-Filter is full\r\n"
INSUFFICIENT_MEMORY = b"-ERR Insufficient memory\r\n"
DEL_NOT_FOUND = b"-Not found\r\n"
COMPACT_NOT_FOUND = b"-Cuckoo filter was not found\r\n"
INVALID_POSITION = b"-Invalid position\r\n"
INVALID_HEADER = b"-Invalid header\r\n"
CANNOT_CREATE = b"-Couldn't create filter!\r\n"
CANNOT_LOAD = b"-Couldn't load chunk!\r\n"
BAD_CAPACITY = b"-Bad capacity\r\n"
UNKNOWN_ARGUMENT = b"-Unknown argument received\r\n"
RESERVE_CAPACITY_RANGE = b"-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n"
INSERT_CAPACITY_RANGE = b"-Capacity must be in the range [cf-bucket-size * 2, 1073741824]\r\n"


def next_pow2(x):
    """RedisBloom's getNextN2: the smallest power of two >= x; 0 stays 0."""
    return 0 if x == 0 else 1 << (x - 1).bit_length()


def alt_index(b, fp):
    """The other bucket's hash of bucket (or hash) b for fingerprint fp, before the modulo."""
    return (b ^ (fp * ALT_MULT)) & M64


def lookup(item):
    """(fp, h1, h2) of an item."""
    h = murmur64a(item, 0)
    fp = h % 255 + 1
    return fp, h, alt_index(h, fp)


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class CuckooFilter:
    """RedisBloom's CuckooFilter: the header fields and sub-filters[i] = bytearray of slots."""

    def __init__(self, num_buckets, bucket_size, max_iterations, expansion, num_filters=1,
                 items=0, deletes=0):
        self.nb, self.bs, self.mi, self.ex = num_buckets, bucket_size, max_iterations, expansion
        self.items, self.deletes = items, deletes
        self.subs = [bytearray(self.sub_buckets(i) * bucket_size) for i in range(num_filters)]

    @classmethod
    def reserve(cls, capacity, bucket_size=DEFAULT_BUCKET_SIZE,
                max_iterations=DEFAULT_MAX_ITERATIONS, expansion=DEFAULT_EXPANSION):
        """CuckooFilter_Init: nextpow2(capacity / bs) buckets (at least 1), expansion rounded up
        to a power of two (0 stays 0: no growth)."""
        return cls(max(1, next_pow2(capacity // bucket_size)), bucket_size, max_iterations,
                   next_pow2(expansion))

    def sub_buckets(self, i):
        return self.nb * self.ex ** i

    def total_bytes(self):
        return sum(len(s) for s in self.subs)

    # -- slots ---------------------------------------------------------------------------------

    def _find(self, i, b, value):
        """Index in sub-filter i of the first slot of bucket b holding `value`, or None."""
        start = b * self.bs
        at = self.subs[i].find(bytes([value]), start, start + self.bs)
        return None if at < 0 else at

    def _find_available(self, i, h1, h2):
        """Filter_FindAvailable: the first empty slot of bucket h1 % n, else of h2 % n."""
        n = len(self.subs[i]) // self.bs
        for h in (h1, h2):
            at = self._find(i, h % n, 0)
            if at is not None:
                return at
        return None

    def _count(self, i, b, fp):
        start = b * self.bs
        return self.subs[i].count(bytes([fp]), start, start + self.bs)

    # -- insertion -----------------------------------------------------------------------------

    def _kick_insert(self, fp, h1):
        """Filter_KOInsert in the newest sub-filter: up to mi swaps, each moving the evicted
        fingerprint to its other bucket; on failure the swaps are replayed backwards, step for
        step as RedisBloom does (which restores the slots only when n is a power of two)."""
        sub = self.subs[-1]
        n, bs = len(sub) // self.bs, self.bs
        victim, b = 0, h1 % n
        for _ in range(self.mi):
            pos = b * bs + victim
            sub[pos], fp = fp, sub[pos]
            b = alt_index(b, fp) % n
            empty = self._find(len(self.subs) - 1, b, 0)
            if empty is not None:
                sub[empty] = fp
                return True
            victim = (victim + 1) % bs
        for _ in range(self.mi):
            victim = (victim + bs - 1) % bs
            b = alt_index(b, fp) % n
            pos = b * bs + victim
            sub[pos], fp = fp, sub[pos]
        return False

    def _can_grow(self):
        n = self.sub_buckets(len(self.subs))
        return (len(self.subs) < MAX_FILTERS and n <= MAX_BUCKETS
                and self.total_bytes() + n * self.bs < MAX_BYTES)

    def insert(self, item, nx=False):
        """CuckooFilter_Insert (InsertUnique when nx): INSERTED, EXISTS, NO_SPACE or NO_MEMORY."""
        fp, h1, h2 = lookup(item)
        if nx and self._check(fp, h1, h2):
            return EXISTS
        while True:
            for i in reversed(range(len(self.subs))):
                at = self._find_available(i, h1, h2)
                if at is not None:
                    self.subs[i][at] = fp
                    self.items = (self.items + 1) & M64
                    return INSERTED
            if self._kick_insert(fp, h1):
                self.items = (self.items + 1) & M64
                return INSERTED
            if self.ex == 0:
                return NO_SPACE
            if not self._can_grow():
                return NO_MEMORY
            self.subs.append(bytearray(self.sub_buckets(len(self.subs)) * self.bs))

    # -- lookups -------------------------------------------------------------------------------

    def _check(self, fp, h1, h2):
        for i, sub in enumerate(self.subs):
            n = len(sub) // self.bs
            if self._find(i, h1 % n, fp) is not None or self._find(i, h2 % n, fp) is not None:
                return True
        return False

    def exists(self, item):
        return int(self._check(*lookup(item)))

    def count(self, item):
        """Copies of the fingerprint in both buckets of every sub-filter (twice when the two
        buckets are one)."""
        fp, h1, h2 = lookup(item)
        total = 0
        for i, sub in enumerate(self.subs):
            n = len(sub) // self.bs
            total += self._count(i, h1 % n, fp) + self._count(i, h2 % n, fp)
        return total

    # -- deletion and compaction ---------------------------------------------------------------

    def delete(self, item):
        """CuckooFilter_Delete: 1 or 0; compacts (stopping at the first failure) when there are
        several sub-filters and deletes > items * 0.10 (as doubles)."""
        fp, h1, h2 = lookup(item)
        for i in reversed(range(len(self.subs))):
            n = len(self.subs[i]) // self.bs
            at = self._find(i, h1 % n, fp)
            if at is None:
                at = self._find(i, h2 % n, fp)
            if at is None:
                continue
            self.subs[i][at] = 0
            self.items = (self.items - 1) & M64
            self.deletes = (self.deletes + 1) & M64
            if len(self.subs) > 1 and float(self.deletes) > float(self.items) * 0.10:
                self.compact(cont=False)
            return 1
        return 0

    def _relocate(self, fp, b, f):
        """relocateSlot: fp of bucket b of sub-filter f into the first of sub-filters 0..f-1
        with an empty slot in bucket b % n_j or alt(b) % n_j."""
        h2 = alt_index(b, fp)
        for j in range(f):
            at = self._find_available(j, b, h2)
            if at is not None:
                self.subs[j][at] = fp
                return True
        return False

    def _compact_single(self, f):
        """CuckooFilter_CompactSingle: True when every fingerprint of sub-filter f moved (it is
        then dropped if it is the last one)."""
        sub, moved_all = self.subs[f], True
        for pos, fp in enumerate(sub):
            if fp == 0:
                continue
            if self._relocate(fp, pos // self.bs, f):
                sub[pos] = 0
            else:
                moved_all = False
        if moved_all and f == len(self.subs) - 1:
            self.subs.pop()
        return moved_all

    def compact(self, cont):
        """CuckooFilter_Compact: sub-filters from the last down to 1; DEL's stops at the first
        that keeps a fingerprint, CF.COMPACT's (cont) goes on. Deletes restart at 0."""
        for f in range(len(self.subs) - 1, 0, -1):
            if not self._compact_single(f) and not cont:
                break
        self.deletes = 0

    # -- INFO, DEBUG, SCANDUMP -----------------------------------------------------------------

    def info_size(self):
        """CF.INFO's Size: sizeof(CuckooFilter) 40 + sizeof(SubCF) 16 per sub-filter + slots."""
        return 40 + 16 * len(self.subs) + self.total_bytes()

    def header(self):
        return HEADER.pack(self.items, self.nb, self.deletes, len(self.subs), self.bs, self.mi,
                           self.ex)

    def debug_text(self):
        return (b"bktsize:%d buckets:%d items:%d deletes:%d filters:%d max_iterations:%d "
                b"expansion:%d" % (self.bs, self.nb, self.items, self.deletes, len(self.subs),
                                   self.mi, self.ex))

    def scandump(self, it):
        """(next iterator, data) of CF.SCANDUMP key it (it >= 0); (0, None) ends the dump."""
        if self.items == 0:
            return 0, None
        if it == 0:
            return 1, self.header()
        offset = it - 1
        for sub in self.subs:
            if offset < len(sub):
                if len(sub) <= MAX_CHUNK:  # the whole sub-filter, whatever the offset
                    return it + len(sub), bytes(sub)
                data = bytes(sub[offset:offset + MAX_CHUNK])
                return it + len(data), data
            offset -= len(sub)
        return 0, None

    def dump(self):
        """Every (iterator, data) pair of a full SCANDUMP walk, the final (0, None) included."""
        out, it = [], 0
        while True:
            nxt, data = self.scandump(it)
            out.append((nxt, data))
            if nxt == 0:
                return out
            it = nxt

    def load_chunk(self, it, data):
        """CF_LoadEncodedChunk for an iterator other than 1: True, or False for RedisBloom's
        "Couldn't load chunk!". Past the last sub-filter the offset is reduced by the total size
        and lands in the last one; the chunk must end inside that one sub-filter."""
        if not data or it < 0 or it - 1 < len(data):
            return False
        offset = it - len(data) - 1
        for i, sub in enumerate(self.subs):
            if offset < len(sub) or i == len(self.subs) - 1:
                break
            offset -= len(sub)
        if offset >= len(sub):
            offset -= len(sub)
        if offset + len(data) > len(sub):
            return False
        sub[offset:offset + len(data)] = data
        return True


def filter_from_header(data):
    """CFHeader_Load with RedisBloom's checks: a CuckooFilter (zeroed sub-filters), or the error
    reply for a header it refuses."""
    if len(data) != HEADER.size:
        return INVALID_HEADER
    items, nb, deletes, nf, bs, mi, ex = HEADER.unpack(data)
    nf &= 0xFFFF  # numFilters is a uint16_t: 65537 loads as 1
    if (nf == 0 or not 1 <= bs <= 255 or mi == 0 or ex > 32768 or (ex == 0 and nf > 1)
            or next_pow2(nb) != nb or not 1 <= nb <= MAX_BUCKETS):
        return CANNOT_CREATE
    total, n = 0, nb
    for _ in range(nf):
        total += n * bs
        if total >= MAX_BYTES:
            return CANNOT_CREATE
        n *= ex
    return CuckooFilter(nb, bs, mi, ex, nf, items, deletes)


# ---------------------------------------------------------------------------------------------
# Commands


STRICT_INT = re.compile(rb"\A(0|-?[1-9][0-9]*)\Z")

# A key that holds something other than a cuckoo filter.
FOREIGN = object()

# Redis's arity of each command (negative: at least that many arguments).
ARITY = {b"CF.RESERVE": -3, b"CF.ADD": 3, b"CF.ADDNX": 3, b"CF.INSERT": -4, b"CF.INSERTNX": -4,
         b"CF.EXISTS": 3, b"CF.MEXISTS": -3, b"CF.COUNT": 3, b"CF.DEL": 3, b"CF.COMPACT": -1,
         b"CF.SCANDUMP": 3, b"CF.LOADCHUNK": 4, b"CF.INFO": 2, b"CF.DEBUG": 2}


def strict_int(arg):
    """Redis's string2ll: no '+', no leading zeros, no spaces, no -0; None when not one."""
    if not STRICT_INT.match(arg):
        return None
    v = int(arg)
    return v if -(1 << 63) <= v < 1 << 63 else None


def arity_error(name):
    return b"-ERR wrong number of arguments for '%s' command\r\n" % name.lower()


def integer(v):
    return b":%d\r\n" % v


def array(elements):
    return b"*%d\r\n" % len(elements) + b"".join(elements)


def bulk(data):
    return b"$-1\r\n" if data is None else b"$%d\r\n%s\r\n" % (len(data), data)


def _reserve_option(args, word, low, high):
    """RMUtil_ArgIndex: the first argument equal to `word` (case-insensitive) anywhere in args,
    its value the next one. (value or None, error reply or None)."""
    upper = [a.upper() for a in args]
    if word not in upper:
        return None, None
    at = upper.index(word)
    v = strict_int(args[at + 1]) if at + 1 < len(args) else None
    if v is None:
        return None, b"-Couldn't parse %s\r\n" % word
    if not low <= v <= high:
        return None, b"-%s: value must be in the range [%d, %d]\r\n" % (word, low, high)
    return v, None


def cmd_reserve(filters, args):
    if len(args) % 2 == 0:
        return arity_error(args[0])
    capacity = strict_int(args[2])
    if capacity is None:
        return BAD_CAPACITY
    values = {}
    for word, low, high, default in ((b"MAXITERATIONS", 1, 65535, DEFAULT_MAX_ITERATIONS),
                                     (b"BUCKETSIZE", 1, 255, DEFAULT_BUCKET_SIZE),
                                     (b"EXPANSION", 0, 32768, DEFAULT_EXPANSION)):
        v, error = _reserve_option(args, word, low, high)
        if error:
            return error
        values[word] = default if v is None else v
    bs = values[b"BUCKETSIZE"]
    if 2 * bs > capacity or capacity > MAX_CAPACITY:
        return RESERVE_CAPACITY_RANGE
    f = filters.get(args[1])
    if f is not None:
        return WRONGTYPE if f is FOREIGN else ITEM_EXISTS
    filters[args[1]] = CuckooFilter.reserve(capacity, bs, values[b"MAXITERATIONS"],
                                            values[b"EXPANSION"])
    return OK


def insert_reply(filters, key, items, nx, multi, capacity=DEFAULT_CAPACITY, nocreate=False):
    """cfInsertCommon: the filter (auto-created), the max-expansions check, then every item."""
    f = filters.get(key)
    if f is FOREIGN:
        return WRONGTYPE
    if f is None:
        if nocreate:
            return NOT_FOUND
        f = filters[key] = CuckooFilter.reserve(capacity)
    if len(f.subs) >= MAX_EXPANSIONS:
        return MAX_EXPANSIONS_REACHED
    results = [f.insert(item, nx) for item in items]
    if multi:
        return array([integer({INSERTED: 1, EXISTS: 0}.get(r, -1)) for r in results])
    return {INSERTED: b":1\r\n", EXISTS: b":0\r\n", NO_SPACE: FILTER_FULL,
            NO_MEMORY: INSUFFICIENT_MEMORY}[results[0]]


def cmd_add(filters, args):
    return insert_reply(filters, args[1], [args[2]], args[0].upper() == b"CF.ADDNX", False)


def cmd_insert(filters, args):
    """CF.INSERT(NX) key [CAPACITY c] [NOCREATE] ITEMS item...: options told apart by their
    first letter only; the first bad one answers."""
    capacity, nocreate, at = DEFAULT_CAPACITY, False, 2
    while at < len(args):
        letter = args[at][:1].lower()
        if letter == b"c":
            if at + 1 == len(args):
                return arity_error(args[0])
            capacity = strict_int(args[at + 1])
            if capacity is None:
                return BAD_CAPACITY
            if not 2 * DEFAULT_BUCKET_SIZE <= capacity <= MAX_CAPACITY:
                return INSERT_CAPACITY_RANGE
            at += 2
        elif letter == b"i":
            break
        elif letter == b"n":
            nocreate, at = True, at + 1
        else:
            return UNKNOWN_ARGUMENT
    items = args[at + 1:]
    if at == len(args) or not items:
        return arity_error(args[0])
    return insert_reply(filters, args[1], items, args[0].upper() == b"CF.INSERTNX", True,
                        capacity, nocreate)


def cmd_check(filters, args):
    """CF.EXISTS, CF.MEXISTS, CF.COUNT: 0 for every item of a missing or foreign key."""
    f = filters.get(args[1])
    name = args[0].upper()
    if f is None or f is FOREIGN:
        values = [0] * (len(args) - 2)
    elif name == b"CF.COUNT":
        values = [f.count(args[2])]
    else:
        values = [f.exists(item) for item in args[2:]]
    replies = [integer(v) for v in values]
    return array(replies) if name == b"CF.MEXISTS" else replies[0]


def cmd_del(filters, args):
    f = filters.get(args[1])
    if f is None or f is FOREIGN:
        return DEL_NOT_FOUND
    return integer(f.delete(args[2]))


def cmd_compact(filters, args):
    if len(args) != 2:
        return arity_error(args[0])
    f = filters.get(args[1])
    if f is None or f is FOREIGN:
        return COMPACT_NOT_FOUND
    f.compact(cont=True)
    return OK


def existing(filters, key):
    """(filter, None), or (None, the error reply for a missing or foreign key)."""
    f = filters.get(key)
    if f is None:
        return None, NOT_FOUND
    if f is FOREIGN:
        return None, WRONGTYPE
    return f, None


def cmd_info(filters, args):
    f, error = existing(filters, args[1])
    if error:
        return error
    fields = ((b"Size", f.info_size()), (b"Number of buckets", f.nb),
              (b"Number of filters", len(f.subs)),
              (b"Number of items inserted", signed64(f.items)),
              (b"Number of items deleted", signed64(f.deletes)), (b"Bucket size", f.bs),
              (b"Expansion rate", f.ex), (b"Max iterations", f.mi))
    return b"*%d\r\n" % (2 * len(fields)) + b"".join(b"+%s\r\n:%d\r\n" % f for f in fields)


def cmd_debug(filters, args):
    f, error = existing(filters, args[1])
    return error or bulk(f.debug_text())


def cmd_scandump(filters, args):
    it = strict_int(args[2])
    if it is None or it < 0:
        return INVALID_POSITION
    f, error = existing(filters, args[1])
    if error:
        return error
    nxt, data = f.scandump(it)
    return b"*2\r\n" + integer(nxt) + bulk(data)


def cmd_loadchunk(filters, args):
    it = strict_int(args[2])
    if it is None or it == 0:
        return INVALID_POSITION
    key, data = args[1], args[3]
    if it == 1:
        f = filters.get(key)
        if f is not None:
            return WRONGTYPE if f is FOREIGN else ITEM_EXISTS
        f = filter_from_header(data)
        if isinstance(f, bytes):
            return f
        filters[key] = f
        return OK
    f, error = existing(filters, key)
    if error:
        return error
    return OK if f.load_chunk(it, data) else CANNOT_LOAD


HANDLERS = {b"CF.RESERVE": cmd_reserve, b"CF.ADD": cmd_add, b"CF.ADDNX": cmd_add,
            b"CF.INSERT": cmd_insert, b"CF.INSERTNX": cmd_insert, b"CF.EXISTS": cmd_check,
            b"CF.MEXISTS": cmd_check, b"CF.COUNT": cmd_check, b"CF.DEL": cmd_del,
            b"CF.COMPACT": cmd_compact, b"CF.SCANDUMP": cmd_scandump,
            b"CF.LOADCHUNK": cmd_loadchunk, b"CF.INFO": cmd_info, b"CF.DEBUG": cmd_debug}


def key_command_reply(filters, args):
    """The few key commands whose reply follows from what the model knows (a key it does not
    hold is free): EXISTS, TYPE, DEL, UNLINK, and SET (the key becomes foreign)."""
    name = args[0].upper()
    if name in (b"EXISTS", b"DEL", b"UNLINK") and len(args) >= 2:
        if name == b"EXISTS":
            return integer(sum(k in filters for k in args[1:]))
        return integer(sum(filters.pop(k, None) is not None for k in set(args[1:])))
    if name == b"TYPE" and len(args) == 2 and filters.get(args[1]) is not FOREIGN:
        return b"+MBbloomCF\r\n" if args[1] in filters else b"+none\r\n"
    if name == b"SET" and len(args) == 3:
        filters[args[1]] = FOREIGN
        return OK
    return None


def model_reply(filters, args):
    """The raw RESP2 reply RedisBloom gives to one command, or None for a command outside the
    model. `filters` maps key -> CuckooFilter (or FOREIGN) and is updated."""
    name = args[0].upper()
    handler = HANDLERS.get(name)
    if handler is None:
        return key_command_reply(filters, args)
    arity = ARITY[name]
    if (arity > 0 and len(args) != arity) or len(args) < -arity:
        return arity_error(name)
    return handler(filters, args)
