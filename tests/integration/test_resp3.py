"""RESP3 for clients (HELLO 3), byte for byte against the oracle: the same commands sent straight
to the redis-server on a RESP3 connection of its own. Normalised, where compared, is only what
must differ: client ids (the proxy's own), addresses and ports, clocks (INFO's times).

- HELLO: the 7-entry map (id = CLIENT ID), HELLO 2 back to the array, AUTH / SETNAME, Redis's
  errors; behind a sharding proxy -NOPROTO, and the client stays on RESP2;
- every type passes through: DEBUG PROTOCOL's (big number, verbatim, attribute, booleans,
  double, null, map, set, push), a long pipeline of maps, sets, doubles, nulls (hash commands
  run in a script included) with HELLO 2/3 switching, while holding a connection (SELECT,
  WATCH, CLIENT TRACKING) and inside MULTI/EXEC;
- pub/sub: messages are `>` pushes in Redis's order among the replies of the commands the
  subscriber keeps running; its connection is its own, and never serves another client;
- CLIENT TRACKING: default mode, own writes (hash writes track nothing), BCAST, OPTIN, OPTOUT,
  NOLOOP, REDIRECT (to a RESP2 subscriber of __redis__:invalidate, to a RESP3 client), two
  trackers never get each other's keys, no invalidation names an internal key;
- CLIENT INFO / LIST and INFO are verbatim strings, CLIENT GETNAME's null is `_`;
- RESP2 clients (raw, redis-py) keep getting RESP2 bytes while RESP3 clients run;
- redis-cli -3 prints the same through the proxy as against Redis.

Pushes are read without sleeping: `sync` sends PING once the command before has its reply and
reads up to the PING's reply; Redis writes a push before it reads that PING. redis-py 4.3 has no
protocol=3: RESP3 is spoken on raw sockets, redis-py is a RESP2 client here. BF.* and CMS.*
RESP3 replies are checked in test_sketch_resp3.py.
"""

import re
import subprocess
import threading

import pytest

from bp_helpers import HOST, RawConn, encode_command as cmd, wait_until

PONG_SUBSCRIBED2 = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"  # PING of a RESP2 subscriber
NOPROTO_SHARDING = b"-NOPROTO sorry, this protocol version is not supported\r\n"


@pytest.fixture
def debug_redis(redis_factory):
    return redis_factory(extra_args=("--enable-debug-command", "yes"))


@pytest.fixture
def rp(proxy, debug_redis):
    return proxy(upstream=debug_redis.address)


class Conn(RawConn):
    """A raw connection whose call() returns the raw reply."""

    def call(self, *args):
        self.send(cmd(*args))
        return self.read_reply_raw()


def connect(port, resp=3):
    c = Conn(port)
    if resp == 3:
        hello = c.call("HELLO", "3")
        assert hello.startswith(b"%7\r\n"), hello
    return c


def sync(c):
    """All that `c` receives up to the reply of a PING sent now, pushes before it included."""
    c.send(cmd("PING"))
    out = b""
    while True:
        value = c.read_reply_raw()
        out += value
        if value in (b"+PONG\r\n", PONG_SUBSCRIBED2):
            return out


def reply_and_sync(c):
    """The reply of the command just sent on `c` (and the pushes before it), then sync(c). The
    PING goes after the reply: Redis writes BCAST invalidations after the command's iteration,
    which a PING read with the command would precede."""
    out = b""
    while True:
        value = c.read_reply_raw()
        out += value
        # Subscribe confirmations are pushes in RESP3, but they answer the command.
        if value[:1] != b">" or re.match(rb">3\r\n\$\d+\r\n[ps]?(un)?subscribe\r\n", value):
            return out + sync(c)


# HELLO's "modules" through the proxy: the module "bf" it answers for (test_module_face.py),
# which the plain redis-server these tests compare with has not loaded.
BF_MODULE = (b"$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:999999\r\n$4\r\npath\r\n"
             b"$10\r\nbloomproxy\r\n$4\r\nargs\r\n*0\r\n")


def normalise(raw):
    # HELLO's id is the proxy's own client id, not the upstream's; its modules, the module the
    # proxy shows.
    raw = re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"$2\r\nid\r\n:<id>\r\n", raw)
    for head in (b"*8\r\n", b"%4\r\n"):
        raw = raw.replace(b"$7\r\nmodules\r\n*1\r\n" + head + BF_MODULE, b"$7\r\nmodules\r\n*0\r\n")
    return raw


def flushall(server):
    with RawConn(server.port) as c:
        assert c.command("FLUSHALL") == b"OK"


def pipeline(port, cmds, resp=3):
    """Sends `cmds` in one write on a new connection (after HELLO 3 with resp=3)."""
    with connect(port, resp) as c:
        c.send(b"".join(cmd(*a) for a in cmds))
        return [normalise(c.read_reply_raw()) for _ in cmds]


def differences(labels, got, want):
    return "\n".join(f"  {lab}:\n    proxy {g[:300]!r}\n    redis {w[:300]!r}"
                     for lab, g, w in zip(labels, got, want) if g != w)


def assert_like_redis(port, server, cmds, resp=3):
    """`cmds` pipelined through the proxy and straight to Redis, each after FLUSHALL: the same
    replies (Redis first, so nothing the proxy may leave upstream can change its replies)."""
    flushall(server)
    want = pipeline(server.port, cmds, resp)
    flushall(server)
    got = pipeline(port, cmds, resp)
    diff = differences(cmds, got, want)
    assert not diff, "replies differ from Redis's:\n" + diff
    return got


def play(port, protos, steps):
    """Runs `steps` on one connection per entry of `protos` (its RESP version): (i, *command)
    sends the command on connection i and records what it gets up to a PING's reply after the
    command's; (i,) only syncs connection i; "<id:j>" in a command is connection j's CLIENT ID.
    Ends with a sync of every connection. Returns the records."""
    conns = [connect(port, p) for p in protos]
    try:
        ids = [c.call("CLIENT", "ID")[1:-2].decode() for c in conns]
        out = []
        for i, *args in steps:
            args = [ids[int(a[4:-1])] if a.startswith("<id:") else a for a in args]
            if args:
                conns[i].send(cmd(*args))
            out.append(reply_and_sync(conns[i]) if args else sync(conns[i]))
        return out + [sync(c) for c in conns]
    finally:
        for c in conns:
            c.close()


def assert_play_like_redis(port, server, protos, steps):
    flushall(server)
    want = play(server.port, protos, steps)
    flushall(server)
    got = play(port, protos, steps)
    labels = [str(s) for s in steps] + [f"end, connection {i}" for i in range(len(protos))]
    diff = differences(labels, got, want)
    assert not diff, "what the clients received differs from Redis's:\n" + diff
    return got


def verbatim_text(raw):
    """The text of a verbatim string `=N\\r\\ntxt:...\\r\\n`, its length checked."""
    m = re.match(rb"=(\d+)\r\ntxt:", raw)
    assert m, raw[:100]
    assert len(raw) == m.end() - 4 + int(m.group(1)) + 2 and raw.endswith(b"\r\n"), raw[:100]
    return raw[m.end():-2]


# ---------------------------------------------------------------------------------------------
# HELLO


def test_hello_3_map_and_switching_back(rp, debug_redis):
    with RawConn(debug_redis.port) as d:
        version = re.search(rb"redis_version:(\S+)", d.command("INFO", "server")).group(1)
    with connect(rp.port, resp=2) as c:
        reply = c.call("HELLO", "3")
        client_id = c.call("CLIENT", "ID")
        assert reply == (b"%%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$%d\r\n%s\r\n"
                         b"$5\r\nproto\r\n:3\r\n$2\r\nid\r\n%s$4\r\nmode\r\n$10\r\nstandalone\r\n"
                         b"$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*1\r\n%%4\r\n%s"
                         % (len(version), version, client_id, BF_MODULE))
        assert c.call("GET", "nokey") == b"_\r\n"
        assert c.call("HELLO", "2").startswith(b"*14\r\n$6\r\nserver\r\n")
        assert c.call("GET", "nokey") == b"$-1\r\n"
        assert c.call("CLIENT", "ID") == client_id
    cmds = [("HELLO", "3"), ("GET", "nokey"), ("HELLO",), ("HELLO", "2"), ("GET", "nokey"),
            ("HELLO", "3", "SETNAME", "nm"), ("CLIENT", "GETNAME"), ("GET", "nokey"),
            ("HELLO", "4"), ("HELLO", "1"), ("HELLO", "0"), ("HELLO", "abc"), ("HELLO", "3.0"),
            ("HELLO", "99999999999999999999"), ("HELLO", "3", "SETNAME", "bad name"),
            ("HELLO", "3", "SETNAME"), ("HELLO", "3", "AUTH", "x"), ("HELLO", "3", "FOO"),
            ("HELLO", "3", "AUTH", "default", "anything"), ("GET", "nokey")]
    got = assert_like_redis(rp.port, debug_redis, cmds, resp=2)
    assert got[8] == b"-NOPROTO unsupported protocol version\r\n"
    assert got[11] == b"-ERR Protocol version is not an integer or out of range\r\n"


def test_hello_3_auth_like_redis(proxy, redis_factory):
    reference = redis_factory(password="s3cret")
    p = proxy("--requirepass", "s3cret")
    cmds = [("HELLO", "3"), ("GET", "k"), ("HELLO", "3", "AUTH", "default", "wrong"), ("GET", "k"),
            ("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "cache-1"),
            ("CLIENT", "GETNAME"), ("GET", "k"), ("HELLO", "2", "AUTH", "default", "wrong"),
            ("GET", "k"), ("HELLO", "2", "AUTH", "default", "s3cret"), ("GET", "k")]
    got = pipeline(p.port, cmds, resp=2)
    want = pipeline(reference.port, cmds, resp=2)
    assert got == want, differences(cmds, got, want)
    assert got[4].startswith(b"%7\r\n") and got[5:7] == [b"$7\r\ncache-1\r\n", b"_\r\n"]
    assert got[8:] == [b"_\r\n", got[9], b"$-1\r\n"] and got[9].startswith(b"*14\r\n")


def test_hello_3_behind_a_sharding_proxy_is_refused(sharding_proxy):
    p = sharding_proxy()
    with connect(p.port, resp=2) as c:
        assert c.call("HELLO", "3") == NOPROTO_SHARDING
        assert c.call("HELLO", "3", "SETNAME", "x") == NOPROTO_SHARDING
        assert c.call("GET", "nokey") == b"$-1\r\n"
        info = c.call("CLIENT", "INFO")
        assert info.startswith(b"$") and b" resp=2" in info and b" name= " in info
        assert c.call("HELLO", "2").startswith(b"*14\r\n")
        assert c.call("CLIENT", "GETNAME") == b"$-1\r\n"


# ---------------------------------------------------------------------------------------------
# Every type, as Redis sends it


def test_debug_protocol_types_pass_through(rp, debug_redis):
    kinds = ["string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib",
             "verbatim", "true", "false"]
    got = assert_like_redis(rp.port, debug_redis, [("DEBUG", "PROTOCOL", k) for k in kinds])
    reply = dict(zip(kinds, got))
    assert reply["double"] == b",3.141\r\n"
    assert reply["bignum"] == b"(1234567999999999999999999999999999999\r\n"
    assert reply["null"] == b"_\r\n"
    assert reply["set"] == b"~3\r\n:0\r\n:1\r\n:2\r\n"
    assert reply["map"] == b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"
    assert reply["attrib"].startswith(b"|1\r\n$14\r\nkey-popularity\r\n")
    assert reply["verbatim"] == b"=29\r\ntxt:This is a verbatim\nstring\r\n"
    assert (reply["true"], reply["false"]) == (b"#t\r\n", b"#f\r\n")
    # A push, then DEBUG's reply.
    pushed = []
    for port in (debug_redis.port, rp.port):
        with connect(port) as c:
            c.send(cmd("DEBUG", "PROTOCOL", "push"))
            pushed.append(sync(c))
    assert pushed[1] == pushed[0] == (b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\n"
                                      b"Some real reply following the push reply\r\n+PONG\r\n")


PIPELINE = [
    ("SET", "s", "v"), ("GET", "s"), ("GET", "nokey"), ("HSET", "h", "a", "1", "b", "2"),
    ("HGETALL", "h"), ("HGETALL", "nokey"), ("HRANDFIELD", "h", "5", "WITHVALUES"),
    ("HRANDFIELD", "nokey", "-2", "WITHVALUES"), ("HMGET", "h", "a", "zz"), ("HGET", "h", "zz"),
    ("HKEYS", "h"), ("HVALS", "h"), ("HLEN", "h"), ("HEXISTS", "h", "a"),
    ("HSTRLEN", "h", "a"), ("HSETNX", "h", "a", "9"), ("HINCRBYFLOAT", "h", "c", "1.5"),
    ("HSCAN", "h", "0"), ("SADD", "st", "x", "y"), ("SMEMBERS", "st"), ("SMEMBERS", "nokey"),
    ("SISMEMBER", "st", "x"), ("SMISMEMBER", "st", "x", "q"), ("ZADD", "z", "1", "a", "2.5", "b"),
    ("ZSCORE", "z", "b"), ("ZSCORE", "z", "q"), ("ZINCRBY", "z", "2", "a"),
    ("ZMSCORE", "z", "b", "q"), ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
    ("ZUNION", "1", "z", "WITHSCORES"),
    ("ZPOPMIN", "z"), ("ZRANDMEMBER", "z", "1", "WITHSCORES"), ("INCRBYFLOAT", "f", "0.5"),
    ("GEOADD", "g", "13.36", "38.11", "p", "15.08", "37.50", "q"), ("GEODIST", "g", "p", "q"),
    ("GEOPOS", "g", "p", "zz"), ("LPUSH", "l", "1", "2"), ("LRANGE", "l", "0", "-1"),
    ("LPOS", "l", "9"), ("LMPOP", "1", "nokey", "LEFT"), ("XADD", "x", "1-1", "f", "v"),
    ("XRANGE", "x", "-", "+"), ("XINFO", "STREAM", "x"), ("XGROUP", "CREATE", "x", "g", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"), ("XPENDING", "x", "g"),
    ("XREAD", "STREAMS", "x", "0"), ("TYPE", "h"), ("OBJECT", "ENCODING", "h"),
    ("CONFIG", "GET", "maxmemory*"), ("COMMAND", "INFO", "get", "hgetall"),
    ("COMMAND", "DOCS", "get"), ("ACL", "GETUSER", "default"), ("ACL", "WHOAMI"),
    ("CLIENT", "TRACKINGINFO"), ("PUBSUB", "NUMSUB", "ch"), ("SCRIPT", "EXISTS", "abc"),
    ("EVAL", "return {1, 2, {3}}", "0"),
    ("EVAL", "redis.setresp(3); return redis.call('hgetall', KEYS[1])", "1", "h"),
    ("DEBUG", "PROTOCOL", "bignum"), ("MEMORY", "USAGE", "nokey"), ("SELECT", "1"),
    ("GET", "s"), ("HGETALL", "h"), ("SELECT", "0"), ("HELLO", "2"), ("GET", "nokey"),
    ("HGETALL", "h"), ("ZSCORE", "z", "b"), ("SMEMBERS", "st"), ("HELLO", "3"), ("GET", "nokey"),
    ("ZSCORE", "z", "b"), ("ECHO", "e"), ("PING",),
    ("DEL", "s", "h", "st", "z", "f", "l", "x", "g")]


def test_pipeline_of_every_type_like_redis(rp, debug_redis):
    replies = assert_like_redis(rp.port, debug_redis, PIPELINE)
    got = {a: replies[PIPELINE.index(a)] for a in PIPELINE}  # the first of each
    assert got[("HGETALL", "h")] == b"%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    assert got[("HRANDFIELD", "h", "5", "WITHVALUES")].startswith(b"*2\r\n*2\r\n$1\r\na\r\n")
    assert got[("SMEMBERS", "nokey")] == b"~0\r\n"
    assert got[("ZSCORE", "z", "q")] == b"_\r\n"
    assert got[("ZINCRBY", "z", "2", "a")] == b",3\r\n"
    assert got[("INCRBYFLOAT", "f", "0.5")] == b"$3\r\n0.5\r\n"  # a bulk string in RESP3 too
    assert got[("CONFIG", "GET", "maxmemory*")].startswith(b"%")


def test_hello_switch_while_holding_a_connection_like_redis(rp, debug_redis):
    assert_like_redis(rp.port, debug_redis, [
        ("SELECT", "1"), ("GET", "nokey"), ("HELLO", "2"), ("GET", "nokey"), ("HGETALL", "nokey"),
        ("SELECT", "0"), ("GET", "nokey"), ("HELLO", "3"), ("GET", "nokey"), ("WATCH", "w"),
        ("HELLO", "2"), ("GET", "nokey"), ("MULTI",), ("GET", "nokey"), ("HGETALL", "w"),
        ("EXEC",), ("HELLO", "3"), ("CLIENT", "TRACKING", "ON"), ("GET", "t"), ("HELLO", "2"),
        ("GET", "nokey"), ("HELLO", "3"), ("ZSCORE", "t", "m"), ("CLIENT", "TRACKING", "OFF"),
        ("DEBUG", "PROTOCOL", "double"), ("HELLO", "2"), ("DEBUG", "PROTOCOL", "double")])


def test_transaction_replies_like_redis(rp, debug_redis):
    # Hash commands run in a script inside MULTI too: EXEC's elements must be RESP3's.
    assert_like_redis(rp.port, debug_redis, [
        ("HSET", "h", "a", "1"), ("MULTI",), ("GET", "nokey"), ("HGETALL", "h"),
        ("HGETALL", "nokey"), ("HRANDFIELD", "h", "3", "WITHVALUES"), ("ZADD", "z", "1.5", "m"),
        ("ZSCORE", "z", "m"), ("SMEMBERS", "nokey"), ("CLIENT", "GETNAME"), ("EXEC",)])


def test_hello_inside_multi_like_redis(rp, debug_redis):
    # HELLO switches at once inside EXEC, for the rest of EXEC's reply and after it (hash
    # commands, which run as scripts, included); a refused HELLO switches nothing.
    assert_like_redis(rp.port, debug_redis, [
        ("HSET", "h", "a", "1"), ("MULTI",), ("HGETALL", "h"), ("HELLO", "2"), ("GET", "nokey"),
        ("HGETALL", "h"), ("EXEC",), ("GET", "nokey"), ("HGETALL", "nokey"), ("MULTI",),
        ("HELLO", "3"), ("GET", "nokey"), ("HGETALL", "h"), ("HELLO", "4"), ("EXEC",),
        ("GET", "nokey"), ("HGETALL", "h"), ("MULTI",), ("HELLO", "2"), ("DISCARD",),
        ("GET", "nokey")])


# ---------------------------------------------------------------------------------------------
# Pushes: pub/sub


def test_pubsub_messages_are_pushes_in_order(rp, debug_redis):
    got = assert_play_like_redis(rp.port, debug_redis, [3, 3, 2], [
        (0, "SUBSCRIBE", "ch", "ch2"), (1, "PUBLISH", "ch", "hello"), (0, "SET", "k", "v"),
        (0, "GET", "k"), (2, "PUBLISH", "ch2", "x"), (0, "HGETALL", "nokey"),
        (0, "PSUBSCRIBE", "c*"), (1, "PUBLISH", "ch", "y"), (0,), (0, "UNSUBSCRIBE", "ch"),
        (1, "PUBLISH", "ch", "z"), (0, "PUNSUBSCRIBE"), (0, "UNSUBSCRIBE"),
        (1, "PUBLISH", "ch2", "gone"), (0, "GET", "k")])
    assert got[2] == b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n+OK\r\n+PONG\r\n"


def test_resp3_subscriber_with_client_reply_off(rp, debug_redis):
    # RESP3 allows every command in pub/sub mode; CLIENT REPLY OFF there silences replies but
    # not pushes (Redis's unit/pubsub "PubSub messages with CLIENT REPLY OFF").
    def run(port):
        with connect(port) as sub, connect(port) as pub:
            sub.send(cmd("CLIENT", "REPLY", "OFF") + cmd("SUBSCRIBE", "channel"))
            got = [sub.read_reply_raw()]
            sub.send(cmd("PSUBSCRIBE", "ch*") + cmd("CLIENT", "REPLY", "OFF") + cmd("GET", "x"))
            got.append(sub.read_reply_raw())
            got.append(pub.call("PUBLISH", "channel", "hello"))
            got += [sub.read_reply_raw(), sub.read_reply_raw()]
            sub.send(cmd("UNSUBSCRIBE", "channel") + cmd("CLIENT", "REPLY", "ON") + cmd("GET", "x"))
            got += [sub.read_reply_raw() for _ in range(3)]
            return got
    flushall(debug_redis)
    want = run(debug_redis.port)
    got = run(rp.port)
    assert got == want
    assert want[-2:] == [b"+OK\r\n", b"_\r\n"], want


def test_resp3_subscriber_keeps_its_connection(rp, debug_redis):
    """A subscriber's upstream connection is its own while it is subscribed, and afterwards no
    other client's: nobody else ever gets its messages."""
    subscribed = b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
    with connect(debug_redis.port) as direct:
        assert direct.call("SUBSCRIBE", "ch") == subscribed
        info = verbatim_text(direct.call("CLIENT", "INFO"))
        assert b" flags=P " in info and b" sub=1 " in info, info
    with connect(rp.port) as sub, connect(rp.port) as other, connect(rp.port, 2) as pub:
        assert sub.call("SUBSCRIBE", "ch") == subscribed
        assert other.call("SELECT", "1") == b"+OK\r\n"  # takes a connection of its own
        assert pub.call("PUBLISH", "ch", "m") == b":1\r\n"
        assert sync(other) == b"+PONG\r\n"
        assert sync(sub) == b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n+PONG\r\n"
        info = verbatim_text(sub.call("CLIENT", "INFO"))
        assert b" flags=P " in info and b" sub=1 " in info, info

    def subscribed_upstream():
        with RawConn(debug_redis.port) as d:
            return b" sub=1 " in d.command("CLIENT", "LIST")
    wait_until(lambda: not subscribed_upstream(), 5, what="no subscribed upstream connection")
    with connect(rp.port) as again:
        assert again.call("SUBSCRIBE", "ch") == subscribed


# ---------------------------------------------------------------------------------------------
# Pushes: CLIENT TRACKING

TRACKING = {
    "default": ([3, 3], [
        (0, "CLIENT", "TRACKING", "ON"), (0, "SET", "k1", "a"), (0, "GET", "k1"),
        (1, "SET", "k1", "b"), (0,), (1, "SET", "k1", "c"), (0,),
        # Its own writes of keys it has not read track nothing (hash writes run in a script).
        (0, "HSET", "h", "f", "v"), (0, "HINCRBY", "h", "n", "1"), (0, "HDEL", "h", "f"),
        (0, "HSETNX", "h", "g", "1"), (0, "SET", "k2", "x"), (1, "SET", "k2", "y"),
        (1, "HSET", "h", "f", "w"), (1, "DEL", "h"), (0,),
        # Reads do, hash reads included; its own write then invalidates too.
        (0, "HGET", "h", "f"), (0, "HGETALL", "h2"), (0, "MGET", "k2", "k3"),
        (1, "HSET", "h", "f", "z"), (1, "HSET", "h2", "a", "1"), (1, "MSET", "k2", "1", "k3", "2"),
        (0,), (0, "GET", "k1"), (0, "SET", "k1", "own"), (0, "FLUSHDB")]),
    # Key commands that run as a script (they may act on a filter) look at the name's markers
    # without a read: like Redis, a client does not track a key it only wrote.
    "own key commands": ([3, 3], [
        (0, "CLIENT", "TRACKING", "ON"), (0, "SET", "a", "1"), (0, "SET", "b", "2"),
        (0, "PEXPIRE", "a", "100000"), (0, "PERSIST", "a"), (0, "EXPIRE", "b", "100"),
        (0, "COPY", "a", "c"), (0, "RENAME", "c", "d"), (0, "RENAMENX", "d", "e"),
        (0, "DEL", "e"), (0, "UNLINK", "b"), (1, "SET", "a", "2"), (1, "SET", "b", "3"), (0,),
        (0, "GET", "a"), (0, "PEXPIRE", "a", "100000"), (1, "SET", "b", "4"), (0,)]),
    "bcast": ([3, 3], [
        (0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p", "PREFIX", "x:"),
        (1, "SET", "p1", "a"), (1, "SET", "q1", "a"), (1, "HSET", "ph", "f", "1"),
        (1, "SET", "x:1", "1"), (0, "SET", "p2", "x"), (1, "MSET", "p3", "1", "p4", "2")]),
    "optin": ([3, 3], [
        (0, "CLIENT", "TRACKING", "ON", "OPTIN"), (0, "GET", "a"), (0, "CLIENT", "CACHING", "yes"),
        (0, "GET", "b"), (0, "HGET", "hb", "f"), (0, "CLIENT", "CACHING", "yes"),
        (0, "HGET", "hc", "f"), (1, "SET", "a", "1"), (1, "SET", "b", "1"),
        (1, "HSET", "hb", "f", "1"), (1, "HSET", "hc", "f", "1")]),
    "optout": ([3, 3], [
        (0, "CLIENT", "TRACKING", "ON", "OPTOUT"), (0, "GET", "a"), (0, "CLIENT", "CACHING", "no"),
        (0, "GET", "b"), (0, "CLIENT", "CACHING", "no"), (0, "HGET", "hc", "f"),
        (0, "HGET", "hd", "f"), (1, "SET", "a", "1"), (1, "SET", "b", "1"),
        (1, "HSET", "hc", "f", "1"), (1, "HSET", "hd", "f", "1")]),
    "noloop": ([3, 3], [
        (0, "CLIENT", "TRACKING", "ON", "NOLOOP"), (0, "GET", "a"), (0, "SET", "a", "1"),
        (0, "GET", "a"), (1, "SET", "a", "2"), (0, "HGETALL", "hh"), (0, "HSET", "hh", "f", "1"),
        (0, "HGETALL", "hh"), (1, "HSET", "hh", "f", "v")]),
    "two trackers": ([3, 3, 3], [
        (0, "CLIENT", "TRACKING", "ON"), (1, "CLIENT", "TRACKING", "ON"), (0, "GET", "a"),
        (1, "GET", "b"), (0, "HGET", "ha", "f"), (1, "HGET", "hb", "f"),
        (2, "MSET", "a", "1", "b", "2"), (2, "HSET", "ha", "f", "1"), (2, "HSET", "hb", "f", "1"),
        (0,), (1,), (1, "GET", "a"), (2, "SET", "a", "3"), (0,), (1,)]),
    # RESP2: invalidations are messages of __redis__:invalidate to the REDIRECT client only.
    "redirect resp2": ([2, 2, 2, 2], [
        (0, "SUBSCRIBE", "__redis__:invalidate"), (1, "SUBSCRIBE", "__redis__:invalidate"),
        (2, "CLIENT", "TRACKING", "ON", "REDIRECT", "<id:0>"), (2, "GET", "k"),
        (2, "HGET", "h", "f"), (3, "SET", "k", "1"), (3, "HSET", "h", "f", "1"),
        (3, "SET", "k", "2"), (0,), (1,), (2,)]),
    "redirect from resp3 to resp2": ([2, 2, 3, 2], [
        (0, "SUBSCRIBE", "__redis__:invalidate"), (1, "SUBSCRIBE", "__redis__:invalidate"),
        (2, "CLIENT", "TRACKING", "ON", "REDIRECT", "<id:0>"), (2, "GET", "k"),
        (3, "SET", "k", "1"), (0,), (1,), (2,)]),
    # A RESP3 client gets the invalidations of the clients redirecting to it as pushes.
    "redirect to resp3": ([3, 3, 3], [
        (1, "CLIENT", "TRACKING", "ON", "REDIRECT", "<id:0>"), (1, "GET", "k"),
        (1, "HGET", "h", "f"), (2, "SET", "k", "1"), (2, "HSET", "h", "f", "1"), (0,), (1,)]),
    # A target on shared connections takes one of its own for the invalidations (a RESP2 one
    # that has not subscribed gets none, as from Redis); it keeps it, and its own commands
    # still answer in order.
    "redirect to a client without a connection": ([3, 2, 3, 3], [
        (2, "SET", "k0", "v"), (2, "CLIENT", "TRACKING", "ON", "REDIRECT", "<id:0>"),
        (3, "CLIENT", "TRACKING", "ON", "REDIRECT", "<id:1>"), (2, "GET", "k"),
        (3, "GET", "k"), (0, "GET", "k0"), (1, "SET", "k", "1"), (0, "SET", "k", "2"), (0,),
        (1,), (0, "GET", "k0")]),
    "redirect to resp3 subscriber": ([3, 3, 3], [
        (0, "SUBSCRIBE", "__redis__:invalidate"),
        (1, "CLIENT", "TRACKING", "ON", "REDIRECT", "<id:0>"), (1, "GET", "k"),
        (2, "SET", "k", "1"), (0,), (1,)]),
}


@pytest.mark.parametrize("name", TRACKING)
def test_client_tracking_like_redis(rp, debug_redis, name):
    protos, steps = TRACKING[name]
    got = assert_play_like_redis(rp.port, debug_redis, protos, steps)
    if name == "default":
        assert got[3:5] == [b"+OK\r\n+PONG\r\n",
                            b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk1\r\n+PONG\r\n"]
        assert got[15] == b"+PONG\r\n"  # nothing for h and k2, written but not read


def test_key_command_in_a_transaction_tracks_like_redis(rp, debug_redis):
    # A key command (a script) in MULTI: its key is tracked only by the GET after it, so the
    # transaction's reply and the MGET's come without an invalidation between them.
    assert_like_redis(rp.port, debug_redis, [
        ("CLIENT", "TRACKING", "ON"), ("MULTI",), ("MSET", "x", "1", "y", "2"),
        ("PEXPIRE", "y", "100000"), ("GET", "y"), ("EXEC",), ("MGET", "x", "y"), ("DEL", "x"),
        ("PING",)])


def test_getredir_and_trackinginfo_name_the_proxy_client(rp):
    # Redis names the redirect target by its id, which for a proxy client is the proxy's; it
    # keeps the id once the target is gone (broken_redirect), and TRACKING ON without REDIRECT
    # ends the redirection.
    with connect(rp.port) as t, connect(rp.port) as w:
        target = connect(rp.port)
        target_id = int(target.call("CLIENT", "ID")[1:-2])
        assert target.call("SUBSCRIBE", "__redis__:invalidate").startswith(b">3\r\n")
        assert t.call("CLIENT", "GETREDIR") == b":-1\r\n"
        assert t.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(target_id)) == b"+OK\r\n"
        assert t.call("CLIENT", "GETREDIR") == b":%d\r\n" % target_id
        field = b"$8\r\nredirect\r\n:%d\r\n" % target_id
        assert field in t.call("CLIENT", "TRACKINGINFO")
        assert t.call("GET", "k") == b"_\r\n"
        target.close()
        wait_until(lambda: b"id=%d " % target_id not in verbatim_text(w.call("CLIENT", "LIST")),
                   5, what="the target gone")
        w.call("SET", "k", "1")
        assert b"tracking-redir-broken" in sync(t)
        info = t.call("CLIENT", "TRACKINGINFO")
        assert field in info and b"broken_redirect" in info, info
        assert t.call("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        assert t.call("CLIENT", "GETREDIR") == b":0\r\n"
        assert b"$8\r\nredirect\r\n:0\r\n" in t.call("CLIENT", "TRACKINGINFO")


def test_invalidations_never_name_internal_keys(rp):
    # A name read with GET or HGET (a hash command runs in a script that looks at the name's
    # markers) is the only key the client hears about when a filter is then made on it.
    with connect(rp.port) as t, connect(rp.port) as w:
        assert t.call("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        assert t.call("HGET", "fh", "f") == b"_\r\n"
        assert t.call("GET", "fg") == b"_\r\n"
        w.call("BF.ADD", "fh", "item")
        w.call("BF.ADD", "fg", "item")
        assert sync(t) == (b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nfh\r\n"
                           b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nfg\r\n+PONG\r\n")


# ---------------------------------------------------------------------------------------------
# Verbatim strings and nulls answered by the proxy


def test_client_info_list_getname_and_info(rp, debug_redis):
    with connect(rp.port) as c, connect(debug_redis.port) as d:
        client_id = c.call("CLIENT", "ID")[1:-2]
        assert c.call("CLIENT", "GETNAME") == b"_\r\n"
        info = verbatim_text(c.call("CLIENT", "INFO"))
        assert info.startswith(b"id=" + client_id + b" addr=") and info.endswith(b"\n")
        assert b" resp=3" in info and b" cmd=client|info " in info
        # The field names are Redis's (plus Redis 7.2's lib-name, lib-ver: CLIENT SETINFO).
        names = re.findall(rb"(\S+?)=", info)
        assert names[:names.index(b"resp") + 1] == re.findall(
            rb"(\S+?)=", verbatim_text(d.call("CLIENT", "INFO")))
        listed = verbatim_text(c.call("CLIENT", "LIST"))
        assert b"id=" + client_id + b" " in listed and b" resp=3" in listed
        assert c.call("CLIENT", "LIST", "ID", "999999") == b"=4\r\ntxt:\r\n"
        server_p, server_d = (verbatim_text(x.call("INFO", "server")) for x in (c, d))
        assert server_p.startswith(b"# Server\r\nredis_version:")

        def fields(text):
            # Clocks differ between the two calls.
            return {k: v for k, v in re.findall(rb"([a-z_0-9]+):(.*)\r\n", text)
                    if k not in (b"server_time_usec", b"uptime_in_seconds", b"uptime_in_days",
                                 b"lru_clock")}
        assert fields(server_p) == fields(server_d)
        everything = verbatim_text(c.call("INFO"))
        assert everything.startswith(b"# Server\r\n") and b"\r\n# Proxy\r\n" in everything
        assert verbatim_text(c.call("INFO", "proxy")).startswith(b"# Proxy\r\n")
        assert c.call("HELLO", "2").startswith(b"*14\r\n")
        assert c.call("CLIENT", "GETNAME") == b"$-1\r\n"
        bulk = c.call("CLIENT", "INFO")
        assert bulk.startswith(b"$") and b" resp=2 " in bulk
        assert c.call("INFO", "server").startswith(b"$")


# ---------------------------------------------------------------------------------------------
# RESP2 clients beside RESP3 ones


def expected_batch(prefix, i, resp):
    null = b"_\r\n" if resp == 3 else b"$-1\r\n"
    v = b"v%d" % i

    def bulk(s):
        return b"$%d\r\n%s\r\n" % (len(s), s)
    return [
        (("SET", prefix + "k", v), b"+OK\r\n"), (("GET", prefix + "k"), bulk(v)),
        (("GET", prefix + "none"), null), (("HSET", prefix + "h", "f", v), b":1\r\n"),
        (("HGETALL", prefix + "h"), (b"%1\r\n" if resp == 3 else b"*2\r\n") + bulk(b"f") + bulk(v)),
        (("ZADD", prefix + "z", "1.5", "m"), b":1\r\n"),
        (("ZSCORE", prefix + "z", "m"), b",1.5\r\n" if resp == 3 else b"$3\r\n1.5\r\n"),
        (("SELECT", "1"), b"+OK\r\n"), (("GET", prefix + "k"), null), (("SELECT", "0"), b"+OK\r\n"),
        (("MULTI",), b"+OK\r\n"), (("GET", prefix + "none"), b"+QUEUED\r\n"),
        (("EXEC",), b"*1\r\n" + null), (("DEL", prefix + "h", prefix + "z"), b":2\r\n")]


def test_resp2_and_resp3_clients_side_by_side(rp):
    problems, lock = [], threading.Lock()

    def raw_client(n, resp, switch):
        try:
            with connect(rp.port, resp) as c:
                for i in range(60):
                    if switch:
                        resp = 2 if resp == 3 else 3
                        assert c.call("HELLO", str(resp))[:1] == (b"%" if resp == 3 else b"*")
                    batch = expected_batch(f"side:{n}:", i, resp)
                    c.send(b"".join(cmd(*a) for a, _ in batch))
                    got = [c.read_reply_raw() for _ in batch]
                    bad = [(a, g, w) for (a, w), g in zip(batch, got) if g != w]
                    assert not bad, f"client {n} (RESP{resp}) batch {i}: {bad[:3]}"
        except Exception as exc:  # noqa: BLE001 - reported below
            with lock:
                problems.append(repr(exc))

    def redis_py_client():
        try:
            r = rp.client()
            for i in range(60):
                p = r.pipeline(transaction=False)
                p.set("side:py:k", i).get("side:py:k").get("side:py:none")
                p.hset("side:py:h", "f", i).hgetall("side:py:h").zadd("side:py:z", {"m": 1.5})
                p.zscore("side:py:z", "m").delete("side:py:h", "side:py:z")
                assert p.execute() == [True, b"%d" % i, None, 1, {b"f": b"%d" % i}, 1, 1.5, 2]
        except Exception as exc:  # noqa: BLE001 - reported below
            with lock:
                problems.append(repr(exc))

    threads = [threading.Thread(target=raw_client, args=(n, 2 + n % 2, n == 4)) for n in range(5)]
    threads.append(threading.Thread(target=redis_py_client))
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# redis-cli -3


def test_redis_cli_3_prints_the_same(rp, debug_redis):
    commands = [("HSET", "h", "a", "1", "b", "2"), ("HGETALL", "h"), ("SADD", "s", "x"),
                ("SMEMBERS", "s"), ("ZADD", "z", "2.5", "m"), ("ZSCORE", "z", "m"),
                ("GET", "nokey"), ("CONFIG", "GET", "maxmemory"),
                ("HRANDFIELD", "h", "2", "WITHVALUES")] + [("DEBUG", "PROTOCOL", k) for k in (
                    "double", "true", "false", "null", "map", "set", "verbatim", "push")]
    out = {}
    for port in (debug_redis.port, rp.port):
        flushall(debug_redis)
        runs = [subprocess.run(["redis-cli", "-3", "--no-raw", "-h", HOST, "-p", str(port), *a],
                               capture_output=True, timeout=20) for a in commands]
        out[port] = [(r.stdout, r.stderr, r.returncode) for r in runs]
    diff = [(a, p, d) for a, p, d in zip(commands, out[rp.port], out[debug_redis.port]) if p != d]
    assert not diff, diff
    printed = dict(zip(commands, (o[0] for o in out[rp.port])))
    assert printed[("HGETALL", "h")] == b'1# "a" => "1"\n2# "b" => "2"\n'
    assert printed[("ZSCORE", "z", "m")] == b"(double) 2.5\n"
    assert printed[("DEBUG", "PROTOCOL", "true")] == b"(true)\n"
    assert printed[("GET", "nokey")] == b"(nil)\n"
