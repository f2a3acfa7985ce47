"""CMS.* inside MULTI/EXEC (issue 13; filters/cms/multi_cms.h): each command is queued as one script
that runs the whole command when EXEC does.

- the script's MurmurHash2 (Lua, exact 32-bit arithmetic) against filters/cms/cms.h's, through a
  real redis-server (the vectors are shared with tests/unit/multi_cms_test.cc), and its exact
  signed arithmetic (MERGE's int64 overflow checks) against Python's integers;
- a differential test: random sequences of every CMS command (creation, increments with
  saturation and overflow, queries, INFO, MERGE with huge and negative weights, every argument
  error but arity, other types, a Bloom filter, deleted and re-created sketches) run outside
  MULTI on one set of names and inside MULTI on another: every reply byte for byte the same,
  and the same sketches upstream; in one part, in many parts (--bf-max-shard-bytes 64), and on
  a Redis Cluster;
- a wrong arity refused when queued (EXECABORT), DISCARD, WATCH (nil and no effect);
- atomicity with plain commands: INCR in the same transaction, and two proxies whose
  transactions each increment a sketch and a counter while a reader never sees them differ.
"""

import random
import threading

import pytest

from bf_vectors import key_hash_slot, run_commands
from bp_helpers import parse_resp
from cms_vectors import (CROSSSLOT, MERGE_OVERFLOW, MergeOverflow, ModelSketch, murmur2,
                         read_sketch)
from lua_scripts import load_script

OK = b"+OK\r\n"
QUEUED = b"+QUEUED\r\n"
EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"
NIL_ARRAY = b"*-1\r\n"
PARTS64 = ("--bf-max-shard-bytes", "64")

# (item, seed, MurmurHash2): the same table as tests/unit/multi_cms_test.cc, which checks it
# against filters/cms/cms.h's MurmurHash2.
HASH_VECTORS = [
    (b"", 0, 0),
    (b"a", 0, 2456313694),
    (b"ab", 1, 1692487918),
    (b"abc", 2, 3876204518),
    (b"abcd", 3, 1741750889),
    (b"hello world", 6, 2241243765),
    (b"\xff\xfe\x80\x7f\x00\x01", 4294967295, 3264469326),
    (b"count-min sketch", 1000, 402663127),
]


def prelude():
    """The script's prelude, filters/cms/cms_multi_prelude.lua, as the build embeds it."""
    return load_script("cms/cms_multi_prelude.lua")


def exec_elements(raw):
    """The raw frames of EXEC's array reply (None when it is no array)."""
    if not raw.startswith(b"*") or raw == NIL_ARRAY:
        return None
    eol = raw.index(b"\r\n")
    n, pos, out = int(raw[1:eol]), eol + 2, []
    for _ in range(n):
        _, end = parse_resp(raw, pos)
        out.append(raw[pos:end])
        pos = end
    assert pos == len(raw)
    return out


def in_multi(conn, commands):
    """Runs `commands` in one MULTI on RawConn `conn` (each must answer +QUEUED); EXEC's
    elements."""
    assert run_commands(conn, [("MULTI",)]) == [OK]
    for args in commands:
        assert run_commands(conn, [args]) == [QUEUED], args
    raw = run_commands(conn, [("EXEC",)])[0]
    elements = exec_elements(raw)
    assert elements is not None, raw
    return elements


# ---------------------------------------------------------------------------------------------
# The prelude's maths on a real server


def test_prelude_hash_is_filters_murmur2(redis_instance):
    r = redis_instance.client()
    script = prelude() + """
local out = {}
for i = 1, #ARGV, 2 do out[#out + 1] = murmur2(ARGV[i], tonumber(ARGV[i + 1])) end
return out
"""
    args = [a for item, seed, _ in HASH_VECTORS for a in (item, seed)]
    assert r.eval(script, 0, *args) == [h for _, _, h in HASH_VECTORS]
    # Many items of every length and byte, many seeds (rows), against the Python port the CMS
    # vectors test checks against RedisBloom's recorded cells.
    rng = random.Random(13)
    items = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 70))) for _ in range(400)]
    seeds = [0, 1, 2, 3, 7, 100, 65535, 65536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]
    pairs = [(item, rng.choice(seeds)) for item in items] + \
            [(items[0], s) for s in seeds] + [(b"x" * 1000, 5)]
    got = r.eval(script, 0, *[a for p in pairs for a in p])
    assert got == [murmur2(item, seed) for item, seed in pairs]


def test_prelude_signed_arithmetic_is_exact(redis_instance):
    r = redis_instance.client()
    script = prelude() + """
local a, b = bn_dec(ARGV[1]), bn_dec(ARGV[2])
local function show(x)
  local digits = {}
  for k = #x, 1, -1 do digits[#digits + 1] = string.format('%06x', x[k]) end
  return (x.neg and '-' or '') .. (#x == 0 and '0' or table.concat(digits))
end
local p, s = bn_mul(a, b), bn_add(a, b)
return {show(p), show(s), fits_i64(p) and 1 or 0, fits_i64(s) and 1 or 0,
        show(bn_bytes(ARGV[3])), bn_be8(bn_bytes(ARGV[3]))}
"""

    def show(v):  # the script's rendering: sign, then 6 hex digits per 24-bit limb
        if v == 0:
            return "0"
        digits = "%x" % abs(v)
        return ("-" if v < 0 else "") + digits.rjust(-(-len(digits) // 6) * 6, "0")

    rng = random.Random(7)
    edge = [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 32 - 1, 2 ** 31, -2 ** 31, 2 ** 24, -2 ** 24,
            2 ** 62, -2 ** 62, 3037000499, 3037000500, -3037000500]
    values = edge + [rng.randrange(-2 ** 63, 2 ** 63) for _ in range(40)]
    for x in values:
        for y in rng.sample(values, 12) + edge[:4]:
            u = rng.randrange(0, 2 ** 64)
            raw = u.to_bytes(8, "big")
            p, s, fp, fs, bu, be = r.eval(script, 0, str(x), str(y), raw)
            assert (p.decode(), s.decode()) == (show(x * y), show(x + y)), (x, y)
            assert fp == int(-2 ** 63 <= x * y < 2 ** 63), (x, y)
            assert fs == int(-2 ** 63 <= x + y < 2 ** 63), (x, y)
            assert (bu.decode(), be) == (show(u), raw)


# ---------------------------------------------------------------------------------------------
# Differential: the same commands outside and inside MULTI

ITEMS = [b"a", b"b", b"c", b"", b"item:1", b"item:2", b"\xff\x00z", b"long" * 9]
INCREMENTS = ["1", "1", "2", "7", "100", "0", "4294967295", "4294967296",
              "9223372036854775807", "-1", "x", "+1", "01"]
WEIGHTS = ["1", "1", "2", "-1", "0", "3", "x", "9223372036854775807", "-9223372036854775808",
           "4294967296", "2147483648", "-2147483649", "1" + "0" * 19]
SKETCHES = ["s0", "s1", "s2", "s3"]
OTHERS = ["str", "hsh", "bf", "none"]


def random_command(rng):
    """One CMS command (any argument error but arity) or a plain command, on bare names."""
    name = rng.choice(SKETCHES * 3 + OTHERS)
    kind = rng.choices(["dim", "prob", "incr", "query", "info", "merge", "del", "plain"],
                       [3, 1, 10, 6, 3, 8, 0.5, 1])[0]
    if kind == "dim":
        return ["CMS.INITBYDIM", name,
                rng.choice(["20"] * 5 + ["10", "0", "-1", "x", "99999999999999999999"]),
                rng.choice(["4"] * 5 + ["3", "0", "x"])]
    if kind == "prob":
        return ["CMS.INITBYPROB", name, rng.choice(["0.1", "0.1", "0.2", "0", "1", "x"]),
                rng.choice(["0.1", "0.1", "0.05", "0", "1", "x"])]
    if kind == "incr":
        args = ["CMS.INCRBY", name]
        for _ in range(rng.randint(1, 4)):
            big = rng.random() < 0.15
            args += [rng.choice(ITEMS), rng.choice(INCREMENTS) if big else str(rng.randint(0, 50))]
        return args
    if kind == "query":
        return ["CMS.QUERY", name] + rng.sample(ITEMS, rng.randint(1, 4))
    if kind == "info":
        return ["CMS.INFO", name]
    if kind == "merge":
        # Mostly sketches of one size (s0..s2), so that many merges get to the sums.
        n = rng.randint(1, 3)
        name = rng.choice(SKETCHES[:3] * 6 + SKETCHES + OTHERS)
        sources = [rng.choice(SKETCHES[:3] * 8 + SKETCHES + OTHERS) for _ in range(n)]
        shape = rng.random()
        if shape < 0.5:
            return ["CMS.MERGE", name, str(n)] + sources
        if shape < 0.9:
            ws = [rng.choice(WEIGHTS) if rng.random() < 0.3 else str(rng.randint(-1, 3))
                  for _ in range(n)]
            return ["CMS.MERGE", name, str(n)] + sources + [rng.choice(["WEIGHTS", "weights"])] + ws
        # Argument errors: numkeys, counts.
        return rng.choice([["CMS.MERGE", name, rng.choice(["0", "-1", "x"])] + sources,
                           ["CMS.MERGE", name, str(n + 1)] + sources,
                           ["CMS.MERGE", name, str(n)] + sources + ["WEIGHTS"],
                           ["CMS.MERGE", name, str(n)] + sources + ["WEIGHTS", "1"] * (n + 1)])
    if kind == "del":
        return ["DEL", name]
    return rng.choice([["SET", "str", "v"], ["HSET", "hsh", "f", "1"], ["BF.ADD", "bf", "x"]])


def named(args, prefix):
    """`args` with every key name given `prefix` (all names are bare words of the lists above)."""
    names = set(SKETCHES + OTHERS)
    return [prefix + a if a in names else a for a in args]


def setup_commands():
    return [["SET", "str", "v"], ["HSET", "hsh", "f", "1"], ["BF.ADD", "bf", "x"],
            ["CMS.INITBYDIM", "s0", "20", "4"], ["CMS.INITBYDIM", "s1", "20", "4"],
            ["CMS.INITBYPROB", "s2", "0.1", "0.1"], ["CMS.INITBYDIM", "s3", "10", "3"],
            ["CMS.INCRBY", "s0", "a", "5", "b", "3"], ["CMS.INCRBY", "s1", "a", "2", "c", "9"]]


def differential(conn, direct, outside, inside, seed, count=150):
    """Runs `count` random commands on names prefixed `outside` one by one, and on names
    prefixed `inside` in transactions of 1..12 commands; asserts the same replies and the same
    sketches upstream (`direct`: a client of the server holding them)."""
    rng = random.Random(seed)
    for prefix in (outside, inside):
        run_commands(conn, [named(c, prefix) for c in setup_commands()])
    sequence = [random_command(rng) for _ in range(count)]
    want = run_commands(conn, [named(c, outside) for c in sequence])
    got, at = [], 0
    while at < len(sequence):
        chunk = sequence[at:at + rng.randint(1, 12)]
        got += in_multi(conn, [named(c, inside) for c in chunk])
        at += len(chunk)
    for i, (c, w, g) in enumerate(zip(sequence, want, got)):
        assert g == w, f"command {i} {c}: inside MULTI {g!r}, outside {w!r}"
    assert len(got) == len(want)
    for name in SKETCHES:
        replies = run_commands(conn, [["CMS.INFO", p + name] for p in (outside, inside)] +
                               [["CMS.QUERY", p + name] + ITEMS for p in (outside, inside)])
        assert replies[0] == replies[1] and replies[2] == replies[3], name
        if replies[0].startswith(b"*"):
            a, b = (read_sketch(direct(p + name), p + name) for p in (outside, inside))
            for field in ("width", "depth", "part", "count", "cells", "version"):
                assert a[field] == b[field], f"{name}: {field} differs"
    return want


def assert_varied(replies):
    """The sequence exercised every kind of reply (its seeds are chosen so)."""
    joined = b"".join(replies)
    for expected in (b"-CMS: key does not exist", b"-WRONGTYPE", b"-CMS: key already exists",
                     b"-CMS: INCRBY overflow", b"-CMS: width/depth is not equal",
                     b"-CMS: invalid weight value", b"-CMS: Cannot parse number",
                     b"-CMS: MERGE overflow", b"-CMS: invalid width", b"+width"):
        assert expected in joined, expected
    assert sum(r == OK for r in replies) >= 10


@pytest.mark.parametrize("seed", [3, 39, 46])
@pytest.mark.parametrize("mode", ["one part", "parts of 64 bytes"])
def test_inside_multi_replies_as_outside(proxy, redis_instance, mode, seed):
    p = proxy(*(PARTS64 if mode != "one part" else ()))
    direct = redis_instance.client()
    with p.raw() as c:
        want = differential(c, lambda _: direct, "o:", "m:", seed)
    joined = b"".join(want)
    for expected in (b"-CMS: key does not exist", b"-WRONGTYPE", b"-CMS: key already exists",
                     b"-CMS: INCRBY overflow", b"-CMS: width/depth is not equal",
                     b"-CMS: invalid weight value", b"-CMS: Cannot parse number"):
        assert expected in joined, expected


def test_merge_and_saturation_exactly(proxy, redis_instance):
    """The corners of MERGE's int64 rules and INCRBY's saturation, checked against the model:
    products and partial sums that leave an int64 (even when the total would come back in
    range), sums that doubles could not hold exactly, counts that wrapped."""
    p = proxy()
    M62, M61, M31 = 2 ** 62, 2 ** 61, 2 ** 31
    with p.raw() as c:
        sketches = {n: ModelSketch(8, 2) for n in ("a", "b", "d", "e", "f")}
        run_commands(c, [["CMS.INITBYDIM", n, "8", "2"] for n in sketches])
        incrs = [("a", [(b"x", 4294967290), (b"y", 3)]), ("b", [(b"x", 2 ** 63 - 1), (b"z", 1)]),
                 ("a", [(b"x", 10)]), ("e", [(b"x", 3)]),
                 # f: x's cells saturated, its count wrapped back to 0
                 ("f", [(b"x", 2 ** 63 - 1)]), ("f", [(b"x", 2 ** 63 - 1), (b"x", 2)])]
        got = in_multi(c, [["CMS.INCRBY", n] + [str(a) for it, v in pairs for a in (it.decode(), v)]
                           for n, pairs in incrs])
        assert got == [sketches[n].incrby_reply(pairs) for n, pairs in incrs]
        assert sketches["f"].count == 0
        d = sketches["d"]
        cases = [
            (["a", "b"], [1, 1]),  # b's count is 2^63: its product with 1 overflows
            (["a"], [2]),
            (["a", "a"], [-1, 1]),
            (["a", "a", "a"], [M62, M62, -M62]),
            (["a", "a"], [1, -1]),
            (["a"], [0]),
            (["d", "a"], [-(2 ** 63), 1]),
            (["a", "d"], [3, -(2 ** 63)]),
            (["e", "e"], [M61 + 1, -M61]),  # 3 * (2^61 + 1): no double holds it; total 3
            (["f"] * 4, [M62, M62, -M62, -M62 + 1]),  # a product overflows; total in range
            (["f"] * 4, [M31, M31, -M31, -M31 + 1]),  # a partial sum overflows; total in range
            (["f", "f"], [M31, -M31 + 1]),  # no overflow anywhere: the saturated cells
        ]
        outcomes = set()
        for names, weights in cases:
            args = ["CMS.MERGE", "d", str(len(names))] + names + ["WEIGHTS"] + \
                   [str(w) for w in weights]
            try:
                d.merge_from([sketches[n] for n in names], weights)
                want = OK
            except MergeOverflow:
                want = MERGE_OVERFLOW
            outcomes.add(want)
            assert in_multi(c, [args, ["CMS.INFO", "d"]]) == [want, d.info_reply()], args
            assert read_sketch(redis_instance.client(), "d")["cells"] == d.cells, args
        assert outcomes == {OK, MERGE_OVERFLOW}
        assert max(d.cells) == 4294967295


# ---------------------------------------------------------------------------------------------
# Transactions


def test_wrong_arity_aborts_the_transaction(bp, redis_instance):
    with bp.raw() as c:
        assert run_commands(c, [("CMS.INITBYDIM", "s", "10", "2")]) == [OK]
        for bad, lower in [(("CMS.INCRBY", "s", "a"), "cms.incrby"),
                           (("cms.query", "s"), "cms.query"),
                           (("CMS.INFO", "s", "x"), "cms.info"),
                           (("CMS.MERGE", "s", "1"), "cms.merge"),
                           (("CMS.INITBYDIM", "t", "1"), "cms.initbydim")]:
            outside = run_commands(c, [bad])
            assert outside == [b"-ERR wrong number of arguments for '%s' command\r\n"
                               % lower.encode()]
            assert run_commands(c, [("MULTI",), ("CMS.INCRBY", "s", "a", "1"), bad,
                                    ("SET", "k", "1"), ("EXEC",)]) == \
                [OK, QUEUED, outside[0], QUEUED, EXECABORT]
        assert run_commands(c, [("EXISTS", "k"), ("CMS.QUERY", "s", "a"), ("EXISTS", "t")]) == \
            [b":0\r\n", b"*1\r\n:0\r\n", b":0\r\n"]


def test_atomic_with_plain_commands(bp):
    with bp.raw() as c:
        got = in_multi(c, [("CMS.INITBYDIM", "s", "10", "2"), ("INCR", "n"),
                           ("CMS.INCRBY", "s", "a", "3", "a", "4"), ("INCR", "n"),
                           ("CMS.QUERY", "s", "a", "b"), ("GET", "n"), ("CMS.INFO", "s"),
                           ("CMS.INCRBY", "n", "a", "1"), ("CMS.INITBYDIM", "s", "10", "2")])
        assert got == [OK, b":1\r\n", b"*2\r\n:3\r\n:7\r\n", b":2\r\n", b"*2\r\n:7\r\n:0\r\n",
                       b"$1\r\n2\r\n", b"*6\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:7\r\n",
                       b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
                       b"-CMS: key already exists\r\n"]
        # Replaced inside one transaction: DEL, then a new sketch of other dimensions.
        got = in_multi(c, [("DEL", "s"), ("CMS.QUERY", "s", "a"), ("CMS.INITBYDIM", "s", "5", "3"),
                           ("CMS.INCRBY", "s", "a", "1"), ("CMS.INFO", "s")])
        assert got == [b":1\r\n", b"-CMS: key does not exist\r\n", OK, b"*1\r\n:1\r\n",
                       b"*6\r\n+width\r\n:5\r\n+depth\r\n:3\r\n+count\r\n:1\r\n"]


def test_discard_leaves_no_effect(bp, redis_instance):
    with bp.raw() as c:
        assert run_commands(c, [("CMS.INITBYDIM", "s", "10", "2"), ("CMS.INCRBY", "s", "a", "2")]) \
            == [OK, b"*1\r\n:2\r\n"]
        before = set(redis_instance.client().keys("*"))
        assert run_commands(c, [("MULTI",), ("CMS.INCRBY", "s", "a", "5"),
                                ("CMS.INITBYDIM", "t", "10", "2"), ("CMS.MERGE", "s", "1", "s"),
                                ("DISCARD",)]) == [OK, QUEUED, QUEUED, QUEUED, OK]
        assert run_commands(c, [("CMS.QUERY", "s", "a"), ("EXISTS", "t")]) == \
            [b"*1\r\n:2\r\n", b":0\r\n"]
    assert set(redis_instance.client().keys("*")) == before


def test_watch_changed_key_runs_nothing(bp, redis_instance):
    direct = redis_instance.client()
    with bp.raw() as c, bp.raw() as other:
        assert run_commands(c, [("CMS.INITBYDIM", "s", "10", "2"), ("SET", "w", "0")]) == [OK, OK]
        before = set(direct.keys("*"))
        assert run_commands(c, [("WATCH", "w"), ("MULTI",), ("CMS.INCRBY", "s", "a", "5"),
                                ("CMS.INITBYDIM", "t", "10", "2"), ("CMS.MERGE", "s", "1", "s")]) \
            == [OK, OK, QUEUED, QUEUED, QUEUED]
        assert run_commands(other, [("SET", "w", "1")]) == [OK]
        assert run_commands(c, [("EXEC",)]) == [NIL_ARRAY]
        assert run_commands(c, [("CMS.QUERY", "s", "a"), ("EXISTS", "t"), ("CMS.INFO", "s")]) == \
            [b"*1\r\n:0\r\n", b":0\r\n", b"*6\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:0\r\n"]
        assert set(direct.keys("*")) == before
        # Unchanged, the same transaction runs.
        assert run_commands(c, [("WATCH", "w"), ("MULTI",), ("CMS.INCRBY", "s", "a", "5"),
                                ("EXEC",)]) == [OK, OK, QUEUED, b"*1\r\n*1\r\n:5\r\n"]


def test_two_proxies_transactions_lose_nothing(proxy):
    """Writers on two proxies each add 1 to a sketch item and to a counter in one transaction; a
    reader reads both in one transaction and must always see them equal."""
    a, b = proxy(), proxy(*PARTS64)
    with a.raw() as c:
        assert run_commands(c, [("CMS.INITBYDIM", "s", "50", "3")]) == [OK]
    rounds, errors = 150, []

    def writer(p):
        try:
            with p.raw() as c:
                for _ in range(rounds):
                    got = in_multi(c, [("CMS.INCRBY", "s", "hits", "1"), ("INCR", "n")])
                    assert got[0].startswith(b"*1\r\n:") and got[1].startswith(b":"), got
        except Exception as e:  # reported below
            errors.append(e)

    def reader(p):
        try:
            with p.raw() as c:
                for _ in range(rounds):
                    q, n = in_multi(c, [("CMS.QUERY", "s", "hits"), ("GET", "n")])
                    value = parse_resp(n)[0]
                    assert q == b"*1\r\n:%d\r\n" % int(value or 0), (q, n)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(x,)) for x in (a, b, a, b)] + \
              [threading.Thread(target=reader, args=(x,)) for x in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    with b.raw() as c:
        assert run_commands(c, [("CMS.QUERY", "s", "hits"), ("GET", "n"), ("CMS.INFO", "s")]) == \
            [b"*1\r\n:600\r\n", b"$3\r\n600\r\n",
             b"*6\r\n+width\r\n:50\r\n+depth\r\n:3\r\n+count\r\n:600\r\n"]


# ---------------------------------------------------------------------------------------------
# Redis Cluster


def test_cluster_inside_multi_replies_as_outside(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy()

    def direct(key):
        return redis_cluster.node_for_key(key).client()

    with p.raw() as c:
        # All names of one run share a tag: one slot, as a transaction on a cluster needs.
        assert_varied(differential(c, direct, "{mc-o}", "{mc-m}", seed=18) +
                      differential(c, direct, "{mc-o2}", "{mc-m2}", seed=25))


def test_cluster_merge_across_slots_is_refused_when_queued(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    a = "mcx:a"
    b = next(f"mcx:b{i}" for i in range(1000) if key_hash_slot(f"mcx:b{i}") != key_hash_slot(a))
    with cluster_proxy().raw() as c:
        assert run_commands(c, [("CMS.INITBYDIM", a, "10", "2"), ("CMS.INITBYDIM", b, "10", "2"),
                                ("CMS.MERGE", a, "2", a, b)]) == [OK, OK, CROSSSLOT]
        assert run_commands(c, [("MULTI",), ("CMS.INCRBY", a, "x", "1"),
                                ("CMS.MERGE", a, "2", a, b), ("EXEC",)]) == \
            [OK, QUEUED, CROSSSLOT, EXECABORT]
        assert run_commands(c, [("CMS.QUERY", a, "x")]) == [b"*1\r\n:0\r\n"]
