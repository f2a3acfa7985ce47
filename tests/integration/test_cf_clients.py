"""CF.* through the client libraries applications use, unchanged, against bloomproxy:

- redis-py 4.3's RedisBloom API (`r.cf()`): create with its options, add (duplicates), addnx,
  insert/insertnx (capacity, nocreate), exists, mexists, delete, count, info (every CFInfo
  field), the SCANDUMP + LOADCHUNK copy loop of redis-py's documentation, the errors it raises
  (redis-py drops a leading "ERR "), a pipeline and a transaction with errors in place, and
  redis-py's RedisCluster through a proxy in front of a Redis Cluster;
- node-redis v4 with @redis/bloom (tests/integration/node/cf_client.js, run with Node.js; its
  packages are installed by scripts/deps.sh with `npm ci`): reserve with options, add, addNX,
  insert/insertNX, exists, count, del, info, scanDump/loadChunk with binary buffers, MULTI (one
  that fails too) and the errors, printed as JSON.

Expected values come from cf_model.CuckooFilter (the project's model of RedisBloom's filter,
checked against every recorded reply by test_cf_model.py) and from Redis's own semantics; none
is asked of the proxy.
"""

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster as ClusterClient

from bp_cluster import keys_in_distinct_slots
from bp_helpers import HOST
from cf_model import (EXISTS, HEADER, INSERTED, MAX_EXPANSIONS, NO_MEMORY, NO_SPACE, CuckooFilter,
                      signed64)

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = shutil.which("node")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
RESERVE_RANGE = r"^Capacity must be in the range \[2 \* BUCKETSIZE, 1073741824\]$"
INSERT_RANGE = r"^Capacity must be in the range \[cf-bucket-size \* 2, 1073741824\]$"

# Insertion outcomes as CF.INSERT(NX) elements, and as CF.ADD(NX) replies (an error's message).
ELEMENT = {INSERTED: 1, EXISTS: 0, NO_SPACE: -1, NO_MEMORY: -1}
ADD_REPLY = {INSERTED: 1, EXISTS: 0, NO_SPACE: "Filter is full", NO_MEMORY: "Insufficient memory"}


def b(item):
    return item.encode() if isinstance(item, str) else item


def model_add(model, item, nx=False):
    """CF.ADD / CF.ADDNX as redis-py returns it: 1 or 0, or the message of the error raised."""
    if len(model.subs) >= MAX_EXPANSIONS:
        return "Maximum expansions reached"
    return ADD_REPLY[model.insert(b(item), nx)]


def model_insert(model, items, nx=False):
    """CF.INSERT / CF.INSERTNX's array, or the message of the whole reply's error."""
    if len(model.subs) >= MAX_EXPANSIONS:
        return "Maximum expansions reached"
    return [ELEMENT[model.insert(b(i), nx)] for i in items]


def info_of(model):
    """CF.INFO's eight fields, in redis-py's CFInfo attribute names."""
    return {"size": model.info_size(), "bucketNum": model.nb, "filterNum": len(model.subs),
            "insertedNum": signed64(model.items), "deletedNum": signed64(model.deletes),
            "bucketSize": model.bs, "expansionRate": model.ex, "maxIteration": model.mi}


def cfinfo(info):
    return {name: getattr(info, name) for name in (
        "size", "bucketNum", "filterNum", "insertedNum", "deletedNum", "bucketSize",
        "expansionRate", "maxIteration")}


def call(fn, *args, **kw):
    """A call's result, or the message of the ResponseError it raised."""
    try:
        return fn(*args, **kw)
    except redis.ResponseError as exc:
        return str(exc)


def scandump_chunks(cf, key):
    """redis-py's documented SCANDUMP loop: every (iterator, data) until the iterator is 0."""
    chunks, it = [], 0
    while True:
        it, data = cf.scandump(key, it)
        if it == 0:
            assert data is None, data[:50]
            return chunks
        chunks.append((it, data))


# ---------------------------------------------------------------------------------------------
# redis-py


def test_create_with_options_and_info(bp):
    r = bp.client()
    cf = r.cf()
    assert cf.create("rp:plain", 1000) is True
    assert cfinfo(cf.info("rp:plain")) == info_of(CuckooFilter.reserve(1000))
    assert cfinfo(cf.info("rp:plain"))["size"] == 1080  # the spec's default filter
    assert cf.create("rp:opts", 100, expansion=3, bucket_size=4, max_iterations=7) is True
    opts = CuckooFilter.reserve(100, 4, 7, 3)
    assert (opts.nb, opts.ex) == (32, 4)  # nextpow2(100 / 4); expansion rounded up
    assert cfinfo(cf.info("rp:opts")) == info_of(opts)
    assert cf.create("rp:fixed", 6, expansion=0, bucket_size=3) is True
    assert cfinfo(cf.info("rp:fixed")) == info_of(CuckooFilter.reserve(6, 3, 20, 0))
    assert r.type("rp:plain") == b"MBbloomCF"

    with pytest.raises(redis.ResponseError, match=r"^item exists$"):
        cf.create("rp:plain", 1000)
    with pytest.raises(redis.ResponseError, match=r"^not found$"):
        cf.info("rp:missing")
    assert r.exists("rp:missing") == 0


def test_add_addnx_exists_count_delete(bp):
    r = bp.client()
    cf = r.cf()
    model = CuckooFilter.reserve(200, 4, 50, 2)
    assert cf.create("rp:f", 200, expansion=2, bucket_size=4, max_iterations=50) is True
    for item in ["alpha", "alpha", "alpha", b"\x00\xffbin", "", "beta"]:
        assert cf.add("rp:f", item) == model_add(model, item) == 1  # duplicates stored again
    assert cf.addnx("rp:f", "alpha") == model_add(model, "alpha", nx=True) == 0
    assert cf.addnx("rp:f", "gamma") == model_add(model, "gamma", nx=True) == 1
    assert cf.count("rp:f", "alpha") == model.count(b"alpha") >= 3
    assert cf.exists("rp:f", b"\x00\xffbin") == 1
    assert cf.exists("rp:f", "never") == model.exists(b"never")
    probes = ["alpha", "beta", "", "gamma", "never", "other"]
    assert cf.mexists("rp:f", *probes) == [model.exists(b(p)) for p in probes]

    # Enough items for kicks and a second sub-filter.
    many = [f"item-{i}" for i in range(600)]
    for item in many:
        assert cf.add("rp:f", item) == model_add(model, item), item
    assert len(model.subs) >= 2
    assert cfinfo(cf.info("rp:f")) == info_of(model)
    absent = [f"absent-{i}" for i in range(500)]
    assert cf.mexists("rp:f", *absent) == [model.exists(b(a)) for a in absent]

    assert cf.delete("rp:f", "alpha") == model.delete(b"alpha") == 1
    assert cf.count("rp:f", "alpha") == model.count(b"alpha")
    for item in many[:100]:  # enough deletes to compact
        assert cf.delete("rp:f", item) == model.delete(b(item)), item
    assert cf.delete("rp:f", "never-added-xyz") == model.delete(b"never-added-xyz")
    assert cfinfo(cf.info("rp:f")) == info_of(model)
    assert cf.mexists("rp:f", *many) == [model.exists(b(i)) for i in many]

    # ADD and ADDNX create a missing key: capacity 1024, bucket size 2, 20 iterations, expansion 1.
    auto = CuckooFilter.reserve(1024)
    assert cf.add("rp:auto", "x") == model_add(auto, "x") == 1
    assert cf.addnx("rp:auto2", "x") == 1
    assert cfinfo(cf.info("rp:auto")) == info_of(auto)


def test_insert_and_insertnx(bp):
    r = bp.client()
    cf = r.cf()
    # A missing key is created with CAPACITY (or 1024); an existing key ignores it.
    model = CuckooFilter.reserve(64)
    items = ["a", "b", "a", b"\x00", "c"]
    assert cf.insert("rp:i", items, capacity=64) == model_insert(model, items) == [1] * 5
    assert cfinfo(cf.info("rp:i")) == info_of(model)
    more = ["a", "d", "d", "e"]
    assert cf.insertnx("rp:i", more, capacity=4096) == model_insert(model, more, nx=True)
    assert cf.insertnx("rp:i", more) == [0, 0, 0, 0]
    assert cf.insert("rp:i", ["a"], nocreate=True) == model_insert(model, ["a"]) == [1]
    assert cfinfo(cf.info("rp:i")) == info_of(model)
    assert cf.count("rp:i", "a") == model.count(b"a")

    default = CuckooFilter.reserve(1024)
    assert cf.insertnx("rp:i2", ["x", "x"]) == model_insert(default, ["x", "x"], nx=True)
    assert cfinfo(cf.info("rp:i2")) == info_of(default)

    with pytest.raises(redis.ResponseError, match=r"^not found$"):
        cf.insert("rp:none", ["x"], nocreate=True)
    with pytest.raises(redis.ResponseError, match=r"^not found$"):
        cf.insertnx("rp:none", ["x"], capacity=100, nocreate=True)
    assert r.exists("rp:none") == 0

    # A filter that cannot grow answers -1 in place for the items that find no slot.
    assert cf.create("rp:small", 4, expansion=0) is True
    small = CuckooFilter.reserve(4, expansion=0)
    batch = [f"s{i}" for i in range(12)]
    want = model_insert(small, batch)
    assert -1 in want and 1 in want
    assert cf.insert("rp:small", batch) == want
    assert cfinfo(cf.info("rp:small")) == info_of(small)


def test_errors(bp):
    r = bp.client()
    cf = r.cf()
    assert cf.create("rp:e", 100) is True
    assert r.set("rp:str", "v") is True
    cases = [
        (cf.create, ("rp:e", 100), {}, "item exists"),
        (cf.create, ("rp:str", 100), {}, WRONGTYPE),
        (cf.create, ("rp:n", 3), {}, RESERVE_RANGE),
        (cf.create, ("rp:n", 1073741825), {}, RESERVE_RANGE),
        (cf.create, ("rp:n", 9), {"bucket_size": 5}, RESERVE_RANGE),
        (cf.create, ("rp:n", 100), {"bucket_size": 0},
         r"^BUCKETSIZE: value must be in the range \[1, 255\]$"),
        (cf.create, ("rp:n", 1000), {"bucket_size": 256},
         r"^BUCKETSIZE: value must be in the range \[1, 255\]$"),
        (cf.create, ("rp:n", 100), {"max_iterations": 0},
         r"^MAXITERATIONS: value must be in the range \[1, 65535\]$"),
        (cf.create, ("rp:n", 100), {"expansion": 32769},
         r"^EXPANSION: value must be in the range \[0, 32768\]$"),
        (cf.create, ("rp:n", "many"), {}, "Bad capacity"),
        (cf.insert, ("rp:n", ["x"]), {"capacity": 3}, INSERT_RANGE),
        (cf.insertnx, ("rp:n", ["x"]), {"capacity": 1073741825}, INSERT_RANGE),
        (cf.insert, ("rp:str", ["x"]), {}, WRONGTYPE),
        (cf.insert, ("rp:str", ["x"]), {"nocreate": True}, WRONGTYPE),
        (cf.add, ("rp:str", "x"), {}, WRONGTYPE),
        (cf.addnx, ("rp:str", "x"), {}, WRONGTYPE),
        (cf.info, ("rp:str",), {}, WRONGTYPE),
        (cf.delete, ("rp:str", "x"), {}, "Not found"),
        (cf.delete, ("rp:n", "x"), {}, "Not found"),
        (cf.scandump, ("rp:e", -1), {}, "Invalid position"),
        (cf.scandump, ("rp:n", 0), {}, "not found"),
        (cf.scandump, ("rp:str", 0), {}, WRONGTYPE),
        (cf.loadchunk, ("rp:n", 0, b"x"), {}, "Invalid position"),
        (cf.loadchunk, ("rp:n", 1, b"short"), {}, "Invalid header"),
        (cf.loadchunk, ("rp:e", 1, b"short"), {}, "item exists"),
        (cf.loadchunk, ("rp:str", 1, b"short"), {}, WRONGTYPE),
        (cf.loadchunk, ("rp:n", 1, HEADER.pack(1, 4, 0, 1, 0, 20, 1)), {},
         "Couldn't create filter!"),
        (cf.loadchunk, ("rp:n", 9, b"ab"), {}, "not found"),
        (cf.loadchunk, ("rp:e", 2, b"ab"), {}, "Couldn't load chunk!"),
    ]
    for fn, args, kw, message in cases:
        with pytest.raises(redis.ResponseError) as exc:
            fn(*args, **kw)
        if message.startswith("^"):
            assert exc.match(message), (fn.__name__, args, kw)
        else:
            assert str(exc.value) == message, (fn.__name__, args, kw)
    # Reads of another type's key answer 0, no error; nothing was created.
    assert cf.exists("rp:str", "x") == 0
    assert cf.mexists("rp:str", "x", "y") == [0, 0]
    assert cf.count("rp:str", "x") == 0
    assert r.exists("rp:n") == 0
    assert r.get("rp:str") == b"v"
    # An empty filter has nothing to dump.
    assert cf.scandump("rp:e", 0) == [0, None]


def test_filter_full_and_maximum_expansions(bp):
    r = bp.client()
    cf = r.cf()
    # Non-scaling: "Filter is full" once no slot and no kick helps; ADDNX of a present item is 0.
    assert cf.create("rp:full", 4, expansion=0) is True
    full = CuckooFilter.reserve(4, expansion=0)
    replies = [model_add(full, f"f{i}") for i in range(10)]
    assert "Filter is full" in replies
    for i, want in enumerate(replies):
        assert call(cf.add, "rp:full", f"f{i}") == want, i
    assert call(cf.addnx, "rp:full", "f0") == model_add(full, "f0", nx=True) == 0
    assert cfinfo(cf.info("rp:full")) == info_of(full)

    # One INSERT grows 4 BUCKETSIZE 1 far past 32 sub-filters; later writes are refused whole.
    assert cf.create("rp:grow", 4, bucket_size=1) is True
    grow = CuckooFilter.reserve(4, 1)
    items = [f"g{i}" for i in range(300)]
    assert cf.insert("rp:grow", items) == model_insert(grow, items)
    assert len(grow.subs) > MAX_EXPANSIONS
    assert cfinfo(cf.info("rp:grow")) == info_of(grow)
    for fn, args in [(cf.add, ("x",)), (cf.addnx, ("x",)), (cf.insert, (["x"],)),
                     (cf.insertnx, (["x"],))]:
        with pytest.raises(redis.ResponseError, match=r"^Maximum expansions reached$"):
            fn("rp:grow", *args)
    assert cf.exists("rp:grow", "g7") == 1  # reads and deletes go on
    assert cf.delete("rp:grow", "g7") == grow.delete(b"g7") == 1
    assert cfinfo(cf.info("rp:grow")) == info_of(grow)


def test_scandump_loadchunk_copy(bp):
    """redis-py's documented migration loop, a filter of several sub-filters copied chunk by
    chunk to another key: RedisBloom's dump bytes, and a copy that lives on its own."""
    r = bp.client()
    cf = r.cf()
    src = CuckooFilter.reserve(64, 2, 20, 2)
    assert cf.create("rp:src", 64, expansion=2) is True
    items = [f"mig-{i}".encode() for i in range(300)] + [b"", b"\x00", b"\r\n\xff"]
    assert cf.insert("rp:src", items) == model_insert(src, items)
    assert len(src.subs) >= 3
    assert cf.delete("rp:src", b"mig-5") == src.delete(b"mig-5") == 1

    chunks = scandump_chunks(cf, "rp:src")
    assert chunks == src.dump()[:-1]
    assert chunks[0] == (1, HEADER.pack(src.items, src.nb, src.deletes, len(src.subs), 2, 20, 2))
    assert [data for _, data in chunks[1:]] == [bytes(s) for s in src.subs]

    for it, data in chunks:  # as redis-py's docs load it back
        assert cf.loadchunk("rp:dst", it, data) == b"OK"
    dst = copy.deepcopy(src)
    assert cfinfo(cf.info("rp:dst")) == cfinfo(cf.info("rp:src")) == info_of(src)
    assert scandump_chunks(cf, "rp:dst") == chunks
    assert cf.mexists("rp:dst", *items) == [src.exists(i) for i in items]

    # Two filters from here on: writes to one leave the other as it was.
    assert cf.add("rp:dst", "only-in-copy") == model_add(dst, "only-in-copy") == 1
    assert cf.delete("rp:src", b"mig-1") == src.delete(b"mig-1") == 1
    for key, model in (("rp:src", src), ("rp:dst", dst)):
        assert cf.exists(key, "only-in-copy") == model.exists(b"only-in-copy")
        assert cf.count(key, b"mig-1") == model.count(b"mig-1")
        assert cfinfo(cf.info(key)) == info_of(model)
        assert scandump_chunks(cf, key) == model.dump()[:-1]
    assert src.count(b"mig-1") != dst.count(b"mig-1")
    assert r.type("rp:dst") == b"MBbloomCF"


def pipeline_steps(pcf, pipe, prefix):
    """The same CF calls queued in a pipeline (errors among them), and what each must give."""
    k, s = f"{prefix}:f", f"{prefix}:str"
    model = CuckooFilter.reserve(100, 4)
    pipe.set(s, "v")
    pcf.create(k, 100, bucket_size=4)
    pcf.add(k, "a")
    pcf.create(k, 100)
    pcf.addnx(k, "a")
    pcf.insert(k, ["b", "a", "c"])
    pcf.insertnx(k, ["b", "d"])
    pcf.add(s, "x")
    pcf.create(f"{prefix}:bad", 1)
    pcf.count(k, "a")
    pcf.exists(k, "d")
    pcf.mexists(k, "a", "zz")
    pcf.scandump(k, -1)
    pcf.delete(k, "a")
    pcf.delete(s, "a")
    pcf.info(k)
    want = [True, True, model_add(model, "a"), "item exists", model_add(model, "a", nx=True),
            model_insert(model, ["b", "a", "c"]), model_insert(model, ["b", "d"], nx=True),
            WRONGTYPE, "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
            model.count(b"a"), model.exists(b"d"), [model.exists(b"a"), model.exists(b"zz")],
            "Invalid position", model.delete(b"a"), "Not found", info_of(model)]
    return want


def shown(results):
    return [str(x) if isinstance(x, redis.ResponseError)
            else cfinfo(x) if hasattr(x, "maxIteration") else x for x in results]


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_pipeline_and_transaction(bp, transaction):
    r = bp.client()
    pipe = r.pipeline(transaction=transaction)
    want = pipeline_steps(pipe.cf(), pipe, f"rp:{int(transaction)}")
    assert shown(pipe.execute(raise_on_error=False)) == want
    # raise_on_error (the default) raises the first error, the connection still usable.
    pipe = r.pipeline(transaction=transaction)
    pipe.cf().add("rp:str2", "x")
    pipe.set("rp:str2", "v")
    pipe.cf().add("rp:str2", "x")
    with pytest.raises(redis.ResponseError, match=r"WRONGTYPE"):
        pipe.execute()
    assert r.cf().exists("rp:str2", "x") == 0
    assert r.get("rp:str2") == b"v"


def test_redis_py_cluster_client(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy()
    rc = ClusterClient(host=HOST, port=p.port, socket_timeout=10)
    try:
        cf = rc.cf()
        keys = keys_in_distinct_slots("rpcf", 6)
        models = {}
        for i, k in enumerate(keys):
            models[k] = m = CuckooFilter.reserve(64 + 64 * i, 2, 20, 2)
            assert cf.create(k, 64 + 64 * i, expansion=2) is True
            items = [f"{k}-{j}" for j in range(40 * (i + 1))]
            assert cf.insert(k, items) == model_insert(m, items)
            assert cf.add(k, "dup") == cf.add(k, "dup") == 1
            model_add(m, "dup"), model_add(m, "dup")
            assert cf.addnx(k, "dup") == model_add(m, "dup", nx=True) == 0
            assert cf.insertnx(k, ["dup", "new"]) == model_insert(m, ["dup", "new"], nx=True)
            assert cf.count(k, "dup") == m.count(b"dup")
            assert cf.exists(k, items[3]) == 1
            probes = items[:5] + ["never-1", "never-2"]
            assert cf.mexists(k, *probes) == [m.exists(b(x)) for x in probes]
            assert cf.delete(k, items[0]) == m.delete(b(items[0])) == 1
            assert cfinfo(cf.info(k)) == info_of(m)
        with pytest.raises(redis.ResponseError, match=r"^item exists$"):
            cf.create(keys[0], 100)
        with pytest.raises(redis.ResponseError, match=r"^not found$"):
            cf.insert("rpcf:none", ["x"], nocreate=True)

        # A copy into a key of another slot, chunk by chunk.
        src, dst = keys[5], "rpcf:copy"
        chunks = scandump_chunks(cf, src)
        assert chunks == models[src].dump()[:-1]
        for it, data in chunks:
            assert cf.loadchunk(dst, it, data) == b"OK"
        assert cfinfo(cf.info(dst)) == info_of(models[src])
        assert scandump_chunks(cf, dst) == chunks
        assert cf.add(dst, "copy-only") == 1
        assert cf.exists(src, "copy-only") == models[src].exists(b"copy-only")
        assert rc.type(dst) == b"MBbloomCF"
    finally:
        rc.close()


# ---------------------------------------------------------------------------------------------
# node-redis


def node_expected():
    """What cf_client.js must print, step by step: {"ok": value} or {"error": message}."""
    out = {}

    def ok(step, value):
        out[step] = {"ok": value}

    def err(step, message):
        out[step] = {"error": message}

    def flag(v):  # node-redis's boolean replies (1 true; 0 and -1 false)
        return v == 1

    m = CuckooFilter.reserve(100, 4, 30, 2)
    ok("reserve", "OK")
    ok("info", info_node(m))
    err("reserveAgain", "ERR item exists")
    err("reserveRange", "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
    err("reserveBucketSize", "BUCKETSIZE: value must be in the range [1, 255]")
    ok("add", flag(model_add(m, "a")))
    ok("addDup", flag(model_add(m, "a")))
    ok("addBinary", flag(model_add(m, b"\x00\xff\r\n")))
    ok("addNX", flag(model_add(m, "a", nx=True)))
    ok("addNXNew", flag(model_add(m, "b", nx=True)))
    items = [f"n{i}" for i in range(200)]
    ok("insertMany", [flag(v) for v in model_insert(m, items)])
    ok("insertNX", [flag(v) for v in model_insert(m, ["a", "c", "c"], nx=True)])
    ok("exists", flag(m.exists(b"c")))
    ok("existsBinary", flag(m.exists(b"\x00\xff\r\n")))
    ok("existsNot", flag(m.exists(b"never")))
    ok("count", m.count(b"a"))
    ok("del", flag(m.delete(b"a")))
    ok("delAbsent", flag(m.delete(b"never")))
    ok("countAfterDel", m.count(b"a"))
    ok("infoAfter", info_node(m))

    auto = CuckooFilter.reserve(500)
    ok("insertCapacity", [flag(v) for v in model_insert(auto, ["x", "y"])])
    ok("infoCapacity", info_node(auto))
    err("insertNoCreate", "ERR not found")
    err("insertCapacityRange", "Capacity must be in the range [cf-bucket-size * 2, 1073741824]")

    dump = m.dump()
    ok("scanDump", [{"iterator": it, "chunk": None if d is None else d.hex()} for it, d in dump])
    ok("loadChunks", ["OK"] * (len(dump) - 1))
    ok("infoCopy", info_node(m))
    ok("existsCopy", [flag(m.exists(b(i))) for i in ["b", "c", "n7", b"\x00\xff\r\n", "never"]])
    copy_model = copy.deepcopy(m)
    ok("addCopyOnly", flag(model_add(copy_model, "copy-only")))
    ok("existsSrcCopyOnly", flag(m.exists(b"copy-only")))
    err("scanDumpBad", "Invalid position")
    err("loadChunkHeader", "Invalid header")

    t = CuckooFilter.reserve(64)
    ok("multi", ["OK", flag(model_add(t, "x")), [flag(v) for v in model_insert(t, ["x", "y"])],
                 t.count(b"x"), flag(t.exists(b"y"))])
    # node-redis throws a MultiErrorReply for an EXEC array holding errors, replies in place.
    err("multiFailed", "2 commands failed, see .replies and .errorIndexes for more information")
    out["multiFailed"]["replies"] = [flag(model_add(t, "z")), "OK", {"error": WRONGTYPE},
                                     {"error": "ERR item exists"}, t.count(b"z")]
    # An arity error while queuing: Redis discards the transaction, node-redis rejects with EXEC's
    # error (as it does against Redis itself).
    err("multiAborted", "EXECABORT Transaction discarded because of previous errors.")
    ok("existsAborted", flag(t.exists(b"w")))
    ok("setPlain", "OK")
    err("addPlain", WRONGTYPE)
    ok("existsPlain", False)
    err("delPlain", "Not found")
    ok("type", "MBbloomCF")
    return out


def info_node(model):
    i = info_of(model)
    return {"size": i["size"], "numberOfBuckets": i["bucketNum"],
            "numberOfFilters": i["filterNum"], "numberOfInsertedItems": i["insertedNum"],
            "numberOfDeletedItems": i["deletedNum"], "bucketSize": i["bucketSize"],
            "expansionRate": i["expansionRate"], "maxIteration": i["maxIteration"]}


@pytest.mark.skipif(NODE is None, reason="Node.js (node) is not installed; scripts/deps.sh "
                                         "installs it with the node-redis packages")
def test_node_redis_bloom_cf(bp):
    assert (NODE_DIR / "node_modules" / "@redis" / "bloom").is_dir(), \
        "node-redis is not installed: run `npm ci --prefix tests/integration/node` " \
        "(scripts/deps.sh does)"
    res = subprocess.run([NODE, "cf_client.js", str(bp.port), "nd"], cwd=NODE_DIR,
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    got = json.loads(res.stdout)
    want = node_expected()
    assert list(got) == list(want), f"steps: {list(got)}"
    wrong = {step: (got[step], want[step]) for step in want if got[step] != want[step]}
    assert not wrong, "steps whose result differs (got, expected):\n" + \
        "\n".join(f"  {s}: {g} != {w}" for s, (g, w) in wrong.items())
