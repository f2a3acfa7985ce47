"""CMS.* through bloomproxy beyond the recorded vectors:

- TYPE (CMSk-TYPE) and COPY (refused as RedisBloom refuses it);
- DEL, UNLINK, the EXPIRE family, TTL, PERSIST, RENAME and RENAMENX acting on the whole sketch
  (checked on the upstream itself: no key left, every internal key with the name's expiry);
- KEYS and SCAN through the proxy showing sketches by name and no internal key;
- sketches against Bloom filters, strings and hashes (WRONGTYPE both ways, BF.EXISTS 0);
- `cms-mode forward` passing CMS.* to the upstream unchanged;
- CMS.MERGE across slots on a Redis Cluster (CROSSSLOT), and within one slot; behind a
  sharding proxy, refused unless all names share a hash tag;
- a sketch spread over many parts (--bf-max-shard-bytes 64) counting exactly as RedisBloom;
- three proxies incrementing the same sketches concurrently while a fourth client merges them:
  every increment counted once, cells equal to a model that received every increment, every
  merge a consistent snapshot.

Exact expectations come from cms_vectors.ModelSketch (checked against the recorded vectors).
"""

import random
import time

import pytest

from bf_vectors import key_hash_slot, run_commands
from bp_helpers import RawConn, encode_command as cmd, scan_all, wait_until
from cms_vectors import (COPY_REFUSED, CROSSSLOT, KEY_MISSING, WRONGTYPE, ModelSketch,
                         internal_keys_of, part_keys_of, read_sketch)
from test_bf_concurrency import run_threads
from test_bf_keys import assert_keys_expire_with, pexpiretime

PART_BYTES = 64
MODES = {"default": (), "parts64": ("--bf-max-shard-bytes", str(PART_BYTES))}
# Relative expiries may reach the internal keys a moment after the name (as for filters).
RELATIVE_TOLERANCE_MS = 100
OK = b"+OK\r\n"


def as_bytes(name):
    return name.encode() if isinstance(name, str) else name


def make_sketch(conn, name, width=40, depth=4, n_items=60, seed=1, batch=10):
    """Creates `name` (width x depth) and increments n_items items by seeded amounts, checking
    every reply against the model. Returns (model, items)."""
    rng = random.Random(seed)
    model = ModelSketch(width, depth)
    assert run_commands(conn, [("CMS.INITBYDIM", name, str(width), str(depth))]) == [OK]
    items = [b"%s:item:%d" % (as_bytes(name), i) for i in range(n_items)]
    for i in range(0, n_items, batch):
        pairs = [(it, rng.randint(1, 1000)) for it in items[i:i + batch]]
        assert run_commands(conn, [incrby_args(name, pairs)]) == [model.incrby_reply(pairs)], \
            f"INCRBY {name}"
    return model, items


def assert_sketch_is(conn, name, model, items):
    """`name` answers QUERY and INFO through `conn` exactly as `model`."""
    assert run_commands(conn, [["CMS.QUERY", name, *items], ["CMS.INFO", name]]) == \
        [model.query_reply(items), model.info_reply()], f"sketch {name!r}"


def assert_upstream_is(direct, name, model):
    """The cells and count bloomproxy keeps upstream for `name` are the model's."""
    got = read_sketch(direct, name)
    assert (got["width"], got["depth"], got["count"]) == (model.width, model.depth, model.count)
    assert got["cells"] == model.cells, f"{name!r}: upstream cells differ from the model"
    return got


def upstream_internal(direct, name):
    return internal_keys_of(as_bytes(name), set(direct.keys("*")))


@pytest.fixture(params=sorted(MODES))
def cmsp(request, proxy):
    return proxy(*MODES[request.param])


# ---------------------------------------------------------------------------------------------
# TYPE, COPY, DEL, UNLINK


def test_type_and_copy(bp, redis_instance):
    with bp.raw() as c:
        model, items = make_sketch(c, "ty:s")
        assert c.command("SET", "ty:plain", "v") == b"OK"
        # Redis looks at the destination first: an existing one without REPLACE answers 0.
        assert run_commands(c, [("TYPE", "ty:s"), ("COPY", "ty:s", "ty:copy"),
                                ("COPY", "ty:s", "ty:plain", "REPLACE"),
                                ("COPY", "ty:s", "ty:plain"),
                                ("EXISTS", "ty:copy"), ("GET", "ty:plain")]) == \
            [b"+CMSk-TYPE\r\n", COPY_REFUSED, COPY_REFUSED, b":0\r\n", b":0\r\n",
             b"$1\r\nv\r\n"]
        assert_sketch_is(c, "ty:s", model, items)
    direct = redis_instance.client()
    assert set(direct.keys("*")) == {b"ty:s", b"ty:plain"} | set(upstream_internal(direct, "ty:s"))
    assert_upstream_is(direct, "ty:s", model)


def test_del_and_unlink_remove_every_key(cmsp, redis_instance):
    direct = redis_instance.client()
    with cmsp.raw() as c:
        made = {n: make_sketch(c, n, seed=i) for i, n in enumerate(["dl:a", "dl:b", "dl:c"])}
        assert c.command("SET", "dl:p", "v") == b"OK"
        for name, (model, _) in made.items():
            assert len(upstream_internal(direct, name)) >= 2, name  # parts and marker
            assert_upstream_is(direct, name, model)

        assert run_commands(c, [("DEL", "dl:a")]) == [b":1\r\n"]
        assert not upstream_internal(direct, "dl:a") and not direct.exists("dl:a")
        assert_sketch_is(c, "dl:b", *made["dl:b"])

        assert run_commands(c, [("UNLINK", "dl:b", "dl:p", "dl:missing")]) == [b":2\r\n"]
        assert not upstream_internal(direct, "dl:b")
        assert set(direct.keys("*")) == {b"dl:c"} | set(upstream_internal(direct, "dl:c"))

        assert run_commands(c, [("DEL", "dl:c", "dl:a"), ("CMS.QUERY", "dl:a", "x"),
                                ("CMS.INFO", "dl:c"), ("TYPE", "dl:c")]) == \
            [b":1\r\n", KEY_MISSING, KEY_MISSING, b"+none\r\n"]
        assert direct.keys("*") == []
        # The name is free again: a new sketch of other dimensions starts from zero.
        assert run_commands(c, [("CMS.INITBYDIM", "dl:a", "7", "2"),
                                ("CMS.QUERY", "dl:a", made["dl:a"][1][0]),
                                ("CMS.INFO", "dl:a")]) == \
            [OK, b"*1\r\n:0\r\n", ModelSketch(7, 2).info_reply()]
    assert_upstream_is(direct, "dl:a", ModelSketch(7, 2))


# ---------------------------------------------------------------------------------------------
# EXPIRE family, TTL, PERSIST


def test_expire_family_reaches_every_internal_key(cmsp, redis_instance):
    direct = redis_instance.client()
    with cmsp.raw() as c:
        model, items = make_sketch(c, "ex:s")
        internal = upstream_internal(direct, "ex:s")
        assert run_commands(c, [("EXPIRE", "ex:s", "1000")]) == [b":1\r\n"]
        assert 999 <= c.command("TTL", "ex:s") <= 1000
        assert_keys_expire_with(direct, "ex:s", internal, RELATIVE_TOLERANCE_MS)

        assert run_commands(c, [("PEXPIRE", "ex:s", "500000")]) == [b":1\r\n"]
        assert 0 < c.command("PTTL", "ex:s") <= 500000
        assert_keys_expire_with(direct, "ex:s", internal, RELATIVE_TOLERANCE_MS)

        at = int(time.time()) + 3600
        assert run_commands(c, [("EXPIREAT", "ex:s", str(at))]) == [b":1\r\n"]
        assert assert_keys_expire_with(direct, "ex:s", internal) == at * 1000
        # Writing the sketch keeps its expiry on every key (BITFIELD keeps a key's TTL).
        model.incrby(b"late", 5)
        assert run_commands(c, [("CMS.INCRBY", "ex:s", "late", "5")]) == [b"*1\r\n:%d\r\n"
                                                                          % model.query(b"late")]
        assert assert_keys_expire_with(direct, "ex:s", internal) == at * 1000

        assert run_commands(c, [("PERSIST", "ex:s"), ("TTL", "ex:s"), ("PERSIST", "ex:s")]) == \
            [b":1\r\n", b":-1\r\n", b":0\r\n"]
        assert assert_keys_expire_with(direct, "ex:s", internal) == -1
        assert_sketch_is(c, "ex:s", model, items + [b"late"])

        # A sketch that expires leaves nothing behind.
        assert run_commands(c, [("PEXPIRE", "ex:s", "30")]) == [b":1\r\n"]
        wait_until(lambda: c.command("EXISTS", "ex:s") == 0, 10, what="ex:s to expire")
        assert run_commands(c, [("CMS.QUERY", "ex:s", "late")]) == [KEY_MISSING]
    wait_until(lambda: direct.exists(*internal) == 0, 10, what="internal keys to expire")
    assert direct.keys("*") == []


# ---------------------------------------------------------------------------------------------
# RENAME, RENAMENX


def test_rename_keeps_counts_and_ttl(cmsp, redis_instance):
    direct = redis_instance.client()
    with cmsp.raw() as c:
        model, items = make_sketch(c, "rn:a")
        other, other_items = make_sketch(c, "rn:other", width=13, depth=3, seed=7)
        assert run_commands(c, [("EXPIRE", "rn:a", "5000")]) == [b":1\r\n"]
        when = pexpiretime(direct, "rn:a")

        assert run_commands(c, [("RENAME", "rn:a", "rn:b"), ("EXISTS", "rn:a"),
                                ("TYPE", "rn:b")]) == [OK, b":0\r\n", b"+CMSk-TYPE\r\n"]
        assert not upstream_internal(direct, "rn:a")
        assert 4990 <= c.command("TTL", "rn:b") <= 5000
        assert assert_keys_expire_with(direct, "rn:b", upstream_internal(direct, "rn:b")) == when
        assert_sketch_is(c, "rn:b", model, items)
        assert_upstream_is(direct, "rn:b", model)

        # RENAMENX onto an existing sketch changes nothing; onto a free name it moves.
        assert run_commands(c, [("RENAMENX", "rn:b", "rn:other")]) == [b":0\r\n"]
        assert_sketch_is(c, "rn:b", model, items)
        assert_sketch_is(c, "rn:other", other, other_items)
        assert run_commands(c, [("RENAMENX", "rn:b", "rn:c")]) == [b":1\r\n"]
        assert not upstream_internal(direct, "rn:b")
        assert assert_keys_expire_with(direct, "rn:c", upstream_internal(direct, "rn:c")) == when

        # RENAME onto an existing sketch replaces it whole: none of its old keys is left.
        assert run_commands(c, [("RENAME", "rn:c", "rn:other"), ("RENAME", "rn:other",
                                                                 "rn:other")]) == [OK, OK]
        assert_sketch_is(c, "rn:other", model, items)
        assert_upstream_is(direct, "rn:other", model)
        assert assert_keys_expire_with(direct, "rn:other",
                                       upstream_internal(direct, "rn:other")) == when
        # ... and onto a plain value.
        assert c.command("SET", "rn:plain", "v") == b"OK"
        assert run_commands(c, [("RENAME", "rn:other", "rn:plain"), ("TYPE", "rn:plain")]) == \
            [OK, b"+CMSk-TYPE\r\n"]
        assert_sketch_is(c, "rn:plain", model, items)
    assert set(direct.keys("*")) == {b"rn:plain"} | set(upstream_internal(direct, "rn:plain"))
    assert_upstream_is(direct, "rn:plain", model)


# ---------------------------------------------------------------------------------------------
# KEYS and SCAN


def test_keys_and_scan_hide_internal_keys(cmsp, redis_instance):
    names = {b"ks:a", b"ks:b", b"{ks}c", b"ks:filter", b"ks:plain", b"ks:hash"}
    with cmsp.raw() as c:
        for i, n in enumerate([b"ks:a", b"ks:b", b"{ks}c"]):
            make_sketch(c, n, seed=i)
        assert run_commands(c, [("BF.ADD", "ks:filter", "x"), ("SET", "ks:plain", "v"),
                                ("HSET", "ks:hash", "f", "v")]) == [b":1\r\n", OK, b":1\r\n"]
        upstream = set(redis_instance.client().keys("*"))
        internal = upstream - names
        assert any(part_keys_of(n, upstream) for n in names) and len(internal) > 6, upstream
        assert set(c.command("KEYS", "*")) == names
        assert set(c.command("KEYS", "ks:*")) == names - {b"{ks}c"}
        assert c.command("KEYS", "*:cms:*") == []
        for args in [(), ("COUNT", "3"), ("COUNT", "1000"), ("MATCH", "*c*")]:
            got = scan_all(c, *args)
            want = {n for n in names if b"c" in n} if args[:1] == ("MATCH",) else names
            assert set(got) == want, (args, got)
            assert not set(got) & internal, (args, got)


# ---------------------------------------------------------------------------------------------
# Other types


def test_sketches_and_other_types(bp, redis_instance):
    with bp.raw() as c:
        model, items = make_sketch(c, "ot:s", width=10, depth=3)
        assert run_commands(c, [("BF.ADD", "ot:f", "a"), ("SET", "ot:str", "v"),
                                ("HSET", "ot:hash", "f", "v")]) == [b":1\r\n", OK, b":1\r\n"]
        assert run_commands(c, [("BF.ADD", "ot:s", "x"), ("BF.MADD", "ot:s", "x", "y"),
                                ("BF.EXISTS", "ot:s", "x")]) == [WRONGTYPE, WRONGTYPE, b":0\r\n"]
        for other in ["ot:f", "ot:str", "ot:hash"]:
            got = run_commands(c, [("CMS.INCRBY", other, "a", "1"), ("CMS.QUERY", other, "a"),
                                   ("CMS.INFO", other), ("CMS.MERGE", other, "1", "ot:s"),
                                   ("CMS.MERGE", "ot:s", "1", other),
                                   ("CMS.INITBYDIM", other, "10", "3"),
                                   ("CMS.INITBYPROB", other, "0.1", "0.1")])
            assert got == [WRONGTYPE] * 5 + [b"-CMS: key already exists\r\n"] * 2, (other, got)
        assert run_commands(c, [("BF.EXISTS", "ot:f", "a"), ("GET", "ot:str"),
                                ("HGETALL", "ot:hash")]) == \
            [b":1\r\n", b"$1\r\nv\r\n", b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n"]
        assert_sketch_is(c, "ot:s", model, items)
    assert_upstream_is(redis_instance.client(), "ot:s", model)


def test_a_hash_shaped_like_a_sketch_stays_a_hash(bp, redis_instance):
    """A user's hash with the fields of a sketch's metadata but no marker is a plain hash: TYPE
    says so and CMS.* answers WRONGTYPE, writing nothing."""
    fields = ("cms", "1", "id", "0123456789abcdef", "width", "10", "depth", "3", "part", "30")
    with bp.raw() as c:
        assert run_commands(c, [("HSET", "ot:fake", *fields), ("TYPE", "ot:fake")]) == \
            [b":5\r\n", b"+hash\r\n"]
        assert run_commands(c, [("CMS.INCRBY", "ot:fake", "a", "1"), ("CMS.QUERY", "ot:fake", "a"),
                                ("CMS.INFO", "ot:fake")]) == [WRONGTYPE] * 3
    assert redis_instance.client().keys("*") == [b"ot:fake"]


# ---------------------------------------------------------------------------------------------
# cms-mode forward


FORWARDED = [
    ("CMS.INITBYDIM", "fw:s", "10", "2"),
    ("CMS.INITBYPROB", "fw:s", "0.1", "0.1"),
    ("CMS.INCRBY", "fw:s", "a", "1"),
    ("CMS.QUERY", "fw:s", "a"),
    ("CMS.MERGE", "fw:s", "1", "fw:t"),
    ("CMS.INFO", "fw:s"),
    ("cms.info",),
]


def test_forward_mode_passes_cms_to_the_upstream(proxy, redis_instance):
    """With cms-mode forward the upstream answers CMS.*: a plain redis-server's unknown-command
    error, byte for byte, and nothing written. BF.* is still emulated (bf-mode is separate)."""
    p = proxy("--cms-mode", "forward")
    with RawConn(redis_instance.port) as direct:
        want = run_commands(direct, FORWARDED)
    assert want[0] == (b"-ERR unknown command 'CMS.INITBYDIM', with args beginning with: "
                       b"'fw:s' '10' '2' \r\n")
    with p.raw() as c:
        assert run_commands(c, FORWARDED) == want
        assert run_commands(c, [("BF.ADD", "fw:f", "a"), ("TYPE", "fw:f")]) == \
            [b":1\r\n", b"+MBbloom--\r\n"]
    assert not {b"fw:s", b"fw:t"} & set(redis_instance.client().keys("*"))
    # The default mode emulates.
    with proxy().raw() as c:
        assert run_commands(c, [FORWARDED[0]]) == [OK]


# ---------------------------------------------------------------------------------------------
# Redis Cluster: MERGE within one slot only


def test_merge_on_a_cluster_needs_one_slot(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    a = "mc:a"
    b = next(f"mc:b{i}" for i in range(1000) if key_hash_slot(f"mc:b{i}") != key_hash_slot(a))
    same = next(f"mc:s{i}" for i in range(100000) if key_hash_slot(f"mc:s{i}") == key_hash_slot(a))
    with cluster_proxy().raw() as c:
        model_a, items = make_sketch(c, a, width=20, depth=3)
        make_sketch(c, b, width=20, depth=3, n_items=0)
        make_sketch(c, same, width=20, depth=3, n_items=0)
        assert run_commands(c, [("CMS.MERGE", b, "1", a), ("CMS.MERGE", a, "2", a, b),
                                ("CMS.MERGE", b, "1", a, "WEIGHTS", "2"),
                                ("CMS.MERGE", same, "2", a, b)]) == [CROSSSLOT] * 4
        assert_sketch_is(c, b, ModelSketch(20, 3), items)
        assert_sketch_is(c, a, model_a, items)
        # Tagged names share a slot: merged, wherever the tag's slot is served.
        tagged = {}
        for i, tag in enumerate(["{mc1}", "{mc2}", "{mc3}"]):
            src, dst = tag + "src", tag + "dst"
            tagged[src] = make_sketch(c, src, width=20, depth=3, seed=10 + i)
            make_sketch(c, dst, width=20, depth=3, n_items=0)
            want = ModelSketch(20, 3)
            want.merge_from([tagged[src][0], tagged[src][0]], [3, -1])
            assert run_commands(c, [("CMS.MERGE", dst, "2", src, src, "WEIGHTS", "3", "-1"),
                                    ("CMS.MERGE", same, "1", a)]) == [OK, OK]
            assert_sketch_is(c, dst, want, tagged[src][1])
        assert_sketch_is(c, same, model_a, items)
    assert len({redis_cluster.node_for_key(t).port for t in tagged}) >= 2


# ---------------------------------------------------------------------------------------------
# A sketch over many parts


def incrby_args(name, pairs):
    return ["CMS.INCRBY", name] + [a for it, v in pairs for a in (it, str(v))]


def incrby_command(name, pairs):
    return cmd(*incrby_args(name, pairs))


def test_sketch_over_many_parts_counts_exactly(proxy, redis_instance):
    """150x7 cells in parts of at most 64 bytes: pipelined increments (small, large, saturating,
    a count past 2^63 - 1), queries, INFO and MERGE all exactly as RedisBloom."""
    p = proxy("--bf-max-shard-bytes", str(PART_BYTES))
    direct = redis_instance.client()
    rng = random.Random(12)
    width, depth = 150, 7
    items = [b"mp:%d" % i for i in range(300)] + [b"", b"\x00\xff", b"x" * 300]
    models = {n: ModelSketch(width, depth) for n in ("mp:a", "mp:b", "mp:c", "mp:dst")}
    with p.raw(timeout=30) as c:
        assert run_commands(c, [("CMS.INITBYDIM", n, str(width), str(depth))
                                for n in models]) == [OK] * len(models)
        payload, want = [], []
        for _ in range(80):
            name = rng.choice(["mp:a", "mp:b", "mp:c"])
            pairs = [(rng.choice(items), rng.choice([rng.randint(0, 50), rng.randint(1000, 99999)]))
                     for _ in range(rng.randint(1, 12))]
            payload.append(incrby_command(name, pairs))
            want.append(models[name].incrby_reply(pairs))
        # The count passes 2^63 - 1: INFO shows it negative, and MERGE refuses it below.
        saturating = [(b"sat:1", 4294967000), (b"sat:1", 1000), (b"sat:2", 1 << 32),
                      (b"sat:3", (1 << 63) - 1), (b"sat:3", 0)]
        payload.append(incrby_command("mp:a", saturating))
        want.append(models["mp:a"].incrby_reply(saturating))
        c.send(b"".join(payload))
        got = [c.read_reply_raw() for _ in payload]
        bad = [i for i in range(len(want)) if got[i] != want[i]]
        assert not bad, (f"{len(bad)} INCRBY replies differ, e.g. #{bad[0]}: "
                         f"{got[bad[0]][:200]!r} instead of {want[bad[0]][:200]!r}")
        assert b"-CMS: INCRBY overflow" in want[-1] and models["mp:a"].count >= 1 << 63
        probes = items + [b"sat:1", b"sat:2", b"sat:3", b"never"]
        for name, model in models.items():
            assert_sketch_is(c, name, model, probes)

        # MERGE: the count of mp:a does not fit a long long (overflow), the others merge.
        expected = models["mp:dst"]
        expected.merge_from([models["mp:b"], models["mp:c"]], [2, 3])
        assert run_commands(c, [("CMS.MERGE", "mp:dst", "2", "mp:a", "mp:b"),
                                ("CMS.MERGE", "mp:dst", "2", "mp:b", "mp:c", "WEIGHTS", "2", "3")
                                ]) == [b"-CMS: MERGE overflow\r\n", OK]
        assert_sketch_is(c, "mp:dst", expected, probes)
    for name, model in models.items():
        parts = assert_upstream_is(direct, name, model)["parts"]
        assert len(parts) > 1, f"{name}: one part of {direct.strlen(parts[0])} bytes " \
                               f"with --bf-max-shard-bytes {PART_BYTES}"
        sizes = {direct.strlen(k) for k in parts}
        assert max(sizes) <= PART_BYTES, f"{name}: parts of {sorted(sizes)} bytes"


def test_key_commands_on_a_sketch_of_thousands_of_parts(proxy, redis_instance):
    """100000x1 cells in 64-byte parts: 8334 parts, more than a Lua script can unpack() at once
    (about 8000 values); the key commands still act on every one of them."""
    p = proxy("--bf-max-shard-bytes", str(PART_BYTES))
    direct = redis_instance.client()
    model = ModelSketch(100000, 1)
    with p.raw(timeout=30) as c:
        assert run_commands(c, [("CMS.INITBYDIM", "tp:a", "100000", "1")]) == [OK]
        assert len(part_keys_of(b"tp:a", set(direct.keys("*")))) == 8334
        pairs = [(b"tp:%d" % i, i + 1) for i in range(50)]
        assert run_commands(c, [incrby_args("tp:a", pairs)]) == [model.incrby_reply(pairs)]
        assert run_commands(c, [("EXPIRE", "tp:a", "1000"), ("RENAME", "tp:a", "tp:b")]) == \
            [b":1\r\n", OK]
        internal = upstream_internal(direct, "tp:b")
        assert len(internal) == 8335 and not upstream_internal(direct, "tp:a")
        assert_keys_expire_with(direct, "tp:b", internal, RELATIVE_TOLERANCE_MS)
        assert_sketch_is(c, "tp:b", model, [it for it, _ in pairs])
        assert run_commands(c, [("PERSIST", "tp:b"), ("DEL", "tp:b")]) == [b":1\r\n", b":1\r\n"]
        assert direct.dbsize() == 0
        assert run_commands(c, [("CMS.INITBYDIM", "tp:c", "100000", "1"), ("UNLINK", "tp:c")]) \
            == [OK, b":1\r\n"]
        assert direct.dbsize() == 0


# ---------------------------------------------------------------------------------------------
# Several proxies at once


def test_a_sketch_replaced_through_another_proxy(proxy, redis_instance):
    """Proxy A knows a sketch (its metadata cached); proxy B deletes it, re-creates it with other
    dimensions, overwrites it with a string, deletes it. Each next command through A answers for
    what the name holds now, and a write that reached the old parts leaves nothing behind."""
    direct = redis_instance.client()
    a, b = proxy(), proxy(*MODES["parts64"])
    with a.raw() as ca, b.raw() as cb:
        old, items = make_sketch(ca, "rp:s", width=10, depth=2)
        assert_sketch_is(ca, "rp:s", old, items)
        assert run_commands(cb, [("DEL", "rp:s"), ("CMS.INITBYDIM", "rp:s", "20", "3")]) == \
            [b":1\r\n", OK]
        new = ModelSketch(20, 3)
        assert run_commands(ca, [("CMS.INCRBY", "rp:s", items[0], "5")]) == \
            [new.incrby_reply([(items[0], 5)])]
        assert_sketch_is(ca, "rp:s", new, items)
        assert_upstream_is(direct, "rp:s", new)
        assert set(direct.keys("*")) == {b"rp:s"} | set(upstream_internal(direct, "rp:s"))

        assert run_commands(cb, [("DEL", "rp:s"), ("SET", "rp:s", "plain")]) == [b":1\r\n", OK]
        assert run_commands(ca, [("CMS.INCRBY", "rp:s", "x", "1"), ("CMS.QUERY", "rp:s", "x"),
                                 ("CMS.INFO", "rp:s"), ("TYPE", "rp:s")]) == \
            [WRONGTYPE] * 3 + [b"+string\r\n"]
        assert direct.keys("*") == [b"rp:s"]

        assert run_commands(cb, [("DEL", "rp:s")]) == [b":1\r\n"]
        assert run_commands(ca, [("CMS.INCRBY", "rp:s", "x", "1"), ("CMS.QUERY", "rp:s", "x"),
                                 ("CMS.MERGE", "rp:s", "1", "rp:s")]) == [KEY_MISSING] * 3
        assert direct.keys("*") == []


def writer_plan(seed, names, pool, rounds=40, per_round=8):
    """Pipelines of CMS.INCRBY commands: [[(name, [(item, v)])]]; one in ten increments is big."""
    rng = random.Random(seed)
    plan = []
    for _ in range(rounds):
        batch = []
        for _ in range(per_round):
            pairs = [(rng.choice(pool), rng.randint(100000, 1000000) if rng.random() < 0.1
                      else rng.randint(1, 500)) for _ in range(rng.randint(2, 6))]
            batch.append((rng.choice(names), pairs))
        plan.append(batch)
    return plan


def row_sums_equal_count(snap, label):
    """Without saturation every increment adds v to one cell of each row: each row sums to the
    count. A merge that read its sources while an increment was half applied breaks this."""
    w = snap["width"]
    sums = [sum(snap["cells"][r * w:(r + 1) * w]) for r in range(snap["depth"])]
    assert sums == [snap["count"]] * snap["depth"], f"{label}: row sums {sums}, " \
                                                   f"count {snap['count']}"


def test_three_proxies_increment_while_a_client_merges(proxy, redis_instance):
    """Three proxies (one with 64-byte parts) pipeline CMS.INCRBY into the same two sketches
    (overlapping items, several per call, some big increments) while a fourth client merges the
    two into a third sketch again and again. At the end: each INFO count is the exact total,
    every QUERY >= the item's true count and equal to a model that received every increment,
    and every merge was a consistent snapshot."""
    direct = redis_instance.client()
    proxies = [proxy(), proxy(), proxy(*MODES["parts64"])]
    names, width, depth = ["cc:s1", "cc:s2"], 200, 4
    pool = [b"cc:item:%d" % i for i in range(80)]
    plans = [writer_plan(100 + t, names, pool) for t in range(3)]
    models = {n: ModelSketch(width, depth) for n in names}
    truth = {n: dict.fromkeys(pool, 0) for n in names}
    for plan in plans:
        for batch in plan:
            for name, pairs in batch:
                for item, v in pairs:
                    models[name].incrby(item, v)
                    truth[name][item] += v
    # No cell can saturate: each is at most its sketch's total.
    assert all(m.count < 0xFFFFFFFF for m in models.values())
    with proxies[2].raw() as c:  # created with many parts
        assert run_commands(c, [("CMS.INITBYDIM", n, str(width), str(depth))
                                for n in names + ["cc:dst"]]) == [OK] * 3
    writers_left = [3]
    snapshots = []

    def writer(tid):
        own = {n: dict.fromkeys(pool, 0) for n in names}
        try:
            with proxies[tid].raw(timeout=30) as c:
                for batch in plans[tid]:
                    c.send(b"".join(incrby_command(n, pairs) for n, pairs in batch))
                    for name, pairs in batch:
                        got = c.read_reply()
                        assert isinstance(got, list) and len(got) == len(pairs), got
                        for (item, v), low in zip(pairs, got):
                            own[name][item] += v
                            assert low >= own[name][item], (name, item, low, own[name][item])
        finally:
            writers_left[0] -= 1

    def merger():
        with proxies[1].raw(timeout=30) as c:
            while True:
                last = writers_left[0] == 0
                assert c.command("CMS.MERGE", "cc:dst", "2", *names) == b"OK"
                snap = read_sketch(direct, "cc:dst")
                row_sums_equal_count(snap, f"merge #{len(snapshots)}")
                snapshots.append(snap["count"])
                if last:
                    return

    run_threads(lambda tid: writer(tid) if tid < 3 else merger(), 4, timeout=120)
    total = sum(m.count for m in models.values())
    assert snapshots[-1] == total and snapshots == sorted(snapshots), snapshots[-10:]
    for p in proxies:
        with p.raw(timeout=30) as c:
            for name, model in models.items():
                assert_sketch_is(c, name, model, pool)
                got = c.command("CMS.QUERY", name, *pool)
                under = [(it, g, truth[name][it]) for it, g in zip(pool, got)
                         if g < truth[name][it]]
                assert not under, f"proxy {p.port} {name}: below the true count: {under[:5]}"
    for name, model in models.items():
        assert_upstream_is(direct, name, model)
    expected = ModelSketch(width, depth)
    expected.merge_from([models[n] for n in names], [1, 2])
    with proxies[0].raw() as c:
        assert run_commands(c, [("CMS.MERGE", "cc:dst", "2", *names, "WEIGHTS", "1", "2")]) == [OK]
        assert_sketch_is(c, "cc:dst", expected, pool)
    assert_upstream_is(direct, "cc:dst", expected)


# ---------------------------------------------------------------------------------------------
# Behind a sharding proxy: MERGE under one hash tag only

SHARDING_MERGE_REFUSED = (b"-ERR bloomproxy: behind a sharding proxy CMS.MERGE needs the "
                          b"destination and every source under one {hash tag}, so that they are "
                          b"on one server\r\n")


def test_merge_behind_a_sharding_proxy_needs_one_tag(twemproxy, sharding_proxy):
    twemproxy.flushall()
    with sharding_proxy().raw() as c:
        model, items = make_sketch(c, "ms:a", width=20, depth=3)
        make_sketch(c, "ms:b", width=20, depth=3, n_items=0)
        tagged, tagged_items = make_sketch(c, "{ms}a", width=20, depth=3, seed=5)
        make_sketch(c, "{ms}b", width=20, depth=3, n_items=0)
        assert run_commands(c, [("CMS.MERGE", "ms:b", "1", "ms:a"),
                                ("CMS.MERGE", "{ms}b", "2", "{ms}a", "ms:a")]) == \
            [SHARDING_MERGE_REFUSED] * 2
        assert_sketch_is(c, "ms:b", ModelSketch(20, 3), items)
        want = ModelSketch(20, 3)
        want.merge_from([tagged, tagged], [1, 4])
        assert run_commands(c, [("CMS.MERGE", "{ms}b", "2", "{ms}a", "{ms}a", "WEIGHTS", "1",
                                 "4")]) == [OK]
        assert_sketch_is(c, "{ms}b", want, tagged_items)
        assert_sketch_is(c, "ms:a", model, items)
