"""BF.DEBUG answered by the proxy (bf-mode emulate), as RedisBloom's BFDebug_RedisCommand answers
it: an array of "size:<items>" and one line per sub-filter, "bytes:<b> bits:<m> hashes:<k>
hashwidth:64 capacity:<c> size:<items in it> ratio:<error, %g>", the same in RESP3. Checked byte
for byte: a fresh filter, RedisBloom's documented example (the default filter after 497 distinct
items), a full non-scaling filter, errors, MULTI (a wrong argument count is queued and answered
inside EXEC), RESP3, redis-py, COMMAND INFO/DOCS/GETKEYS, bf-mode forward, keys of a bf-layout
rule (one line per data key), a Redis Cluster and a nutcracker upstream."""

import math

from bf_vectors import WRONGTYPE, ModelFilter
from bp_helpers import encode_command as cmd
from bp_helpers import exec_block, exec_elements, parse_resp, replies_of
from resp3_replay import Resp3Conn

ARITY = b"-ERR wrong number of arguments for 'bf.debug' command\r\n"
NOT_FOUND = b"-ERR not found\r\n"
DOCUMENTED = [
    b"size:497",
    b"bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005",
    b"bytes:312 bits:2496 hashes:9 hashwidth:64 capacity:200 size:200 ratio:0.0025",
    b"bytes:696 bits:5568 hashes:10 hashwidth:64 capacity:400 size:197 ratio:0.00125",
]
DOC_ITEMS = [f"item:{i}" for i in range(497)]


def reply_of(lines):
    """BF.DEBUG's raw reply made of its lines: an array of bulk strings (RESP2 and RESP3)."""
    return b"*%d\r\n" % len(lines) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in lines)


def model_lines(m):
    """The lines of bf_vectors.ModelFilter `m`, printed as RedisBloom's C code prints them."""
    out = [b"size:%d" % m.total]
    for link in m.links:
        out.append(b"bytes:%d bits:%d hashes:%d hashwidth:64 capacity:%d size:%d ratio:%s" % (
            link.nbytes, link.bits, link.k, link.capacity, link.items,
            (b"%g" % link.error)))
    return out


def one(port, *args):
    (raw,) = replies_of(port, cmd(*args), 1)
    return raw


# ---------------------------------------------------------------------------------------------
# Replies


def test_fresh_filters(bp):
    with bp.raw() as c:
        assert c.command("BF.RESERVE", "r", "0.01", "100") == b"OK"
        c.send(cmd("BF.DEBUG", "r"))
        assert c.read_reply_raw() == reply_of([
            b"size:0",
            b"bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005"])
        assert c.command("BF.RESERVE", "r2", "0.001", "1000", "EXPANSION", "4") == b"OK"
        lines = [b"size:0",
                 b"bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:0 ratio:0.0005"]
        assert model_lines(ModelFilter(0.001, 1000, 4)) == lines
        c.send(cmd("bf.Debug", "r2"))
        assert c.read_reply_raw() == reply_of(lines)
        assert c.command("BF.ADD", "a", "x") == 1
        c.send(cmd("BF.DEBUG", "a"))
        assert c.read_reply_raw() == reply_of([
            b"size:1",
            b"bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005"])


def test_documented_example(bp):
    model = ModelFilter()
    assert sum(model.add(i.encode()) for i in DOC_ITEMS) == 497
    assert model_lines(model) == DOCUMENTED
    with bp.raw() as c:
        assert c.command("BF.MADD", "doc", *DOC_ITEMS) == [1] * 497
        c.send(cmd("BF.DEBUG", "doc"))
        assert c.read_reply_raw() == reply_of(DOCUMENTED)
        assert c.command("BF.CARD", "doc") == 497


def test_scaled_filters_follow_the_model(bp):
    """Chains of several links at other rates: %g of each error, whatever its digits."""
    with bp.raw() as c:
        for name, error, capacity, expansion in (("s1", 0.001, 10, 2), ("s2", 0.2, 7, 3),
                                                 ("s3", 0.0123, 5, 1)):
            model = ModelFilter(error, capacity, expansion)
            items = [f"{name}:{i}".encode() for i in range(60)]
            assert c.command("BF.RESERVE", name, str(error), str(capacity), "EXPANSION",
                             str(expansion)) == b"OK"
            assert c.command("BF.MADD", name, *items) == [model.add(i) for i in items]
            c.send(cmd("BF.DEBUG", name))
            assert c.read_reply_raw() == reply_of(model_lines(model)), name
            assert len(model.links) >= 3


def test_full_non_scaling_filter(bp):
    with bp.raw() as c:
        assert c.command("BF.RESERVE", "n", "0.01", "10", "NONSCALING") == b"OK"
        c.send(cmd("BF.MADD", "n", *[f"x{i}" for i in range(30)]))
        reply = c.read_reply_raw()
        assert reply.endswith(b"-ERR non scaling filter is full\r\n"), reply
        c.send(cmd("BF.DEBUG", "n"))
        assert c.read_reply_raw() == reply_of([
            b"size:10", b"bytes:16 bits:128 hashes:7 hashwidth:64 capacity:10 size:10 ratio:0.01"])


def test_errors(bp, redis_instance):
    direct = redis_instance.client()
    direct.set("str", "v")
    direct.rpush("list", "a")
    direct.hset("hash", "f", "v")
    payload = (cmd("BF.DEBUG") + cmd("BF.DEBUG", "a", "b") + cmd("BF.DEBUG", "nothing")
               + cmd("BF.DEBUG", "str") + cmd("BF.DEBUG", "list") + cmd("BF.DEBUG", "hash")
               + cmd("bf.debug", ""))
    assert replies_of(bp.port, payload, 7) == [ARITY, ARITY, NOT_FOUND, WRONGTYPE, WRONGTYPE,
                                               WRONGTYPE, NOT_FOUND]


# ---------------------------------------------------------------------------------------------
# Transactions, RESP3, clients


def test_inside_multi(bp):
    with bp.raw() as c:
        assert c.command("BF.MADD", "doc", *DOC_ITEMS) == [1] * 497
        elements = exec_block(c, [("BF.DEBUG", "doc"), ("BF.DEBUG", "nothing"),
                                  ("BF.ADD", "doc", "item:497"), ("BF.DEBUG", "doc"),
                                  ("BF.DEBUG",), ("BF.DEBUG", "doc", "x"), ("SET", "s", "v"),
                                  ("BF.DEBUG", "s"), ("BF.DEBUG", "fresh"),
                                  ("BF.RESERVE", "fresh", "0.01", "100"), ("BF.DEBUG", "fresh")])
        after = DOCUMENTED[:3] + [DOCUMENTED[3].replace(b"size:197", b"size:198")]
        after[0] = b"size:498"
        assert elements == [
            reply_of(DOCUMENTED), NOT_FOUND, b":1\r\n", reply_of(after), ARITY, ARITY,
            b"+OK\r\n", WRONGTYPE, NOT_FOUND, b"+OK\r\n",
            reply_of([b"size:0", b"bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 "
                                 b"size:0 ratio:0.005"])]


def test_resp3_plain_and_in_multi(bp):
    with bp.raw() as c:
        assert c.command("BF.MADD", "doc", *DOC_ITEMS) == [1] * 497
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        assert c.call("BF.DEBUG", "doc") == reply_of(DOCUMENTED)
        assert c.call("BF.DEBUG", "nothing") == NOT_FOUND
        assert c.call("BF.DEBUG") == ARITY
        assert exec_block(c, [("BF.DEBUG", "doc"), ("BF.DEBUG",)]) == [reply_of(DOCUMENTED),
                                                                      ARITY]


def test_redis_py(bp):
    client = bp.client()
    client.execute_command("BF.MADD", "doc", *DOC_ITEMS)
    assert client.execute_command("BF.DEBUG", "doc") == DOCUMENTED
    pipe = client.pipeline(transaction=True)
    pipe.execute_command("BF.DEBUG", "doc")
    pipe.execute_command("BF.CARD", "doc")
    assert pipe.execute() == [DOCUMENTED, 497]


# ---------------------------------------------------------------------------------------------
# The command table


def test_command_info_docs_and_getkeys(bp):
    (entry,) = parse_resp(one(bp.port, "COMMAND", "INFO", "BF.DEBUG"))[0]
    assert entry[:8] == [b"bf.debug", -1, [b"readonly", b"module", b"fast"], 1, 1, 1,
                         [b"@read", b"@bloom"], []]
    assert entry[8] == [[b"flags", [b"RW", b"access", b"update"], b"begin_search",
                         [b"type", b"index", b"spec", [b"index", 1]], b"find_keys",
                         [b"type", b"range", b"spec", [b"lastkey", 0, b"keystep", 1,
                                                       b"limit", 0]]]]
    assert one(bp.port, "COMMAND", "DOCS", "bf.debug") == (
        b"*2\r\n$8\r\nbf.debug\r\n*4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n"
        b"$2\r\nbf\r\n")
    assert one(bp.port, "COMMAND", "GETKEYS", "BF.DEBUG", "k") == b"*1\r\n$1\r\nk\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "BF.DEBUG", "k") == (
        b"*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n")
    listed = parse_resp(one(bp.port, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "bloom"))[0]
    assert b"bf.debug" in listed
    fast = parse_resp(one(bp.port, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "fast"))[0]
    assert b"bf.debug" not in fast


def test_bf_mode_forward_passes_the_upstreams_answer(proxy, redis_instance):
    p = proxy("--bf-mode", "forward")
    payload = cmd("BF.DEBUG", "f") + cmd("BF.DEBUG") + cmd("COMMAND", "INFO", "bf.debug")
    got = replies_of(p.port, payload, 3)
    assert got == replies_of(redis_instance.port, payload, 3)
    assert got[0].startswith(b"-ERR unknown command 'BF.DEBUG'")


# ---------------------------------------------------------------------------------------------
# Keys of a bf-layout rule

LAYOUTS = ("--bf-layout", "g:* guava 100 0.01", "--bf-layout", "m:* guava-mitz32 1000000 0.03",
           "--bf-layout", "e:{*} guava 10 0.1 expanding %s:cursor")


def guava_count(bitcount, bits, k):
    """Guava's approximateElementCount (HALF_UP)."""
    return math.floor(-math.log1p(-bitcount / bits) * bits / k + 0.5)


def test_guava_keys(proxy, redis_instance):
    p = proxy(*LAYOUTS)
    direct = redis_instance.client()
    with p.raw() as c:
        c.command("BF.MADD", "g:1", "a", "b", "c")
        bits = direct.bitcount("g:1")
        n = guava_count(bits, 960, 7)
        c.send(cmd("BF.DEBUG", "g:1"))
        assert c.read_reply_raw() == reply_of([
            b"size:%d" % n,
            b"bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:%d ratio:0.01" % n])
        assert c.command("BF.CARD", "g:1") == n == 3
        # guava-mitz32: 32-bit halves of the hash.
        c.command("BF.ADD", "m:1", "a")
        c.send(cmd("BF.DEBUG", "m:1"))
        assert c.read_reply_raw() == reply_of([
            b"size:1", b"bytes:912312 bits:7298496 hashes:5 hashwidth:32 capacity:1000000 "
                       b"size:1 ratio:0.03"])
        c.send(cmd("BF.DEBUG", "g:none") + cmd("BF.DEBUG", "e:{none}"))
        assert [c.read_reply_raw() for _ in range(2)] == [NOT_FOUND, NOT_FOUND]
        direct.rpush("g:list", "x")
        c.send(cmd("BF.DEBUG", "g:list"))
        assert c.read_reply_raw() == WRONGTYPE


def test_expanding_guava_filter_has_a_line_per_data_key(proxy, redis_instance):
    p = proxy(*LAYOUTS)
    direct = redis_instance.client()
    with p.raw() as c:
        c.command("BF.MADD", "e:{x}", *[f"v{i}" for i in range(40)])
        cursor = int(direct.get("e:{x}:cursor"))
        assert cursor >= 1
        counts = [guava_count(direct.bitcount(f"e:{{x}}-{i}"), 64, 3) for i in range(cursor + 1)]
        c.send(cmd("BF.DEBUG", "e:{x}"))
        raw = c.read_reply_raw()
        assert raw == reply_of(
            [b"size:%d" % sum(counts)]
            + [b"bytes:8 bits:64 hashes:3 hashwidth:64 capacity:10 size:%d ratio:0.1" % n
               for n in counts])
        assert c.command("BF.CARD", "e:{x}") == sum(counts)
        # The same inside MULTI (the rule's script).
        assert exec_block(c, [("BF.DEBUG", "e:{x}"), ("BF.DEBUG", "g:none")]) == [raw, NOT_FOUND]


# ---------------------------------------------------------------------------------------------
# Other upstreams


def test_redis_cluster(redis_cluster, cluster_proxy):
    redis_cluster.flushall()
    p = cluster_proxy()
    with p.raw() as c:
        for name in ("doc", "{t}doc", "other"):
            assert c.command("BF.MADD", name, *DOC_ITEMS) == [1] * 497
            c.send(cmd("BF.DEBUG", name))
            assert c.read_reply_raw() == reply_of(DOCUMENTED), name
        c.send(cmd("BF.DEBUG", "nothing") + cmd("BF.DEBUG"))
        assert [c.read_reply_raw() for _ in range(2)] == [NOT_FOUND, ARITY]
        assert exec_block(c, [("BF.DEBUG", "{t}doc"), ("BF.DEBUG", "{t}x", "y")]) == [
            reply_of(DOCUMENTED), ARITY]


def test_nutcracker(twemproxy, sharding_proxy):
    twemproxy.flushall()
    p = sharding_proxy()
    with p.raw() as c:
        for name in ("doc", "{t}doc"):
            assert c.command("BF.MADD", name, *DOC_ITEMS) == [1] * 497
            c.send(cmd("BF.DEBUG", name))
            assert c.read_reply_raw() == reply_of(DOCUMENTED), name
        c.send(cmd("BF.DEBUG", "{t}nothing") + cmd("BF.DEBUG", "a", "b"))
        assert [c.read_reply_raw() for _ in range(2)] == [NOT_FOUND, ARITY]


def test_exec_reply_is_parsed_whole(bp):
    """EXEC's array holds BF.DEBUG's arrays as elements a client can parse."""
    with bp.raw() as c:
        c.command("BF.ADD", "p", "x")
        c.send(cmd("MULTI") + cmd("BF.DEBUG", "p") + cmd("BF.CARD", "p") + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n",
                                                           b"+QUEUED\r\n"]
        raw = c.read_reply_raw()
        assert exec_elements(raw) is not None
        assert parse_resp(raw)[0] == [[b"size:1", b"bytes:144 bits:1152 hashes:8 hashwidth:64 "
                                                  b"capacity:100 size:1 ratio:0.005"], 1]
