"""TOPK.* through the client libraries applications use, unchanged, against bloomproxy:

- redis-py 4.3's RedisBloom API (`r.topk()`): reserve (and TOPK.RESERVE's defaults), add,
  incrby, query, count, list with and without counts, info (TopKInfo), the errors it raises
  (redis-py drops a leading "ERR "), a pipeline and a transaction (transaction=True) with errors
  in place, and redis-py's RedisCluster through a proxy in front of a Redis Cluster;
- node-redis v4 with @redis/bloom (tests/integration/node/topk_client.js, run with Node.js; its
  packages are installed by scripts/deps.sh with `npm ci`): reserve with options, add, incrBy,
  query, count, list, listWithCount, info, a MULTI, and the errors, printed as JSON.

Expected values come from topk_vectors.TopK (the project's model of RedisBloom's Top-K,
checked against every recorded reply by test_topk_vectors.py), never from the proxy. The model
is exact only where RedisBloom's replies do not depend on its random draws (spec,
"Randomness"): every sketch here has decay 1 (the decrement loop in closed form: collisions,
takeovers and stale heap counts are all exact) or a decay below 1 with its items checked to sit
in pairwise distinct buckets of every row (collision_free, asserted before use); the model
raises NotExact otherwise. What redis-py returns is the model's reply run through redis-py's own
response callback (parse_to_list), so the client's parsing is the same as against RedisBloom.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster as ClusterClient
from redis.commands.helpers import parse_to_list

from bp_cluster import keys_in_distinct_slots
from bp_helpers import HOST
from topk_vectors import TopK, collision_free, column, format_decay

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = shutil.which("node")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
INCREMENT = ("TopK: increment must be an integer greater or equal to 0" + " " * 28 +
             "and smaller or equal to 100,000")


def b(item):
    return item.encode() if isinstance(item, str) else item


def add_reply(model, items, increments=None):
    """TOPK.ADD / TOPK.INCRBY as redis-py returns it (parse_to_list of the expelled items)."""
    if increments is None:
        increments = [1] * len(items)
    return parse_to_list([model.add(b(i), n) for i, n in zip(items, increments)])


def list_reply(model, withcount=False):
    if not withcount:
        return parse_to_list([item for item, _ in model.list()])
    return parse_to_list([x for entry in model.list() for x in entry])


def query_reply(model, items):
    return [model.query(b(i)) for i in items]


def count_reply(model, items):
    return [model.count(b(i)) for i in items]


def topkinfo(info):
    return {name: getattr(info, name) for name in ("k", "width", "depth", "decay")}


def info_of(model):
    """TopKInfo's fields: integers, and the decay as the bulk string RedisBloom sends (%.17g)."""
    return {"k": model.k, "width": model.width, "depth": model.depth,
            "decay": format_decay(model.decay)}


def distinct_buckets(prefix, count, width, depth):
    """`count` items `prefix-N` (N rising, skipping any that would share a bucket with one
    already chosen), asserted to sit in pairwise distinct buckets of every row: at a decay below
    1 no step then meets a foreign fingerprint, so no random number is ever drawn (the spec's
    condition for exact replies)."""
    items, used, n = [], set(), 0
    while len(items) < count:
        item = f"{prefix}-{n}"
        n += 1
        cells = {(row, column(b(item), row, width)) for row in range(depth)}
        if not cells & used:
            items.append(item)
            used |= cells
    assert collision_free([b(i) for i in items], width, depth)
    return items


# ---------------------------------------------------------------------------------------------
# redis-py


def test_reserve_and_info(bp):
    """RESERVE with redis-py's five arguments and with the key and k only (RedisBloom's
    defaults: width 8, depth 7, decay 0.9); INFO's fields, the decay printed with %.17g."""
    r = bp.client()
    tk = r.topk()
    assert tk.reserve("rp:a", 5, 50, 4, 0.9) is True
    assert topkinfo(tk.info("rp:a")) == info_of(TopK(5, 50, 4, 0.9))
    assert topkinfo(tk.info("rp:a"))["decay"] == b"0.90000000000000002"
    assert r.execute_command("TOPK.RESERVE", "rp:default", 3) is True  # redis-py's callback
    assert topkinfo(tk.info("rp:default")) == \
        {"k": 3, "width": 8, "depth": 7, "decay": b"0.90000000000000002"}
    for i, (decay, shown) in enumerate([(1, b"1"), (0.5, b"0.5"), (0.7, b"0.69999999999999996"),
                                        (0.99, b"0.98999999999999999"),
                                        (0.123456789, b"0.123456789"), (1e-300, b"1e-300")]):
        assert tk.reserve(f"rp:d{i}", 2, 10, 3, decay) is True
        assert tk.info(f"rp:d{i}").decay == shown
    assert r.type("rp:a") == b"TopK-TYPE"
    assert tk.list("rp:a") == [] and tk.list("rp:a", withcount=True) == []
    assert tk.query("rp:a", "x", "") == [0, 0] and tk.count("rp:a", "x") == [0]


def test_redis_py_own_topk_sequence(bp):
    """The sequence redis-py's own test suite runs against RedisBloom (tests/test_bloom.py,
    test_topk: width 50, decay 0.9, items that never meet a foreign fingerprint), with the
    replies it expects there: expelled items, QUERY, COUNT, LIST with and without counts."""
    tk = bp.client(decode_responses=True).topk()
    stream = ["A", "B", "C", "D", "E", "A", "A", "B", "C", "G", "D", "B", "D", "A", "E", "E"]
    assert tk.reserve("rpy:topk", 3, 50, 4, 0.9)
    assert tk.add("rpy:topk", *stream, 1) == [
        None, None, None, "A", "C", "D", None, None, "E", None, "B", "C", None, None, None, "D",
        None]
    letters = ["A", "B", "C", "D", "E", "F", "G"]
    assert tk.query("rpy:topk", *letters) == [1, 1, 0, 0, 1, 0, 0]
    assert tk.count("rpy:topk", *letters) == [4, 3, 2, 3, 3, 0, 1]
    assert tk.reserve("rpy:topklist", 3, 50, 3, 0.9)
    tk.add("rpy:topklist", *stream)
    assert tk.list("rpy:topklist") == ["A", "B", "E"]
    assert tk.list("rpy:topklist", withcount=True) == ["A", 4, "B", 3, "E", 3]


def test_add_incrby_query_count_list_decay_one(bp):
    """A narrow sketch at decay 1 (width 6, depth 3, k 4): items share buckets, take them over
    and leave stale heap counts; every reply, expelled items included, is the model's."""
    r = bp.client()
    tk = r.topk()
    model = TopK(4, 6, 3, 1.0)
    assert tk.reserve("rp:n", 4, 6, 3, 1) is True
    items = [f"item-{i}" for i in range(12)]
    assert any(column(b(x), 0, 6) == column(b(items[0]), 0, 6) for x in items[1:])
    expelled_seen = False
    for rnd in range(6):
        batch = items[rnd:] + items[:rnd] + items[:3]
        want = add_reply(model, batch)
        expelled_seen |= any(e is not None for e in want)
        assert tk.add("rp:n", *batch) == want, rnd
        pairs = [(items[(rnd * 5 + j) % 12], (rnd + 1) * (j + 2)) for j in range(4)]
        want = add_reply(model, [p[0] for p in pairs], [p[1] for p in pairs])
        assert tk.incrby("rp:n", [p[0] for p in pairs], [p[1] for p in pairs]) == want, rnd
        assert tk.list("rp:n") == list_reply(model), rnd
        assert tk.list("rp:n", withcount=True) == list_reply(model, True), rnd
        assert tk.query("rp:n", *items) == query_reply(model, items), rnd
        assert tk.count("rp:n", *items) == count_reply(model, items), rnd
    assert expelled_seen
    # INCRBY 0 and 100000, a repeated item in one call.
    want = add_reply(model, ["item-0", "big", "big"], [0, 100000, 100000])
    assert tk.incrby("rp:n", ["item-0", "big", "big"], [0, 100000, 100000]) == want
    assert tk.list("rp:n", withcount=True) == list_reply(model, True)
    assert list_reply(model, True)[0] == "big"
    assert tk.count("rp:n", "big", "item-0") == count_reply(model, ["big", "item-0"])
    assert topkinfo(tk.info("rp:n")) == info_of(model)


def test_collision_free_sketch_below_decay_one(bp):
    """Decay 0.9 on a wide sketch whose items are checked to sit in distinct buckets of every
    row: counts are the exact totals, the heap keeps the k largest, LIST sorts them."""
    r = bp.client()
    tk = r.topk()
    width, depth = 2000, 4
    items = distinct_buckets("wide", 40, width, depth)
    model = TopK(8, width, depth, 0.9)
    assert tk.reserve("rp:w", 8, width, depth, 0.9) is True
    for i, item in enumerate(items):
        n = (i * 37) % 101
        assert tk.incrby("rp:w", [item], [n]) == add_reply(model, [item], [n]), item
    batch = items[::3]
    assert tk.add("rp:w", *batch) == add_reply(model, batch)
    top = list_reply(model, True)
    assert len(top) == 16 and top[1] >= top[3] >= top[15] > 0
    assert tk.list("rp:w", withcount=True) == top
    assert tk.list("rp:w") == top[::2]
    assert tk.query("rp:w", *items) == query_reply(model, items)
    assert sum(tk.query("rp:w", *items)) == 8
    assert tk.count("rp:w", *items) == count_reply(model, items)
    # Every count is the item's exact total.
    assert tk.count("rp:w", items[4]) == [(4 * 37) % 101]


def test_binary_and_numeric_items(bp):
    """Items are binary-safe: QUERY/COUNT compare the full bytes, LIST and the expelled items
    stop at the first NUL; numeric-looking items come back as redis-py parses them (int)."""
    r = bp.client()
    tk = r.topk()
    model = TopK(2, 500, 3, 1.0)
    assert tk.reserve("rp:b", 2, 500, 3, 1) is True
    items = [b"a\x00b", b"a\x00c", b"\x00x", b"", b"12", b"x" * 3000]
    for i, item in enumerate(items):
        assert tk.incrby("rp:b", [item], [i + 1]) == add_reply(model, [item], [i + 1]), item
    assert tk.list("rp:b", withcount=True) == list_reply(model, True)
    assert list_reply(model, True)[0] == "x" * 3000
    assert tk.query("rp:b", *items) == query_reply(model, items)
    assert tk.count("rp:b", *items) == count_reply(model, items)
    assert tk.add("rp:b", b"12", b"12", b"12") == add_reply(model, [b"12"] * 3)
    assert tk.list("rp:b", withcount=True) == list_reply(model, True)
    assert 12 in tk.list("rp:b")


def test_errors(bp):
    """The errors redis-py raises (RedisBloom's messages, "ERR " dropped); INCRBY with a bad
    last increment is a list whose last element redis-py turns into None; nothing is created by
    a failed RESERVE or by a command on a missing key."""
    r = bp.client()
    tk = r.topk()
    assert tk.reserve("rp:e", 3, 20, 2, 1) is True
    assert r.set("rp:str", "v") is True
    cases = [
        (tk.reserve, ("rp:e", 3, 20, 2, 1), "TopK: key already exists"),
        (tk.reserve, ("rp:str", 3, 20, 2, 1), "TopK: key already exists"),
        (tk.reserve, ("rp:n", 0, 20, 2, 1), "TopK: invalid k"),
        (tk.reserve, ("rp:n", 4294967296, 20, 2, 1), "TopK: invalid k"),
        (tk.reserve, ("rp:n", 3, 0, 2, 1), "TopK: invalid width"),
        (tk.reserve, ("rp:n", 3, 20, -1, 1), "TopK: invalid depth"),
        (tk.reserve, ("rp:n", 3, 20, 2, 0), "TopK: invalid decay value. must be '<= 1' & '> 0'"),
        (tk.reserve, ("rp:n", 3, 20, 2, 1.5), "TopK: invalid decay value. must be '<= 1' & '> 0'"),
        (tk.reserve, ("rp:n", 3, 4294967295, 4294967295, 1),
         "Insufficient memory to create topk data structure"),
        (tk.add, ("rp:n", "x"), "TopK: key does not exist"),
        (tk.add, ("rp:str", "x"), WRONGTYPE),
        (tk.incrby, ("rp:n", ["x"], [1]), "TopK: key does not exist"),
        (tk.incrby, ("rp:str", ["x"], ["bad"]), WRONGTYPE),
        (tk.query, ("rp:n", "x"), "TopK: key does not exist"),
        (tk.count, ("rp:str", "x"), WRONGTYPE),
        (tk.list, ("rp:n",), "TopK: key does not exist"),
        (tk.list, ("rp:str", True), WRONGTYPE),
        (tk.info, ("rp:n",), "TopK: key does not exist"),
        (tk.info, ("rp:str",), WRONGTYPE),
    ]
    for fn, args, message in cases:
        with pytest.raises(redis.ResponseError) as exc:
            fn(*args)
        assert str(exc.value) == message, (fn.__name__, args)
    for args, message in [(("TOPK.ADD", "rp:e"), "wrong number of arguments for 'topk.add' "
                            "command"),
                          (("TOPK.RESERVE", "rp:n", 3, 20), "wrong number of arguments for "
                           "'topk.reserve' command"),
                          (("TOPK.INCRBY", "rp:e", "a", 1, "b"), "wrong number of arguments "
                           "for 'topk.incrby' command"),
                          (("TOPK.LIST", "rp:e", "WITHCOUNTS"), "WITHCOUNT keyword expected"),
                          (("TOPK.LIST", "rp:n", "bogus"), "WITHCOUNT keyword expected")]:
        with pytest.raises(redis.ResponseError) as exc:
            r.execute_command(*args)
        assert str(exc.value) == message, args
    model = TopK(3, 20, 2, 1.0)
    want = add_reply(model, ["a"], [5]) + [None]
    assert tk.incrby("rp:e", ["a", "b"], [5, 100001]) == want == [None, None]
    assert tk.list("rp:e", withcount=True) == list_reply(model, True) == ["a", 5]
    assert tk.query("rp:e", "b") == [0]
    # A bad increment as an element is a ResponseError in the raw reply.
    # A bad increment as an element is a ResponseError in the raw reply (a client without the
    # TOPK callbacks that r.topk() installs).
    plain = bp.client()
    raw = plain.execute_command("TOPK.INCRBY", "rp:e", "c", "-1")
    assert len(raw) == 1 and isinstance(raw[0], redis.ResponseError) and str(raw[0]) == INCREMENT
    assert r.exists("rp:n") == 0 and r.get("rp:str") == b"v"
    assert plain.execute_command("TOPK.LIST", "rp:e", "w") == [b"a", 5]


def pipeline_steps(ptk, pipe, prefix):
    """The same TOPK calls queued in a pipeline (errors among them), and what each must give."""
    k, s = f"{prefix}:t", f"{prefix}:str"
    model = TopK(3, 30, 2, 1.0)
    pipe.set(s, "v")
    ptk.reserve(k, 3, 30, 2, 1)
    ptk.add(k, "a", "b", "a")
    ptk.reserve(k, 3, 30, 2, 1)
    ptk.incrby(k, ["c", "d", "a"], [4, 2, 1])
    ptk.add(s, "x")
    ptk.reserve(f"{prefix}:bad", 3, 30, 2, 2)
    ptk.query(k, "a", "b", "zz")
    ptk.count(k, "a", "c")
    ptk.list(k)
    ptk.list(k, withcount=True)
    ptk.info(k)
    ptk.list(f"{prefix}:missing")
    want = [True, True, add_reply(model, ["a", "b", "a"]), "TopK: key already exists",
            add_reply(model, ["c", "d", "a"], [4, 2, 1]), WRONGTYPE,
            "TopK: invalid decay value. must be '<= 1' & '> 0'",
            query_reply(model, ["a", "b", "zz"]), count_reply(model, ["a", "c"]),
            list_reply(model), list_reply(model, True), info_of(model),
            "TopK: key does not exist"]
    return want


def shown(results):
    return [str(x) if isinstance(x, redis.ResponseError)
            else topkinfo(x) if hasattr(x, "decay") else x for x in results]


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_pipeline_and_transaction(bp, transaction):
    """A pipeline, and a MULTI/EXEC one, of TOPK calls with errors in place: each result as
    redis-py gives it outside a pipeline; raise_on_error raises the first error and leaves the
    connection usable."""
    r = bp.client()
    pipe = r.pipeline(transaction=transaction)
    want = pipeline_steps(pipe.topk(), pipe, f"rp:{int(transaction)}")
    assert shown(pipe.execute(raise_on_error=False)) == want
    pipe = r.pipeline(transaction=transaction)
    pipe.topk().add("rp:str2", "x")
    pipe.set("rp:str2", "v")
    pipe.topk().add("rp:str2", "x")
    with pytest.raises(redis.ResponseError, match=r"TopK: key does not exist$"):
        pipe.execute()
    assert r.get("rp:str2") == b"v"
    with pytest.raises(redis.ResponseError, match=r"^WRONGTYPE"):
        r.topk().query("rp:str2", "x")


def test_redis_py_cluster_client(redis_cluster, cluster_proxy):
    """redis-py's RedisCluster through a proxy in front of a Redis Cluster: six sketches in six
    slots (spread over the masters), each with its own model."""
    redis_cluster.flushall()
    p = cluster_proxy()
    rc = ClusterClient(host=HOST, port=p.port, socket_timeout=10)
    try:
        tk = rc.topk()
        keys = keys_in_distinct_slots("rptk", 6)
        assert len({redis_cluster.node_for_key(k).port for k in keys}) == 3
        for i, key in enumerate(keys):
            model = TopK(3 + i, 10 + i, 3, 1.0)
            assert tk.reserve(key, 3 + i, 10 + i, 3, 1) is True
            items = [f"{key}-{j}" for j in range(20)]
            assert tk.add(key, *items) == add_reply(model, items)
            incs = [(j * 7) % 13 for j in range(20)]
            assert tk.incrby(key, items, incs) == add_reply(model, items, incs)
            assert tk.list(key, withcount=True) == list_reply(model, True)
            assert tk.query(key, *items) == query_reply(model, items)
            assert tk.count(key, *items) == count_reply(model, items)
            assert topkinfo(tk.info(key)) == info_of(model)
        with pytest.raises(redis.ResponseError, match=r"^TopK: key already exists$"):
            tk.reserve(keys[0], 3, 10, 3, 1)
        with pytest.raises(redis.ResponseError, match=r"^TopK: key does not exist$"):
            tk.add("rptk:none", "x")
        assert rc.type(keys[2]) == b"TopK-TYPE"
        assert rc.delete(keys[2]) == 1
        assert rc.exists(keys[2]) == 0
    finally:
        rc.close()


# ---------------------------------------------------------------------------------------------
# node-redis

# The wide sketch's items (width 1000, depth 5, decay 0.9), given to topk_client.js.
NODE_WIDE = distinct_buckets("w", 10, 1000, 5)


def node_expected():
    """What topk_client.js must print, step by step: {"ok": value} or {"error": message}."""
    out = {}

    def ok(step, value):
        out[step] = {"ok": value}

    def err(step, message):
        out[step] = {"error": message}

    def expelled(model, items, incs=None):
        incs = incs or [1] * len(items)
        return [None if e is None else e.decode() for e in
                (model.add(b(i), n) for i, n in zip(items, incs))]

    def listed(model):
        return [i.decode() for i, _ in model.list()]

    def with_counts(model):
        return [{"item": i.decode(), "count": c} for i, c in model.list()]

    m = TopK(4, 7, 3, 1.0)
    ok("reserve", "OK")
    ok("info", {"k": 4, "width": 7, "depth": 3, "decay": 1})
    err("reserveAgain", "TopK: key already exists")
    err("reserveDecay", "TopK: invalid decay value. must be '<= 1' & '> 0'")
    ok("reserveDefault", "OK")
    ok("infoDefault", {"k": 2, "width": 8, "depth": 7, "decay": 0.9})
    items = [f"n{i}" for i in range(15)]
    ok("add", expelled(m, items))
    ok("addOne", expelled(m, ["n3"]))
    pairs = [("n1", 9), ("n4", 3), ("new", 12), ("n1", 0)]
    ok("incrBy", expelled(m, [p[0] for p in pairs], [p[1] for p in pairs]))
    ok("incrByOne", expelled(m, ["n7"], [5]))
    probes = items + ["new", "never"]
    ok("query", [m.query(b(i)) for i in probes])
    ok("count", [m.count(b(i)) for i in probes])
    ok("list", listed(m))
    ok("listWithCount", with_counts(m))
    ok("infoAfter", {"k": 4, "width": 7, "depth": 3, "decay": 1})

    w = TopK(3, 1000, 5, 0.9)
    wide = NODE_WIDE
    ok("wideReserve", "OK")
    ok("wideIncrBy", expelled(w, wide, [i + 1 for i in range(10)]))
    ok("wideListWithCount", with_counts(w))
    ok("wideCount", [w.count(b(i)) for i in wide])
    ok("wideInfo", {"k": 3, "width": 1000, "depth": 5, "decay": 0.9})

    t = TopK(2, 20, 2, 1.0)
    ok("multi", ["OK", expelled(t, ["x", "y", "x"]), [t.query(b"x"), t.query(b"z")],
                 [t.count(b"x")], with_counts(t)])
    err("multiFailed", "2 commands failed, see .replies and .errorIndexes for more information")
    out["multiFailed"]["replies"] = [expelled(t, ["z"]), "OK", {"error": WRONGTYPE},
                                     {"error": "TopK: key already exists"}, listed(t)]
    err("addMissing", "TopK: key does not exist")
    out["incrByBad"] = {"ok": expelled(t, ["q"], [1]) + [{"error": INCREMENT}]}
    err("listMissing", "TopK: key does not exist")
    err("infoWrongType", WRONGTYPE)
    ok("type", "TopK-TYPE")
    return out


@pytest.mark.skipif(NODE is None, reason="Node.js (node) is not installed; scripts/deps.sh "
                                         "installs it with the node-redis packages")
def test_node_redis_bloom_topk(bp):
    """node-redis 4.7 with @redis/bloom's topK commands (and a MULTI with errors in place):
    every step's result equals what the model gives."""
    assert (NODE_DIR / "node_modules" / "@redis" / "bloom").is_dir(), \
        "node-redis is not installed: run `npm ci --prefix tests/integration/node` " \
        "(scripts/deps.sh does)"
    res = subprocess.run([NODE, "topk_client.js", str(bp.port), "nd", json.dumps(NODE_WIDE)],
                         cwd=NODE_DIR,
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    got = json.loads(res.stdout)
    want = node_expected()
    assert list(got) == list(want), f"steps: {list(got)}"
    wrong = {step: (got[step], want[step]) for step in want if got[step] != want[step]}
    assert not wrong, "steps whose result differs (got, expected):\n" + \
        "\n".join(f"  {s}: {g} != {w}" for s, (g, w) in wrong.items())
