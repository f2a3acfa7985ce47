"""Helpers of the TOPK.* integration tests (test_topk*.py): the recorded RedisBloom vectors in
tests/fixtures/topk/ (the format of the BF/CMS vectors: replay each case on fresh keys, compare
every raw reply), the case keys mapped for a cluster or a sharding proxy, the MULTI/EXEC replay
with Redis's queue-time arity check, and a reference model of RedisBloom's Top-K
(/work/shared/spec/topk-commands.md: HeavyKeeper buckets, a k-slot heap kept in array order)
that is exact wherever the spec says replies are deterministic: decay 1 (the closed form of the
decrement loop) or no step against a foreign fingerprint. Anything else raises NotExact, so a
test can never build an expectation on a random draw.

Only the Python standard library (plus bp_helpers, bf_vectors, cms_vectors and resp3_replay)
is used.
"""

import math
import re

from bf_vectors import key_hash_slot
from bf_vectors import load_cases as load_bf_format
from bp_helpers import REPO
from cms_vectors import cut_case, murmur2, strict_int
from resp3_replay import expected_in_multi, replay_in_multi_by_table, with_resp3_replies

FIXTURES = REPO / "tests" / "fixtures" / "topk"
CASES_PATH = FIXTURES / "topk-cases.json"
EXPECTED_PATH = FIXTURES / "topk-expected.json"
RESP3_PATH = FIXTURES / "topk-resp3-expected.json"

CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
KEY_MISSING = b"-TopK: key does not exist\r\n"
KEY_EXISTS = b"-TopK: key already exists\r\n"
INCREMENT_ERROR = (b"-TopK: increment must be an integer greater or equal to 0" + b" " * 28 +
                   b"and smaller or equal to 100,000\r\n")
WITHCOUNT_ERROR = b"-WITHCOUNT keyword expected\r\n"

# Redis's command table arity of the module's commands (COMMAND INFO): a negative n means at
# least -n arguments, the name included. A command failing it is refused while queued in MULTI;
# the module's own argc checks (RESERVE 3 or 6, INCRBY even, LIST <= 3) come at EXEC.
TABLE_ARITY = {b"TOPK.RESERVE": -3, b"TOPK.ADD": -3, b"TOPK.INCRBY": -4, b"TOPK.QUERY": -3,
               b"TOPK.COUNT": -3, b"TOPK.LIST": -2, b"TOPK.INFO": 2}

M32 = 0xFFFFFFFF
FP_SEED = 1919


# ---------------------------------------------------------------------------------------------
# Vectors


def load_cases():
    """The cases of topk-cases.json joined with topk-expected.json (bf_vectors.load_cases)."""
    return load_bf_format(CASES_PATH, EXPECTED_PATH)


def load_resp3_cases(cases):
    """The same cases with the replies recorded after HELLO 3."""
    return with_resp3_replies(cases, RESP3_PATH)


# Where the vectors' commands have their keys.
ALL_KEYS = {b"DEL", b"EXISTS", b"UNLINK", b"TOUCH"}  # every argument
TWO_KEYS = {b"RENAME", b"RENAMENX", b"COPY"}  # a cluster cannot split these: one slot or CROSSSLOT


def key_positions(args):
    """Indexes of `args` that hold key names: every argument of DEL/EXISTS/UNLINK/TOUCH, the two
    of RENAME/RENAMENX/COPY, OBJECT's third, else the first argument after the name."""
    name = args[0].upper()
    if name in ALL_KEYS:
        return list(range(1, len(args)))
    if name in TWO_KEYS:
        return list(range(1, min(3, len(args))))
    if name == b"OBJECT":
        return [2] if len(args) > 2 else []
    return list(range(1, min(2, len(args))))


def with_keys(case, rename):
    """`case` with every key k (at a key position) replaced by rename(k); items and other
    arguments stay as they are (test_topk_vectors checks that this is sound)."""
    mapping = {k: rename(k) for k in case["keys"]}
    cmds = []
    for args in case["cmds"]:
        out = list(args)
        for i in key_positions(args):
            out[i] = mapping.get(args[i], args[i])
        cmds.append(out)
    return dict(case, keys=[mapping[k] for k in case["keys"]], cmds=cmds)


def tagged(case, tag):
    """Every key of `case` given the hash tag `tag` (bytes with braces): one slot, one server."""
    return with_keys(case, lambda k: tag + k)


def as_cluster_answers(case):
    """`case` as a client of bloomproxy in front of a Redis Cluster sees it with its keys as
    recorded: a RENAME/RENAMENX/COPY across slots answers CROSSSLOT (as Redis Cluster itself
    would) and the case ends there."""
    for i, args in enumerate(case["cmds"]):
        if args[0].upper() in TWO_KEYS and len(args) >= 3 and \
                key_hash_slot(args[1]) != key_hash_slot(args[2]):
            return cut_case(case, i, CROSSSLOT)
    return case


def in_multi_expected(args, reply):
    """(queued, exec_reply) for `args` alone in MULTI/EXEC (resp3_replay.expected_in_multi with
    the TOPK command table)."""
    return expected_in_multi(args, reply, TABLE_ARITY)


def replay_in_multi(conn, case, max_report=3):
    """Each command of `case` alone in MULTI/EXEC, checked against in_multi_expected
    (resp3_replay.replay_in_multi_by_table with the TOPK command table)."""
    return replay_in_multi_by_table(conn, case, TABLE_ARITY, max_report)


# ---------------------------------------------------------------------------------------------
# A reference model of RedisBloom's Top-K (shared/spec/topk-commands.md), exact or NotExact.


class NotExact(Exception):
    """The reply would depend on RedisBloom's random draws (decay < 1, a foreign bucket)."""


def fingerprint(item):
    return murmur2(item, FP_SEED)


def column(item, row, width):
    return murmur2(item, row) % width


def c_string(item):
    """The item as RedisBloom replies it: up to its first NUL byte."""
    cut = item.find(b"\0")
    return item if cut < 0 else item[:cut]


def format_decay(decay):
    """INFO's decay: C's %.17g."""
    return b"%.17g" % decay


class TopK:
    """A Top-K key: depth rows of width buckets [fp, count] and a heap array of k slots
    [fp, item or None, count]."""

    def __init__(self, k, width=8, depth=7, decay=0.9):
        assert k >= 1 and width >= 1 and depth >= 1 and 0 < decay <= 1
        self.k, self.width, self.depth, self.decay = k, width, depth, decay
        self.buckets = {}  # index -> [fp, count]; absent: {0, 0}
        self.heap = [[0, None, 0] for _ in range(k)]

    def bucket_index(self, item, row):
        return ((row * self.width) & M32) + column(item, row, self.width)

    def _find(self, fp, item):
        for s in range(self.k - 1, -1, -1):
            slot = self.heap[s]
            if slot[1] is not None and slot[0] == fp and slot[1] == item:
                return s
        return None

    def _sift_down(self, start):
        heap, n = self.heap, self.k
        if n < 2 or (n - 2) // 2 < start:
            return
        child = 2 * start + 1
        if child + 1 < n and heap[child][2] > heap[child + 1][2]:
            child += 1
        if heap[child][2] > heap[start][2]:
            return
        top = heap[start]
        while True:
            heap[start] = heap[child]
            start = child
            if (n - 2) // 2 < child:
                break
            child = 2 * child + 1
            if child + 1 < n and heap[child][2] > heap[child + 1][2]:
                child += 1
            if not heap[child][2] < top[2]:
                break
        heap[start] = top

    def add(self, item, n=1):
        """One item of ADD (n = 1) or INCRBY: the expelled item (cut at NUL) or None."""
        fp = fingerprint(item)
        heap_min = self.heap[0][2]
        best = 0
        for row in range(self.depth):
            b = self.buckets.setdefault(self.bucket_index(item, row), [0, 0])
            if b[1] == 0:
                b[0], b[1] = fp, n
                best = max(best, n)
            elif b[0] == fp:
                b[1] = (b[1] + n) & M32
                best = max(best, b[1])
            elif n > 0:
                if self.decay != 1.0:
                    raise NotExact(f"{item[:40]!r} meets a foreign fingerprint at decay "
                                   f"{self.decay}")
                if n >= b[1]:  # decay 1: every step decrements
                    b[0], b[1] = fp, n - b[1] + 1
                    best = max(best, b[1])
                else:
                    b[1] -= n
        if best < heap_min:
            return None
        s = self._find(fp, item)
        if s is not None:
            self.heap[s][2] = best
            self._sift_down(s)
            return None
        expelled = self.heap[0][1]
        self.heap[0] = [fp, item, best]
        self._sift_down(0)
        return None if expelled is None else c_string(expelled)

    def query(self, item):
        return int(self._find(fingerprint(item), item) is not None)

    def count(self, item):
        fp = fingerprint(item)
        heap_min = self.heap[0][2]
        in_heap = self.query(item)
        out = 0
        for row in range(self.depth):
            b = self.buckets.get(self.bucket_index(item, row), [0, 0])
            if b[0] == fp and (not in_heap or b[1] >= heap_min):
                out = max(out, b[1])
        return out

    def list(self):
        """[(item cut at NUL, count)] as TOPK.LIST gives them: stable sort by count, descending,
        up to the first count 0."""
        out = []
        for fp, item, cnt in sorted(self.heap, key=lambda s: -s[2]):
            if cnt == 0:
                break
            out.append((c_string(item), cnt))
        return out

    def info(self):
        return {"k": self.k, "width": self.width, "depth": self.depth, "decay": self.decay}


def collision_free(items, width, depth):
    """Whether no two distinct items (of different fingerprints) share a bucket in any row: then
    no step ever meets a foreign fingerprint, whatever the decay (spec, "Randomness")."""
    for row in range(depth):
        seen = {}
        for item in set(items):
            c = column(item, row, width)
            fp = fingerprint(item)
            if seen.setdefault(c, fp) != fp:
                return False
    return True


# Raw RESP2 replies of the model.


def bulk_or_null(item):
    return b"$-1\r\n" if item is None else b"$%d\r\n%s\r\n" % (len(item), item)


def parse_decay(arg):
    """The decay RedisBloom accepts, in the plain forms the model covers (digits, one dot, an
    exponent), or None."""
    if not re.fullmatch(rb"[0-9]*\.?[0-9]*([eE][-+]?[0-9]+)?", arg) or not re.search(rb"\d", arg):
        return None
    v = float(arg)
    return v if 0 < v <= 1 and math.isfinite(v) else None


FOREIGN = object()  # a key of another type


def model_reply(keys, args):
    """The raw RESP2 reply the model predicts for one valid command of a vector case, or None
    when it does not cover it (argument errors, keys it does not know). `keys` maps key ->
    TopK (or FOREIGN) and is updated. NotExact propagates."""
    name = args[0].upper()
    if len(args) < 2:
        return None
    key = args[1]
    sk = keys.get(key)
    if name == b"TOPK.RESERVE" and len(args) in (3, 6):
        if sk is not None:
            return KEY_EXISTS
        k = strict_int(args[2])
        w, d = (strict_int(args[3]), strict_int(args[4])) if len(args) == 6 else (8, 7)
        decay = parse_decay(args[5]) if len(args) == 6 else 0.9
        if None in (k, w, d, decay) or not all(1 <= v <= M32 for v in (k, w, d)) or \
                w * d > 1 << 22:
            return None
        keys[key] = TopK(k, w, d, decay)
        return b"+OK\r\n"
    if sk is FOREIGN and name.startswith(b"TOPK."):
        return None
    if sk is None:
        return None
    if name == b"TOPK.ADD" and len(args) >= 3:
        out = [sk.add(item) for item in args[2:]]
        return b"*%d\r\n" % len(out) + b"".join(bulk_or_null(e) for e in out)
    if name == b"TOPK.INCRBY" and len(args) >= 4 and len(args) % 2 == 0:
        pairs = [(args[i], strict_int(args[i + 1])) for i in range(2, len(args), 2)]
        elems = []
        for item, n in pairs:
            if n is None or not 0 <= n <= 100000:
                elems.append(INCREMENT_ERROR)
                break
            elems.append(bulk_or_null(sk.add(item, n)))
        if len(elems) != len(pairs):
            return None  # the short malformed reply: not modelled
        return b"*%d\r\n" % len(pairs) + b"".join(elems)
    if name == b"TOPK.QUERY" and len(args) >= 3:
        return b"*%d\r\n" % (len(args) - 2) + b"".join(b":%d\r\n" % sk.query(i) for i in args[2:])
    if name == b"TOPK.COUNT" and len(args) >= 3:
        return b"*%d\r\n" % (len(args) - 2) + b"".join(b":%d\r\n" % sk.count(i) for i in args[2:])
    if name == b"TOPK.LIST" and len(args) in (2, 3):
        if len(args) == 3 and args[2].upper() != b"WITHCOUNT":
            return None
        entries = sk.list()
        if len(args) == 2:
            return b"*%d\r\n" % len(entries) + b"".join(bulk_or_null(i) for i, _ in entries)
        return b"*%d\r\n" % (2 * len(entries)) + b"".join(
            bulk_or_null(i) + b":%d\r\n" % c for i, c in entries)
    if name == b"TOPK.INFO" and len(args) == 2:
        d = format_decay(sk.decay)
        return (b"*8\r\n+k\r\n:%d\r\n+width\r\n:%d\r\n+depth\r\n:%d\r\n+decay\r\n$%d\r\n%s\r\n"
                % (sk.k, sk.width, sk.depth, len(d), d))
    return None
