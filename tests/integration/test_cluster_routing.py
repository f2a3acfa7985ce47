"""A Redis Cluster as the upstream (--upstream-cluster): keyed commands reach the node of their
slot (no client ever sees MOVED or ASK), multi-key commands are split and merged or refused with
the node's own CROSSSLOT error, transactions, fan-out commands, SCAN, scripts, blocking commands,
pub/sub, and the CLUSTER commands the proxy answers as a one-node cluster.

One cluster serves the whole module (FLUSHALL before each test); errors are compared byte for
byte with what a real cluster node answers to the same command."""

import hashlib
import re
import time

import pytest

from bp_cluster import SLOTS, key_slot, keys_in_distinct_slots, parse_cluster_nodes, parse_info
from bp_helpers import Err, encode_command as cmd, read_replies, replies_of

CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
SELECT_REFUSED = b"-ERR SELECT is not allowed in cluster mode\r\n"


@pytest.fixture(autouse=True)
def empty_cluster(redis_cluster):
    redis_cluster.flushall()
    return redis_cluster


def bulk(value):
    if value is None:
        return b"$-1\r\n"
    if isinstance(value, str):
        value = value.encode()
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(items):
    return b"*%d\r\n" % len(items) + b"".join(items)


def tags_per_master(cluster):
    """{master port: "{tN}"}: one hash tag whose slot each master serves."""
    owners = cluster.slot_owners()
    tags = {}
    i = 0
    while len(tags) < len(cluster.masters()):
        tag = "{t%d}" % i
        i += 1
        port = cluster.by_id(owners[key_slot(tag)]).port
        tags.setdefault(port, tag)
    return tags


def key_pairs(cluster):
    """Two pairs of keys in different slots: on two masters, and on one master."""
    owners = cluster.slot_owners()
    a = "pair:a"
    candidates = [f"pair:{i}" for i in range(1000)]
    other = next(k for k in candidates if owners[key_slot(k)] != owners[key_slot(a)])
    same = next(k for k in candidates
                if owners[key_slot(k)] == owners[key_slot(a)] and key_slot(k) != key_slot(a))
    return [(a, other), (a, same)]


def direct(node, payload, n=1):
    return replies_of(node.port, payload, n)


def reset_errorstats(cluster):
    for n in cluster.masters():
        assert n.command("CONFIG", "RESETSTAT") == b"OK"


def redirections_seen(cluster):
    """{port: errorstat lines} of the masters that answered MOVED, ASK or CROSSSLOT."""
    out = {}
    for n in cluster.masters():
        stats = parse_info(n.command("INFO", "errorstats"))
        bad = {k: v for k, v in stats.items()
               if k in ("errorstat_MOVED", "errorstat_ASK", "errorstat_CROSSSLOT")}
        if bad:
            out[n.port] = bad
    return out


# ---------------------------------------------------------------------------------------------
# The cluster fixture itself


def test_cluster_fixture(redis_cluster):
    assert redis_cluster.start_seconds < 10, f"cluster took {redis_cluster.start_seconds:.1f} s"
    assert len(redis_cluster.nodes) == 6
    for node in redis_cluster.nodes:
        info = parse_info(node.command("CLUSTER", "INFO"))
        assert (info["cluster_state"], info["cluster_slots_assigned"], info["cluster_size"],
                info["cluster_known_nodes"]) == ("ok", "16384", "3", "6"), node
    masters = redis_cluster.masters()
    assert len(masters) == 3
    assert redis_cluster.seeds() == ",".join(f"127.0.0.1:{m.port}" for m in masters)
    for m in masters:
        assert len(redis_cluster.replicas_of(m)) == 1
    for k in ("a", "{user}1", "key:77"):
        node = redis_cluster.node_for_key(k)
        assert node.command("CLUSTER", "KEYSLOT", k) == key_slot(k)
        assert node.command("SET", k, "here") == b"OK"  # no MOVED: it serves the slot


# ---------------------------------------------------------------------------------------------
# Keyed commands


def test_keyed_commands_reach_the_node_of_their_slot(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    keys = keys_in_distinct_slots("route", 400)
    with p.raw() as c:
        assert c.command("SET", "warmup", "1") == b"OK"  # the proxy has read the slot map
    reset_errorstats(redis_cluster)
    payload = b"".join(cmd("SET", k, f"v-{k}") for k in keys) + \
        b"".join(cmd("GET", k) for k in keys) + \
        b"".join(cmd("INCRBY", k + ":n", 3) for k in keys[:100])
    got = replies_of(p.port, payload, 2 * len(keys) + 100)
    assert got[:len(keys)] == [b"+OK\r\n"] * len(keys)
    assert got[len(keys):2 * len(keys)] == [bulk(f"v-{k}") for k in keys]
    assert got[2 * len(keys):] == [b":3\r\n"] * 100
    # Each key is on the master that serves its slot, and nothing was redirected on the way.
    for k in keys:
        assert redis_cluster.node_for_key(k).command("GET", k) == f"v-{k}".encode(), k
    assert redis_cluster.dbsize() == len(keys) + 100 + 1
    assert redirections_seen(redis_cluster) == {}


def test_no_redirection_right_after_start(redis_cluster, cluster_proxy):
    """The first commands of a just started proxy (it may still be reading the slot map) get
    their node's replies, whatever kind of connection they need: shared, blocking, a
    transaction, a script."""
    tags = list(tags_per_master(redis_cluster).values())
    for round_ in range(6):
        p = cluster_proxy()
        tag = tags[round_ % len(tags)]
        with p.raw() as a, p.raw() as b, p.raw() as c, p.raw() as d:
            a.send(cmd("GET", tag + "g"))
            b.send(cmd("BLPOP", tag + "q", "0.01"))
            c.send(cmd("MULTI") + cmd("SET", tag + "m", "1") + cmd("EXEC"))
            d.send(cmd("EVAL", "return redis.call('GET', KEYS[1])", "1", tag + "g"))
            got = [a.read_reply_raw(), b.read_reply_raw(), read_replies(c, 3),
                   d.read_reply_raw()]
        assert got == [b"$-1\r\n", b"*-1\r\n", b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n", b"$-1\r\n"], \
            (round_, tag)
        assert p.terminate_and_wait() == 0


def test_many_types_on_every_master(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for port, tag in tags_per_master(redis_cluster).items():
        node = redis_cluster.by_port(port)
        payload = b"".join([
            cmd("HSET", tag + "h", "f1", "v1", "f2", "v2"),
            cmd("HGETALL", tag + "h"),
            cmd("RPUSH", tag + "l", "a", "b", "c"),
            cmd("LRANGE", tag + "l", "0", "-1"),
            cmd("SADD", tag + "s", "x"),
            cmd("SMEMBERS", tag + "s"),
            cmd("ZADD", tag + "z", "1.5", "one", "2", "two"),
            cmd("ZRANGE", tag + "z", "0", "-1", "WITHSCORES"),
            cmd("XADD", tag + "x", "1-1", "f", "v"),
            cmd("XRANGE", tag + "x", "-", "+"),
            cmd("GET", tag + "missing"),
            cmd("LPUSH", tag + "h", "wrongtype"),
            cmd("TYPE", tag + "z"),
            cmd("OBJECT", "ENCODING", tag + "l"),
        ])
        via_proxy = replies_of(p.port, payload, 14)
        node.command("FLUSHALL")
        assert direct(node, payload, 14) == via_proxy, tag
        assert via_proxy[1] == b"*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n"
        assert via_proxy[11] == \
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def test_keys_found_by_the_command_table(redis_cluster, cluster_proxy):
    """Keys that are not the first argument (XREAD ... STREAMS, ZUNIONSTORE dst numkeys ...,
    EVAL numkeys ...) decide the node."""
    p = cluster_proxy()
    for port, tag in tags_per_master(redis_cluster).items():
        node = redis_cluster.by_port(port)
        payload = b"".join([
            cmd("XADD", tag + "st", "1-1", "f", "v"),
            cmd("XREAD", "COUNT", "5", "STREAMS", tag + "st", "0-0"),
            cmd("ZADD", tag + "a", "1", "m1"),
            cmd("ZADD", tag + "b", "2", "m2"),
            cmd("ZUNIONSTORE", tag + "dst", "2", tag + "a", tag + "b"),
            cmd("ZRANGE", tag + "dst", "0", "-1"),
            cmd("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", tag + "ev", "e"),
            cmd("EVAL", "return redis.call('GET', KEYS[1])", "1", tag + "ev"),
            cmd("SET", tag + "src", "copied"),
            cmd("COPY", tag + "src", tag + "cp"),
            cmd("GET", tag + "cp"),
            cmd("BITOP", "OR", tag + "bo", tag + "src", tag + "cp"),
            cmd("SORT", tag + "l", "STORE", tag + "sorted"),
        ])
        got = replies_of(p.port, payload, 13)
        assert got[1] == (b"*1\r\n*2\r\n" + bulk(tag + "st") + b"*1\r\n*2\r\n$3\r\n1-1\r\n"
                          b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n"), tag
        assert got[4] == b":2\r\n"
        assert got[5] == b"*2\r\n$2\r\nm1\r\n$2\r\nm2\r\n"
        assert got[6:8] == [b"+OK\r\n", b"$1\r\ne\r\n"]
        assert got[9:12] == [b":1\r\n", bulk("copied"), b":6\r\n"]
        assert got[12] == b":0\r\n"
        assert node.command("ZRANGE", tag + "dst", "0", "-1") == [b"m1", b"m2"]
        assert node.command("GET", tag + "ev") == b"e"


# ---------------------------------------------------------------------------------------------
# Split commands


def test_mget_of_keys_in_many_slots_merges_in_order(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    keys = keys_in_distinct_slots("mget", 50)
    values = {}
    for i, k in enumerate(keys):
        if i % 7 != 3:  # some keys stay missing
            values[k] = f"value-{i}-" + "x" * (i * 13)
            assert redis_cluster.node_for_key(k).command("SET", k, values[k]) == b"OK"
    # Client order, missing keys, a key twice, and a hash-tagged pair in one slot.
    asked = keys[::-1] + [keys[0], keys[1], keys[0], "nosuchkey"]
    expected = array([bulk(values.get(k)) for k in asked])
    assert replies_of(p.port, cmd("MGET", *asked), 1) == [expected]
    assert len({redis_cluster.node_for_key(k).port for k in keys}) == 3
    # A one-key MGET and an MGET within one slot are the node's own replies.
    assert replies_of(p.port, cmd("MGET", keys[1]), 1) == \
        direct(redis_cluster.node_for_key(keys[1]), cmd("MGET", keys[1]))
    # Also when pipelined with other commands.
    payload = cmd("MGET", *keys[:10]) + cmd("PING") + cmd("MGET", *keys[10:30]) + cmd("GET",
                                                                                       keys[5])
    assert replies_of(p.port, payload, 4) == [
        array([bulk(values.get(k)) for k in keys[:10]]), b"+PONG\r\n",
        array([bulk(values.get(k)) for k in keys[10:30]]), bulk(values.get(keys[5]))]


def test_mset_del_exists_touch_unlink_split_and_merged(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    keys = keys_in_distinct_slots("split", 60)
    pairs = []
    for k in keys:
        pairs += [k, "v:" + k]
    assert replies_of(p.port, cmd("MSET", *pairs), 1) == [b"+OK\r\n"]
    for k in keys:
        assert redis_cluster.node_for_key(k).command("GET", k) == ("v:" + k).encode(), k
    missing = ["split:missing:%d" % i for i in range(5)]
    payload = b"".join([
        cmd("EXISTS", *keys, *missing, keys[0], keys[0]),  # a key counted each time it is named
        cmd("TOUCH", *keys[:20], *missing),
        cmd("DEL", *keys[:20], *missing),
        cmd("UNLINK", *keys[15:40], *missing),
        cmd("EXISTS", *keys),
        cmd("DEL", keys[50]),
        cmd("DEL", *missing),
    ])
    got = replies_of(p.port, payload, 7)
    assert got == [b":62\r\n", b":20\r\n", b":20\r\n", b":20\r\n", b":20\r\n", b":1\r\n",
                   b":0\r\n"]
    assert redis_cluster.dbsize() == 19
    for k in keys[40:]:
        assert redis_cluster.node_for_key(k).command("EXISTS", k) == (0 if k == keys[50] else 1)


def test_split_commands_with_a_wrong_type_key(redis_cluster, cluster_proxy):
    """MGET answers nil for a key of another type, as a node does."""
    p = cluster_proxy()
    keys = keys_in_distinct_slots("wt", 12)
    redis_cluster.node_for_key(keys[4]).command("RPUSH", keys[4], "x")
    redis_cluster.node_for_key(keys[7]).command("SET", keys[7], "seven")
    expected = array([bulk("seven" if k == keys[7] else None) for k in keys])
    assert replies_of(p.port, cmd("MGET", *keys), 1) == [expected]


# ---------------------------------------------------------------------------------------------
# CROSSSLOT and SELECT: the node's own errors


CROSSSLOT_TEMPLATES = [
    ("MSETNX", "A", "1", "B", "2"),
    ("SINTERSTORE", "A", "A", "B"),
    ("SUNIONSTORE", "A", "A", "B"),
    ("SDIFFSTORE", "A", "A", "B"),
    ("SINTER", "A", "B"),
    ("SUNION", "A", "B"),
    ("SDIFF", "A", "B"),
    ("SINTERCARD", "2", "A", "B"),
    ("SMOVE", "A", "B", "member"),
    ("RENAME", "A", "B"),
    ("RENAMENX", "A", "B"),
    ("COPY", "A", "B"),
    ("LMOVE", "A", "B", "LEFT", "RIGHT"),
    ("BLMOVE", "A", "B", "LEFT", "RIGHT", "0.2"),
    ("RPOPLPUSH", "A", "B"),
    ("BRPOPLPUSH", "A", "B", "0.2"),
    ("BLPOP", "A", "B", "0.2"),
    ("BRPOP", "A", "B", "0.2"),
    ("BZPOPMIN", "A", "B", "0.2"),
    ("LMPOP", "2", "A", "B", "LEFT"),
    ("BLMPOP", "0.2", "2", "A", "B", "LEFT"),
    ("ZMPOP", "2", "A", "B", "MIN"),
    ("ZUNIONSTORE", "A", "2", "A", "B"),
    ("ZINTERSTORE", "A", "2", "A", "B"),
    ("ZDIFFSTORE", "A", "2", "A", "B"),
    ("ZUNION", "2", "A", "B"),
    ("ZINTER", "2", "A", "B"),
    ("ZDIFF", "2", "A", "B"),
    ("ZINTERCARD", "2", "A", "B"),
    ("ZRANGESTORE", "A", "B", "0", "-1"),
    ("PFCOUNT", "A", "B"),
    ("PFMERGE", "A", "B"),
    ("BITOP", "AND", "A", "A", "B"),
    ("LCS", "A", "B"),
    ("SORT", "A", "STORE", "B"),
    ("GEOSEARCHSTORE", "A", "B", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEORADIUS", "A", "0", "0", "1", "km", "STORE", "B"),
    ("EVAL", "return 1", "2", "A", "B"),
    ("EVAL_RO", "return 1", "2", "A", "B"),
    ("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "2", "A", "B"),
    ("FCALL", "nosuchfunction", "2", "A", "B"),
    ("XREAD", "STREAMS", "A", "B", "0-0", "0-0"),
    ("XREAD", "COUNT", "1", "BLOCK", "200", "STREAMS", "A", "B", "$", "$"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "A", "B", ">", ">"),
    ("WATCH", "A", "B"),
    ("SSUBSCRIBE", "A", "B"),
]


def test_crossslot_is_the_nodes_own_error(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for a, b in key_pairs(redis_cluster):
        owner = redis_cluster.node_for_key(a)
        for template in CROSSSLOT_TEMPLATES:
            args = [a if x == "A" else b if x == "B" else x for x in template]
            with p.raw() as c:  # fresh connections: WATCH and SSUBSCRIBE change their state
                c.send(cmd(*args))
                via_proxy = c.read_reply_raw()
                # The connection is still usable and in its normal state.
                assert c.command("PING") == b"PONG", args
            assert via_proxy == direct(owner, cmd(*args))[0] == CROSSSLOT, args
    # Nothing was created by the refused commands.
    assert redis_cluster.dbsize() == 0


def test_crossslot_pipelined_between_good_commands(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    (a, b), (_, c) = key_pairs(redis_cluster)
    payload = b"".join([cmd("SET", a, "1"), cmd("MSETNX", a, "x", b, "y"), cmd("GET", a),
                        cmd("RENAME", a, c), cmd("SUNION", a, b), cmd("GET", a)])
    assert replies_of(p.port, payload, 6) == [b"+OK\r\n", CROSSSLOT, b"$1\r\n1\r\n", CROSSSLOT,
                                              CROSSSLOT, b"$1\r\n1\r\n"]


def test_multi_key_commands_within_one_slot_work(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for tag in tags_per_master(redis_cluster).values():
        payload = b"".join([
            cmd("MSETNX", tag + "a", "1", tag + "b", "2"),
            cmd("RENAME", tag + "a", tag + "c"),
            cmd("SADD", tag + "s1", "x", "y"),
            cmd("SADD", tag + "s2", "y", "z"),
            cmd("SINTERSTORE", tag + "s3", tag + "s1", tag + "s2"),
            cmd("SMOVE", tag + "s1", tag + "s2", "x"),
            cmd("PFADD", tag + "h1", "a", "b"),
            cmd("PFADD", tag + "h2", "b", "c"),
            cmd("PFCOUNT", tag + "h1", tag + "h2"),
            cmd("EVAL", "return #KEYS", "2", tag + "a", tag + "b"),
            cmd("MGET", tag + "c", tag + "b", tag + "a"),
        ])
        assert replies_of(p.port, payload, 11) == [
            b":1\r\n", b"+OK\r\n", b":2\r\n", b":2\r\n", b":1\r\n", b":1\r\n", b":1\r\n",
            b":1\r\n", b":3\r\n", b":2\r\n", b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"], tag


def test_select_is_refused_like_a_cluster_node(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    node = redis_cluster.masters()[0]
    for args in (("SELECT", "1"), ("SELECT", "15"), ("SELECT", "16"), ("SELECT", "-1"),
                 ("SELECT", "0"), ("SELECT", "x")):
        assert replies_of(p.port, cmd(*args), 1) == direct(node, cmd(*args)), args
    assert replies_of(p.port, cmd("SELECT", "1"), 1) == [SELECT_REFUSED]
    # The connection stays on database 0.
    with p.raw() as c:
        c.send(cmd("SELECT", "1") + cmd("SET", "sel", "v") + cmd("SELECT", "0") +
               cmd("GET", "sel"))
        assert read_replies(c, 4) == SELECT_REFUSED + b"+OK\r\n+OK\r\n$1\r\nv\r\n"
    assert redis_cluster.node_for_key("sel").command("GET", "sel") == b"v"


# ---------------------------------------------------------------------------------------------
# Transactions


def test_transaction_in_one_slot(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for port, tag in tags_per_master(redis_cluster).items():
        with p.raw() as c:
            c.send(cmd("MULTI") + cmd("SET", tag + "a", "1") + cmd("INCR", tag + "n") +
                   cmd("MGET", tag + "a", tag + "n") + cmd("EXEC"))
            assert read_replies(c, 5) == (b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
                                          b"*3\r\n+OK\r\n:1\r\n*2\r\n$1\r\n1\r\n$1\r\n1\r\n")
            # DISCARD throws the queue away.
            c.send(cmd("MULTI") + cmd("SET", tag + "a", "2") + cmd("DISCARD") +
                   cmd("GET", tag + "a"))
            assert read_replies(c, 4) == b"+OK\r\n+QUEUED\r\n+OK\r\n$1\r\n1\r\n"
        assert redis_cluster.by_port(port).command("GET", tag + "n") == b"1"


def test_watch_in_one_slot(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for port, tag in tags_per_master(redis_cluster).items():
        k = tag + "w"
        with p.raw() as c, p.raw() as other:
            # Untouched: EXEC runs.
            assert c.command("WATCH", k) == b"OK"
            c.send(cmd("MULTI") + cmd("SET", k, "mine") + cmd("EXEC"))
            assert read_replies(c, 3) == b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n"
            # Changed by another client of the proxy in between: EXEC returns nil.
            assert c.command("WATCH", k) == b"OK"
            assert other.command("SET", k, "theirs") == b"OK"
            c.send(cmd("MULTI") + cmd("SET", k, "mine2") + cmd("EXEC"))
            assert read_replies(c, 3) == b"+OK\r\n+QUEUED\r\n*-1\r\n"
            # Changed directly on the node in between: the same.
            assert c.command("WATCH", k, tag + "other") == b"OK"
            assert redis_cluster.by_port(port).command("SET", k, "direct") == b"OK"
            c.send(cmd("MULTI") + cmd("SET", k, "mine3") + cmd("EXEC"))
            assert read_replies(c, 3) == b"+OK\r\n+QUEUED\r\n*-1\r\n"
            assert c.command("GET", k) == b"direct"
            # UNWATCH forgets.
            assert c.command("WATCH", k) == b"OK"
            assert other.command("SET", k, "again") == b"OK"
            assert c.command("UNWATCH") == b"OK"
            c.send(cmd("MULTI") + cmd("SET", k, "mine4") + cmd("EXEC"))
            assert read_replies(c, 3) == b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n"


def test_transaction_across_slots_is_refused_at_exec(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for a, b in key_pairs(redis_cluster):
        payload = cmd("MULTI") + cmd("SET", a, "1") + cmd("SET", b, "2") + cmd("EXEC")
        after = cmd("GET", a) + cmd("GET", b) + cmd("EXEC")
        with p.raw() as c:
            c.send(payload + after)
            got = [c.read_reply_raw() for _ in range(7)]
        assert got == [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", CROSSSLOT,
                       b"$-1\r\n", b"$-1\r\n", b"-ERR EXEC without MULTI\r\n"], (a, b)
        # With WATCH first, the same.
        with p.raw() as c:
            c.send(cmd("WATCH", a) + payload)
            assert [c.read_reply_raw() for _ in range(5)] == \
                [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", CROSSSLOT]
    assert redis_cluster.dbsize() == 0
    # Two slots of one node: exactly what that node answers itself.
    _, (a, c2) = key_pairs(redis_cluster)
    payload = cmd("MULTI") + cmd("SET", a, "1") + cmd("SET", c2, "2") + cmd("EXEC") + \
        cmd("GET", a) + cmd("EXEC")
    assert replies_of(p.port, payload, 6) == direct(redis_cluster.node_for_key(a), payload, 6)


def test_crossslot_command_inside_transaction_is_what_a_node_answers(redis_cluster,
                                                                     cluster_proxy):
    """One queued command with keys in two slots: the node refuses it when queued (CROSSSLOT)
    and EXEC then aborts (EXECABORT)."""
    p = cluster_proxy()
    _, (a, c2) = key_pairs(redis_cluster)
    payload = cmd("MULTI") + cmd("SET", a, "1") + cmd("MGET", a, c2) + cmd("EXEC") + \
        cmd("GET", a)
    got = replies_of(p.port, payload, 5)
    assert got == direct(redis_cluster.node_for_key(a), payload, 5)
    assert got == [b"+OK\r\n", b"+QUEUED\r\n", CROSSSLOT,
                   b"-EXECABORT Transaction discarded because of previous errors.\r\n",
                   b"$-1\r\n"]


# ---------------------------------------------------------------------------------------------
# Fan-out over the masters


def test_dbsize_keys_randomkey_flush(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    with p.raw() as c:
        assert c.command("DBSIZE") == 0
        assert c.command("RANDOMKEY") is None
        assert c.command("KEYS", "*") == []
    keys = keys_in_distinct_slots("fan", 300)
    pairs = [x for k in keys for x in (k, "v")]
    with p.raw() as c:
        assert c.command("MSET", *pairs) == b"OK"
        assert c.command("SET", "other:1", "v") == b"OK"
        assert c.command("DBSIZE") == 301
        per_master = [m.command("DBSIZE") for m in redis_cluster.masters()]
        assert sum(per_master) == 301 and all(n > 50 for n in per_master), per_master
        got = c.command("KEYS", "*")
        assert sorted(got) == sorted(k.encode() for k in keys + ["other:1"])
        assert sorted(c.command("KEYS", "fan:1*")) == \
            sorted(k.encode() for k in keys if k.startswith("fan:1"))
        assert c.command("KEYS", "nomatch*") == []
        seen = {c.command("RANDOMKEY") for _ in range(40)}
        assert seen <= set(got) and len(seen) > 3, seen
        assert c.command("FLUSHDB") == b"OK"
        assert c.command("DBSIZE") == 0
        assert redis_cluster.dbsize() == 0
        assert c.command("MSET", *pairs) == b"OK"
        c.send(cmd("FLUSHALL"))
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.command("DBSIZE") == 0
        assert redis_cluster.dbsize() == 0


def test_wait_is_the_smallest_count_over_masters(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    with p.raw() as c:
        keys = keys_in_distinct_slots("wait", 30)
        assert c.command("MSET", *[x for k in keys for x in (k, "v")]) == b"OK"
        c.send(cmd("WAIT", "1", "5000"))
        assert c.read_reply_raw() == b":1\r\n"
        # More replicas than any master has: the count is what every master reached (1).
        t0 = time.monotonic()
        c.send(cmd("WAIT", "2", "300"))
        assert c.read_reply_raw() == b":1\r\n"
        assert time.monotonic() - t0 < 3


def test_scan_returns_every_key_exactly_once(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    keys = keys_in_distinct_slots("scan", 700)
    with p.raw() as c:
        assert c.command("MSET", *[x for k in keys for x in (k, "v")]) == b"OK"
        for i in range(20):
            assert c.command("RPUSH", f"scanlist:{i}", "x") == 1

        def full_scan(*extra):
            out, cursor, rounds = [], b"0", 0
            while True:
                reply = c.command("SCAN", cursor, *extra)
                assert isinstance(reply, list) and len(reply) == 2, reply
                cursor, batch = reply
                assert re.fullmatch(rb"\d+", cursor), cursor
                out += batch
                rounds += 1
                assert rounds < 5000, "SCAN does not end"
                if cursor == b"0":
                    return out, rounds

        got, rounds = full_scan("COUNT", "50")
        expected = [k.encode() for k in keys] + [b"scanlist:%d" % i for i in range(20)]
        assert len(got) == len(set(got)), "SCAN returned a key twice"
        assert sorted(got) == sorted(expected)
        assert rounds >= 3  # it walked more than one master
        got, _ = full_scan("MATCH", "scanlist:*", "COUNT", "100")
        assert sorted(got) == sorted(b"scanlist:%d" % i for i in range(20))
        got, _ = full_scan("TYPE", "list", "COUNT", "1000")
        assert sorted(got) == sorted(b"scanlist:%d" % i for i in range(20))
        # A cursor that no SCAN returned is an error or an end, never a crash; the connection
        # goes on.
        c.send(cmd("SCAN", "notacursor"))
        assert c.read_reply_raw() == b"-ERR invalid cursor\r\n"
        assert c.command("PING") == b"PONG"


# ---------------------------------------------------------------------------------------------
# Scripts


def test_script_load_then_evalsha_on_every_master(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    script = "return {KEYS[1], redis.call('INCRBY', KEYS[1], ARGV[1])}"
    sha = hashlib.sha1(script.encode()).hexdigest()
    for m in redis_cluster.masters():
        m.command("SCRIPT", "FLUSH")
    with p.raw() as c:
        assert c.command("SCRIPT", "LOAD", script) == sha.encode()
        for m in redis_cluster.masters():
            assert m.command("SCRIPT", "EXISTS", sha) == [1], m
        assert c.command("SCRIPT", "EXISTS", sha, "0" * 40) == [1, 0]
        for port, tag in tags_per_master(redis_cluster).items():
            assert c.command("EVALSHA", sha, "1", tag + "n", "5") == [(tag + "n").encode(), 5]
            assert c.command("EVALSHA", sha, "1", tag + "n", "2") == [(tag + "n").encode(), 7]
            assert redis_cluster.by_port(port).command("GET", tag + "n") == b"7"
        # EVAL by its key's slot; without keys on any master.
        for tag in tags_per_master(redis_cluster).values():
            assert c.command("EVAL", "return redis.call('GET', KEYS[1])", "1", tag + "n") == b"7"
        assert c.command("EVAL", "return ARGV[1]", "0", "nokeys") == b"nokeys"
        c.send(cmd("SCRIPT", "FLUSH"))
        assert c.read_reply_raw() == b"+OK\r\n"
        for m in redis_cluster.masters():
            assert m.command("SCRIPT", "EXISTS", sha) == [0], m
        assert c.command("SCRIPT", "EXISTS", sha) == [0]
        payload = cmd("EVALSHA", sha, "1", "anykey", "1")
        c.send(payload)
        assert c.read_reply_raw() == direct(redis_cluster.node_for_key("anykey"), payload)[0] \
            == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"


FUNCTIONS = """#!lua name=bptest
redis.register_function('bp_get', function(keys, args) return redis.call('GET', keys[1]) end)
redis.register_function{function_name='bp_echo', flags={'no-writes'},
                        callback=function(keys, args) return args[1] end}
"""


def test_fcall_by_the_slot_of_its_keys(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for m in redis_cluster.masters():  # FUNCTION LOAD is not a fan-out: load on every master
        assert m.command("FUNCTION", "LOAD", "REPLACE", FUNCTIONS) == b"bptest"
    try:
        with p.raw() as c:
            for port, tag in tags_per_master(redis_cluster).items():
                assert redis_cluster.by_port(port).command("SET", tag + "f", port) == b"OK"
                assert c.command("FCALL", "bp_get", "1", tag + "f") == str(port).encode()
                assert c.command("FCALL_RO", "bp_echo", "1", tag + "f", "ro") == b"ro"
            assert c.command("FCALL", "bp_echo", "0", "nokeys") == b"nokeys"
    finally:
        for m in redis_cluster.masters():
            m.command("FUNCTION", "FLUSH")


# ---------------------------------------------------------------------------------------------
# Blocking commands


def test_blpop_woken_by_a_push_from_another_client(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for tag in tags_per_master(redis_cluster).values():
        with p.raw(timeout=10) as waiter, p.raw() as pusher:
            waiter.send(cmd("BLPOP", tag + "q1", tag + "q2", "8"))
            time.sleep(0.2)
            t0 = time.monotonic()
            assert pusher.command("LPUSH", tag + "q2", "job") == 1
            assert waiter.read_reply() == [(tag + "q2").encode(), b"job"]
            assert time.monotonic() - t0 < 1.5
            # BLMOVE within one slot; the waiter's connection goes on normally.
            waiter.send(cmd("BLMOVE", tag + "src", tag + "dst", "LEFT", "RIGHT", "8"))
            time.sleep(0.2)
            assert pusher.command("RPUSH", tag + "src", "moved") == 1
            assert waiter.read_reply() == b"moved"
            assert waiter.command("LRANGE", tag + "dst", "0", "-1") == [b"moved"]
            # A timeout answers nil.
            waiter.send(cmd("BLPOP", tag + "empty", "0.1"))
            assert waiter.read_reply_raw() == b"*-1\r\n"


def test_many_blocked_clients_on_all_masters(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    keys = keys_in_distinct_slots("block", 30)
    waiters = [p.raw(timeout=10) for _ in keys]
    try:
        for w, k in zip(waiters, keys):
            w.send(cmd("BRPOP", k, "8"))
        time.sleep(0.3)
        with p.raw() as pusher:
            for k in keys:
                assert pusher.command("LPUSH", k, "v-" + k) == 1
        for w, k in zip(waiters, keys):
            assert w.read_reply() == [k.encode(), ("v-" + k).encode()]
    finally:
        for w in waiters:
            w.close()


# ---------------------------------------------------------------------------------------------
# Pub/sub


def test_subscribe_gets_messages_published_anywhere(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    with p.raw(timeout=5) as sub, p.raw() as pub:
        sub.send(cmd("SUBSCRIBE", "news"))
        assert sub.read_reply_raw() == b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
        sub.send(cmd("PSUBSCRIBE", "ev.*"))
        assert sub.read_reply_raw() == b"*3\r\n$10\r\npsubscribe\r\n$4\r\nev.*\r\n:2\r\n"
        time.sleep(0.1)
        # Directly on every node, masters and replicas.
        for i, node in enumerate(redis_cluster.live_nodes()):
            assert isinstance(node.command("PUBLISH", "news", f"direct-{i}"), int)
            assert sub.read_reply() == [b"message", b"news", b"direct-%d" % i], node
        # Through the proxy.
        for i in range(10):
            assert isinstance(pub.command("PUBLISH", "news", f"proxied-{i}"), int)
        for i in range(10):
            assert sub.read_reply() == [b"message", b"news", b"proxied-%d" % i]
        node = redis_cluster.masters()[-1]
        node.command("PUBLISH", "ev.x", "pattern")
        assert sub.read_reply() == [b"pmessage", b"ev.*", b"ev.x", b"pattern"]
        sub.send(cmd("UNSUBSCRIBE"))
        assert sub.read_reply_raw() == b"*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:1\r\n"
        sub.send(cmd("PUNSUBSCRIBE"))
        assert sub.read_reply_raw() == b"*3\r\n$12\r\npunsubscribe\r\n$4\r\nev.*\r\n:0\r\n"
        assert sub.command("SET", "after", "pubsub") == b"OK"
        assert redis_cluster.node_for_key("after").command("GET", "after") == b"pubsub"


def test_ssubscribe_and_spublish_by_slot(redis_cluster, cluster_proxy):
    p = cluster_proxy()
    for port, tag in tags_per_master(redis_cluster).items():
        node = redis_cluster.by_port(port)
        chan = tag + "chan"
        with p.raw(timeout=5) as sub, p.raw() as pub:
            sub.send(cmd("SSUBSCRIBE", chan, tag + "other"))
            assert sub.read_reply() == [b"ssubscribe", chan.encode(), 1]
            assert sub.read_reply() == [b"ssubscribe", (tag + "other").encode(), 2]
            # Through the proxy: the node of the slot has exactly this subscriber.
            assert pub.command("SPUBLISH", chan, "via-proxy") == 1
            assert sub.read_reply() == [b"smessage", chan.encode(), b"via-proxy"]
            # Directly on the node.
            assert node.command("SPUBLISH", chan, "direct") == 1
            assert sub.read_reply() == [b"smessage", chan.encode(), b"direct"]
            assert pub.command("SPUBLISH", tag + "nobody", "x") == 0
            sub.send(cmd("SUNSUBSCRIBE", chan))
            assert sub.read_reply() == [b"sunsubscribe", chan.encode(), 1]
            assert pub.command("SPUBLISH", chan, "unheard") == 0


# ---------------------------------------------------------------------------------------------
# CLUSTER commands: the proxy as a one-node cluster (also with a standalone upstream, when
# --cluster-view asks for it)


@pytest.fixture(params=["cluster", "standalone"])
def any_proxy(request):
    if request.param == "cluster":
        return request.getfixturevalue("cluster_proxy")
    start = request.getfixturevalue("proxy")
    return lambda *args: start("--cluster-view", "yes", *args)


def as_map(flat):
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def test_cluster_slots_shards_nodes_myid(any_proxy):
    p = any_proxy()
    with p.raw() as c:
        myid = c.command("CLUSTER", "MYID")
        assert re.fullmatch(rb"[0-9a-f]{40}", myid), myid
        assert c.command("CLUSTER", "MYID") == myid  # stable

        slots = c.command("CLUSTER", "SLOTS")
        assert len(slots) == 1, slots
        start, end, node = slots[0][:3]
        assert (start, end) == (0, SLOTS - 1) and len(slots[0]) == 3, slots  # no replicas
        assert node[:3] == [b"127.0.0.1", p.port, myid], node

        shards = c.command("CLUSTER", "SHARDS")
        assert len(shards) == 1, shards
        shard = as_map(shards[0])
        assert shard[b"slots"] == [0, SLOTS - 1]
        assert len(shard[b"nodes"]) == 1
        n = as_map(shard[b"nodes"][0])
        assert n[b"id"] == myid and n[b"port"] == p.port
        assert n[b"ip"] == b"127.0.0.1" and n[b"endpoint"] == b"127.0.0.1"
        assert n[b"role"] == b"master" and n[b"health"] == b"online"

        text = c.command("CLUSTER", "NODES")
        assert text.endswith(b"\n") and text.count(b"\n") == 1, text
        (line,) = parse_cluster_nodes(text)
        assert line.id == myid.decode() and line.port == p.port
        assert text.split(b" ")[1].startswith(b"127.0.0.1:%d@" % p.port), text
        assert line.flags == {"myself", "master"} and line.master_id is None
        assert line.link == "connected"
        assert line.slots == set(range(SLOTS))
        assert text.rstrip(b"\n").endswith(b" connected 0-16383"), text

        info = parse_info(c.command("CLUSTER", "INFO"))
        assert info["cluster_state"] == "ok"
        for field, value in (("cluster_slots_assigned", "16384"), ("cluster_slots_ok", "16384"),
                             ("cluster_slots_pfail", "0"), ("cluster_slots_fail", "0"),
                             ("cluster_known_nodes", "1"), ("cluster_size", "1")):
            assert info[field] == value, (field, info)


def test_cluster_keyslot_matches_a_node(any_proxy, redis_cluster):
    p = any_proxy()
    node = redis_cluster.masters()[0]
    keys = ["", "a", "{", "}", "{}", "{}a", "{a}", "a{b}c", "{{x}}", "{user1000}.following",
            "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "\x00\xff\x80binary", "k" * 1000,
            "key:12345", "\u00e9t\u00e9"]
    payload = b"".join(cmd("CLUSTER", "KEYSLOT", k) for k in keys)
    got = replies_of(p.port, payload, len(keys))
    assert got == direct(node, payload, len(keys))
    assert got == [b":%d\r\n" % key_slot(k) for k in keys]


def test_cluster_subcommand_errors_match_a_node(any_proxy, redis_cluster):
    p = any_proxy()
    node = redis_cluster.masters()[0]
    for args in (("CLUSTER", "KEYSLOT"), ("CLUSTER", "KEYSLOT", "a", "b"),
                 ("CLUSTER", "MYID", "x"), ("CLUSTER", "SLOTS", "x"), ("CLUSTER", "SHARDS", "x"),
                 ("CLUSTER", "NODES", "x"), ("CLUSTER", "INFO", "x"), ("CLUSTER", "NOSUCH"),
                 ("CLUSTER",)):
        with p.raw() as c:
            c.send(cmd(*args))
            assert c.read_reply_raw() == direct(node, cmd(*args))[0], args
            assert c.command("PING") == b"PONG"


def test_countkeysinslot_and_getkeysinslot_ask_the_slots_node(redis_cluster, cluster_proxy):
    """The proxy serves every slot, so it answers for any slot with the keys of its node."""
    p = cluster_proxy()
    for port, tag in tags_per_master(redis_cluster).items():
        node = redis_cluster.by_port(port)
        for i in range(3):
            assert node.command("SET", f"{tag}k{i}", "v") == b"OK"
        slot = key_slot(tag)
        with p.raw() as c:
            assert c.command("CLUSTER", "COUNTKEYSINSLOT", slot) == 3
            assert sorted(c.command("CLUSTER", "GETKEYSINSLOT", slot, 10)) == \
                [f"{tag}k{i}".encode() for i in range(3)]
            assert c.command("CLUSTER", "COUNTKEYSINSLOT", (slot + 1) % SLOTS) == \
                redis_cluster.node_for_slot((slot + 1) % SLOTS).command(
                    "CLUSTER", "COUNTKEYSINSLOT", (slot + 1) % SLOTS)


def test_cluster_replies_show_the_announced_address(cluster_proxy):
    p = cluster_proxy("--announce-ip", "127.0.0.2", "--announce-port", "7777")
    with p.raw() as c:
        myid = c.command("CLUSTER", "MYID")
        assert c.command("CLUSTER", "SLOTS")[0][2][:3] == [b"127.0.0.2", 7777, myid]
        shard = as_map(c.command("CLUSTER", "SHARDS")[0])
        node = as_map(shard[b"nodes"][0])
        assert (node[b"ip"], node[b"port"]) == (b"127.0.0.2", 7777)
        assert c.command("CLUSTER", "NODES").split(b" ")[1].startswith(b"127.0.0.2:7777@")


def test_local_commands_answered_by_the_proxy(cluster_proxy):
    p = cluster_proxy()
    with p.raw() as c:
        c.send(cmd("PING") + cmd("PING", "hi") + cmd("ECHO", "echoed") +
               cmd("CLIENT", "SETNAME", "cl-routing") + cmd("CLIENT", "GETNAME"))
        assert read_replies(c, 5) == (b"+PONG\r\n$2\r\nhi\r\n$6\r\nechoed\r\n+OK\r\n"
                                      b"$10\r\ncl-routing\r\n")
        assert isinstance(c.command("CLIENT", "ID"), int)
        reply = c.command("AUTH", "nopass")
        assert isinstance(reply, Err), reply
