"""Forwarded commands: replies (errors included) reach the client byte for byte as redis-server
sends them; inline commands; binary-safe keys and values; order of replies when forwarded,
pinned and locally answered commands are pipelined together."""

from bf_vectors import BF_COMMANDS as BF_COMMAND_NAMES
from bp_helpers import compare_with_redis, encode_command as cmd, replies_of
from cf_vectors import CF_COMMANDS


def test_errors_are_forwarded_byte_exact(bp, redis_instance):
    payload = b"".join([
        cmd("SET", "s", "v"),
        cmd("LPUSH", "s", "x"),
        cmd("FOOBAR", "a", "b"),
        cmd("foobar"),
        cmd("GET"),
        cmd("INCR", "s"),
        cmd("SET", "s", "v", "EX", "-1"),
        cmd("SET", "s", "v", "NX", "XX"),
        cmd("EVAL", "return redis.error_reply('MYERR custom message')", "0"),
        cmd("EVAL", "return redis.call('nosuch')", "0"),
        cmd("OBJECT", "NOSUCH"),
        cmd("HSET", "h", "f"),
        cmd("XADD", "st", "0-0", "f", "v"),
        cmd("EXPIRE", "s", "notanumber"),
        cmd("CONFIG", "SET", "no-such-parameter", "1"),
    ])
    replies = compare_with_redis(bp.port, redis_instance, payload, 15)
    assert replies[0] == b"+OK\r\n"
    assert replies[1] == b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    assert replies[2] == b"-ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b' \r\n"
    assert replies[3] == b"-ERR unknown command 'foobar', with args beginning with: \r\n"
    assert replies[4] == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert replies[5] == b"-ERR value is not an integer or out of range\r\n"
    assert replies[8] == b"-MYERR custom message\r\n"


def test_replies_of_many_types_are_byte_exact(bp, redis_instance):
    payload = b"".join([
        cmd("MSET", "a", "1", "b", "2", "c", ""),
        cmd("MGET", "a", "nokey", "b", "c"),
        cmd("HSET", "h", "f1", "v1", "f2", "v2"),
        cmd("HGETALL", "h"),
        cmd("ZADD", "z", "1.5", "one", "2.25", "two", "-3", "minus"),
        cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        cmd("ZSCORE", "z", "two"),
        cmd("RPUSH", "l", "a", "b", "c", "d"),
        cmd("LRANGE", "l", "1", "-2"),
        cmd("SADD", "set", "3", "1", "2"),
        cmd("SMEMBERS", "set"),
        cmd("EVAL", "return {1, 'two', {3, false, 'x'}, redis.status_reply('FINE')}", "0"),
        cmd("EVAL", "return nil", "0"),
        cmd("XADD", "st", "1-1", "field", "value"),
        cmd("XADD", "st", "2-1", "f2", "v2"),
        cmd("XRANGE", "st", "-", "+"),
        cmd("EXISTS", "a", "b", "nokey"),
        cmd("TYPE", "z"),
        cmd("TTL", "a"),
        cmd("OBJECT", "ENCODING", "l"),
        cmd("GETRANGE", "h2", "0", "-1"),
        cmd("DBSIZE"),
        cmd("COMMAND", "INFO", "get", "set", "blpop", "nosuchcommand"),
        cmd("CONFIG", "GET", "maxmemory-policy"),
        cmd("DEL", "a", "b", "c", "h", "z", "l", "set", "st"),
    ])
    replies = compare_with_redis(bp.port, redis_instance, payload, 25)
    assert replies[1] == b"*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$0\r\n\r\n"
    assert replies[12] == b"$-1\r\n"


BF_NAMES = tuple(name.encode() for name in BF_COMMAND_NAMES)
CMS_NAMES = (b"cms.initbydim", b"cms.initbyprob", b"cms.incrby", b"cms.query", b"cms.merge",
             b"cms.info")
CF_NAMES = tuple(name.encode() for name in CF_COMMANDS)
TOPK_NAMES = (b"topk.reserve", b"topk.add", b"topk.incrby", b"topk.query", b"topk.count",
              b"topk.list", b"topk.info")
TDIGEST_NAMES = (b"tdigest.create", b"tdigest.add", b"tdigest.reset", b"tdigest.merge",
                 b"tdigest.min", b"tdigest.max", b"tdigest.quantile", b"tdigest.byrank",
                 b"tdigest.byrevrank", b"tdigest.rank", b"tdigest.revrank", b"tdigest.cdf",
                 b"tdigest.trimmed_mean", b"tdigest.info")
BF_COMMANDS = (len(BF_NAMES) + len(CMS_NAMES) + len(CF_NAMES) + len(TOPK_NAMES) +
               len(TDIGEST_NAMES))


def test_command_table_is_upstreams_plus_bf(bp, redis_instance):
    """The upstream's COMMAND table, byte for byte, followed by the BF.*, CMS.*, CF.*, TOPK.* and
    TDIGEST.* entries the proxy answers itself (bf-mode, cms-mode, cf-mode, topk-mode and
    tdigest-mode emulate, the default)."""
    (direct,) = replies_of(redis_instance.port, cmd("COMMAND"), 1)
    (via_proxy,) = replies_of(bp.port, cmd("COMMAND"), 1)
    header_end = direct.index(b"\r\n") + 2
    upstream_count = int(direct[1:header_end - 2])
    assert via_proxy.startswith(b"*%d\r\n" % (upstream_count + BF_COMMANDS))
    assert via_proxy[len(b"*%d\r\n" % (upstream_count + BF_COMMANDS)):].startswith(
        direct[header_end:])
    extra = via_proxy[len(b"*%d\r\n" % (upstream_count + BF_COMMANDS)) + len(direct) - header_end:]
    for name in BF_NAMES + CMS_NAMES + CF_NAMES + TOPK_NAMES + TDIGEST_NAMES:
        assert b"$%d\r\n%s\r\n" % (len(name), name) in extra
    (count,) = replies_of(bp.port, cmd("COMMAND", "COUNT"), 1)
    assert count == b":%d\r\n" % (upstream_count + BF_COMMANDS)
    payload = cmd("COMMAND", "DOCS", "get")
    assert replies_of(bp.port, payload, 1) == replies_of(redis_instance.port, payload, 1)


def test_command_table_is_upstreams_in_forward_mode(proxy, redis_instance):
    p = proxy("--bf-mode", "forward", "--cms-mode", "forward", "--cf-mode", "forward",
              "--topk-mode", "forward", "--tdigest-mode", "forward")
    for payload in (cmd("COMMAND"), cmd("COMMAND", "COUNT"), cmd("COMMAND", "DOCS", "get")):
        assert replies_of(p.port, payload, 1) == replies_of(redis_instance.port, payload, 1)


def test_command_table_adds_only_the_emulated_family(proxy, redis_instance):
    (direct,) = replies_of(redis_instance.port, cmd("COMMAND", "COUNT"), 1)
    for args, names, absent in (
            (("--bf-mode", "forward"), CMS_NAMES + CF_NAMES + TOPK_NAMES + TDIGEST_NAMES,
             BF_NAMES),
            (("--cms-mode", "forward"), BF_NAMES + CF_NAMES + TOPK_NAMES + TDIGEST_NAMES,
             CMS_NAMES),
            (("--cf-mode", "forward"), BF_NAMES + CMS_NAMES + TOPK_NAMES + TDIGEST_NAMES,
             CF_NAMES),
            (("--topk-mode", "forward"), BF_NAMES + CMS_NAMES + CF_NAMES + TDIGEST_NAMES,
             TOPK_NAMES),
            (("--tdigest-mode", "forward"), BF_NAMES + CMS_NAMES + CF_NAMES + TOPK_NAMES,
             TDIGEST_NAMES),
            (("--bf-mode", "forward", "--cms-mode", "forward", "--cf-mode", "forward",
              "--topk-mode", "forward"), TDIGEST_NAMES,
             BF_NAMES + CMS_NAMES + CF_NAMES + TOPK_NAMES)):
        p = proxy(*args)
        (count,) = replies_of(p.port, cmd("COMMAND", "COUNT"), 1)
        assert int(count[1:-2]) == int(direct[1:-2]) + len(names), args
        (table,) = replies_of(p.port, cmd("COMMAND"), 1, timeout=20)
        for name in names:
            assert b"$%d\r\n%s\r\n" % (len(name), name) in table, (args, name)
        for name in absent:
            assert b"$%d\r\n%s\r\n" % (len(name), name) not in table, (args, name)


# Every TOPK command with right and wrong arities, any case, binary items; a RESERVE that would
# be refused and one that would not. Through a proxy with topk-mode forward each reaches the
# upstream as it is, so a plain redis-server answers each with its own unknown-command error.
TOPK_FORWARDED = (
    ("TOPK.RESERVE", "tk", "3"), ("topk.reserve", "tk", "3", "50", "4", "0.9"),
    ("TOPK.RESERVE", "tk", "0"), ("TOPK.RESERVE",), ("TOPK.ADD", "tk", "a", b"\x00b", ""),
    ("TopK.Add", "tk"), ("TOPK.INCRBY", "tk", "a", "5", "b", "100000"),
    ("TOPK.INCRBY", "tk", "a", "x"), ("TOPK.QUERY", "tk", "a", "nosuch"), ("TOPK.COUNT", "tk", "a"),
    ("TOPK.LIST", "tk"), ("TOPK.LIST", "tk", "WITHCOUNT"), ("TOPK.LIST", "tk", "w", "extra"),
    ("TOPK.INFO", "tk"), ("TOPK.INFO", "tk", "x"), ("TOPK.NOSUCH", "tk"),
    ("SET", "tk:plain", "v"), ("TYPE", "tk"), ("EXISTS", "tk"), ("DBSIZE",),
)


def test_topk_mode_forward_passes_topk_untouched(proxy, redis_instance):
    """topk-mode forward: TOPK.* go to the upstream byte for byte and its replies come back
    byte for byte; against a plain Redis that is Redis's unknown-command error (with the name
    as sent and the first arguments), and no key appears. The other families stay emulated."""
    p = proxy("--topk-mode", "forward")
    payload = b"".join(cmd(*a) for a in TOPK_FORWARDED)
    replies = compare_with_redis(p.port, redis_instance, payload, len(TOPK_FORWARDED))
    assert replies[0] == (b"-ERR unknown command 'TOPK.RESERVE', with args beginning with: "
                          b"'tk' '3' \r\n")
    assert replies[5] == b"-ERR unknown command 'TopK.Add', with args beginning with: 'tk' \r\n"
    assert replies[3] == b"-ERR unknown command 'TOPK.RESERVE', with args beginning with: \r\n"
    assert all(r.startswith(b"-ERR unknown command") for r in replies[:16])
    assert replies[16:] == [b"+OK\r\n", b"+none\r\n", b":0\r\n", b":1\r\n"]
    # Inside MULTI, queued as they are: Redis refuses the unknown command and EXEC aborts.
    transaction = [("MULTI",), ("TOPK.ADD", "tk", "a"), ("SET", "tk:x", "1"), ("EXEC",),
                   ("EXISTS", "tk:x")]
    payload = b"".join(cmd(*a) for a in transaction)
    replies = compare_with_redis(p.port, redis_instance, payload, len(transaction))
    assert replies[3].startswith(b"-EXECABORT")
    # The proxy still answers the emulated families, and the module face leaves TOPK.* out.
    with p.raw() as c:
        assert c.command("CMS.INITBYDIM", "c", "10", "2") == b"OK"
        assert c.command("BF.ADD", "f", "a") == 1
        c.send(cmd("COMMAND", "INFO", "TOPK.ADD", "CMS.QUERY"))
        reply = c.read_reply()
        assert reply[0] is None and reply[1][0] == b"cms.query"
        c.send(cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", "topk"))
        assert c.read_reply() == []


# Every TDIGEST command with right and wrong arities, any case, values that would be refused; a
# MERGE across names. Through a proxy with tdigest-mode forward each reaches the upstream as it
# is, so a plain redis-server answers each with its own unknown-command error.
TDIGEST_FORWARDED = (
    ("TDIGEST.CREATE", "td", "COMPRESSION", "50"), ("tdigest.create", "td"), ("TDIGEST.CREATE",),
    ("TDigest.Add", "td", "1", "2.5", "-inf"), ("TDIGEST.ADD", "td", "nan"),
    ("TDIGEST.MERGE", "td2", "2", "td", "td", "OVERRIDE"), ("TDIGEST.MERGE", "td2", "x", "td"),
    ("TDIGEST.RESET", "td"), ("TDIGEST.MIN", "td"), ("TDIGEST.MAX", "td"),
    ("TDIGEST.QUANTILE", "td", "0.5", "2"), ("TDIGEST.CDF", "td", "1"), ("TDIGEST.RANK", "td", "1"),
    ("TDIGEST.REVRANK", "td", "1"), ("TDIGEST.BYRANK", "td", "0"), ("TDIGEST.BYREVRANK", "td", "0"),
    ("TDIGEST.TRIMMED_MEAN", "td", "0.1", "0.9"), ("TDIGEST.INFO", "td", b"\x00"),
    ("TDIGEST.NOSUCH", "td"), ("SET", "td:plain", "v"), ("TYPE", "td"), ("EXISTS", "td"),
    ("DBSIZE",),
)


def test_tdigest_mode_forward_passes_tdigest_untouched(proxy, redis_instance):
    """tdigest-mode forward: TDIGEST.* go to the upstream byte for byte and its replies come back
    byte for byte; against a plain Redis that is Redis's unknown-command error (with the name as
    sent and the first arguments), and no key appears. The other families stay emulated."""
    p = proxy("--tdigest-mode", "forward")
    payload = b"".join(cmd(*a) for a in TDIGEST_FORWARDED)
    replies = compare_with_redis(p.port, redis_instance, payload, len(TDIGEST_FORWARDED))
    assert replies[0] == (b"-ERR unknown command 'TDIGEST.CREATE', with args beginning with: "
                          b"'td' 'COMPRESSION' '50' \r\n")
    assert replies[2] == b"-ERR unknown command 'TDIGEST.CREATE', with args beginning with: \r\n"
    assert replies[3].startswith(b"-ERR unknown command 'TDigest.Add'")
    assert all(r.startswith(b"-ERR unknown command") for r in replies[:19])
    assert replies[19:] == [b"+OK\r\n", b"+none\r\n", b":0\r\n", b":1\r\n"]
    # Inside MULTI, queued as they are: Redis refuses the unknown command and EXEC aborts.
    transaction = [("MULTI",), ("TDIGEST.ADD", "td", "1"), ("SET", "td:x", "1"), ("EXEC",),
                   ("EXISTS", "td:x")]
    payload = b"".join(cmd(*a) for a in transaction)
    replies = compare_with_redis(p.port, redis_instance, payload, len(transaction))
    assert replies[3].startswith(b"-EXECABORT")
    # The proxy still answers the emulated families, and the module face leaves TDIGEST.* out.
    with p.raw() as c:
        assert c.command("CMS.INITBYDIM", "c", "10", "2") == b"OK"
        assert c.command("TOPK.RESERVE", "t", "2") == b"OK"
        c.send(cmd("COMMAND", "INFO", "TDIGEST.ADD", "TOPK.ADD"))
        reply = c.read_reply()
        assert reply[0] is None and reply[1][0] == b"topk.add"
        c.send(cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", "tdigest"))
        assert c.read_reply() == []


def test_inline_commands_byte_exact(bp, redis_instance):
    payload = (b"PING\r\n"
               b"PING\n"
               b"ping hello\r\n"
               b"SET k \"a b\"\r\n"
               b"GET k\r\n"
               b"SET k2 \"\\x41\\x00\\n\\t\\\"q\\\"\"\r\n"
               b"GET k2\r\n"
               b"SET k3 'single quoted \\' value'\r\n"
               b"GET k3\r\n"
               b"\r\n\r\n"
               b"  ECHO   spaced     \r\n"
               b"*0\r\n"
               b"*-1\r\n"
               b"GET missing\n"
               b"LPUSH k x\r\n"
               b"EXISTS k k2 k3\r\n")
    replies = compare_with_redis(bp.port, redis_instance, payload, 13)
    assert replies[:5] == [b"+PONG\r\n", b"+PONG\r\n", b"$5\r\nhello\r\n", b"+OK\r\n",
                           b"$3\r\na b\r\n"]
    assert replies[6] == b"$7\r\nA\x00\n\t\"q\"\r\n"
    assert replies[8] == b"$21\r\nsingle quoted ' value\r\n"
    assert replies[9] == b"$6\r\nspaced\r\n"
    assert replies[10] == b"$-1\r\n"


def test_inline_set_as_nc_sends_it(bp, redis_instance):
    with bp.raw() as c:
        c.send(b'SET k "a b"\n')
        assert c.read_reply_raw() == b"+OK\r\n"
        c.send(b"GET k\n")
        assert c.read_reply_raw() == b"$3\r\na b\r\n"
    assert redis_instance.client().get("k") == b"a b"


def test_inline_and_multibulk_split_across_writes(bp, redis_instance):
    # A command arriving a few bytes at a time must be reassembled.
    payload = cmd("SET", "split", "x" * 1000) + b"GET split\r\n" + cmd("STRLEN", "split")
    with bp.raw() as c:
        for i in range(0, len(payload), 7):
            c.send(payload[i:i + 7])
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.read_reply_raw() == b"$1000\r\n" + b"x" * 1000 + b"\r\n"
        assert c.read_reply_raw() == b":1000\r\n"


def test_binary_safe_keys_and_values(bp, redis_instance):
    r = bp.client()
    keys = [b"\x00", b"k\r\nk", b"*1\r\n$4\r\nPING\r\n", bytes(range(256)), b"", b" "]
    values = [bytes(range(256)) * 3, b"\r\n", b"", b"$-1\r\n", b"\x00" * 100, b"-ERR x\r\n"]
    for k, v in zip(keys, values):
        assert r.set(k, v) is True
    for k, v in zip(keys, values):
        assert r.get(k) == v
    direct = redis_instance.client()
    for k, v in zip(keys, values):
        assert direct.get(k) == v
    assert sorted(r.keys()) == sorted(keys)
    assert r.hset(b"h\x00", mapping={b"\x00f\r\n": b"\r\n\x00"}) == 1
    assert r.hgetall(b"h\x00") == {b"\x00f\r\n": b"\r\n\x00"}


def test_mixed_routes_pipelined_keep_order(bp, redis_instance):
    """Forwarded, locally answered and pinned commands in one write: replies in order."""
    payload = b"".join([
        cmd("SET", "a", "1"),
        cmd("PING"),
        cmd("GET", "a"),
        cmd("ECHO", "e1"),
        cmd("MULTI"),
        cmd("INCR", "a"),
        cmd("PING"),
        cmd("EXEC"),
        cmd("GET", "a"),
        cmd("SELECT", "3"),
        cmd("GET", "a"),
        cmd("SET", "a", "db3"),
        cmd("SELECT", "0"),
        cmd("GET", "a"),
        cmd("RPUSH", "list", "x"),
        cmd("BLPOP", "list", "1"),
        cmd("ECHO", "e2"),
        cmd("WATCH", "a"),
        cmd("GET", "a"),
        cmd("UNWATCH"),
        cmd("INCR", "a"),
        cmd("PING", "last"),
    ])
    replies = compare_with_redis(bp.port, redis_instance, payload, 22)
    assert replies == [
        b"+OK\r\n", b"+PONG\r\n", b"$1\r\n1\r\n", b"$2\r\ne1\r\n",
        b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*2\r\n:2\r\n+PONG\r\n",
        b"$1\r\n2\r\n", b"+OK\r\n", b"$-1\r\n", b"+OK\r\n", b"+OK\r\n", b"$1\r\n2\r\n",
        b":1\r\n", b"*2\r\n$4\r\nlist\r\n$1\r\nx\r\n", b"$2\r\ne2\r\n",
        b"+OK\r\n", b"$1\r\n2\r\n", b"+OK\r\n", b":3\r\n", b"$4\r\nlast\r\n",
    ]
    assert redis_instance.client(db=3).get("a") == b"db3"


def test_noncanonical_framing_that_redis_tolerates(bp, redis_instance):
    # Redis skips the two bytes after a bulk without looking at them, and the byte after the
    # '\r' of a "*" or "$" line.
    payload = (b"*1\r\n$4\r\nPINGab"
               b"*3\r\n$3\r\nSET\r\n$1\r\nkXY$1\r\nv\r\n"
               b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
               b'SET e ""\r\n'
               b"*2\r\n$6\r\nSTRLEN\r\n$1\r\ne\r\n")
    replies = compare_with_redis(bp.port, redis_instance, payload, 5)
    assert replies == [b"+PONG\r\n", b"+OK\r\n", b"$1\r\nv\r\n", b"+OK\r\n", b":0\r\n"]


def test_many_arguments(bp, redis_instance):
    r = bp.client()
    mapping = {f"many:{i}": f"v{i}" for i in range(20000)}
    assert r.mset(mapping) is True
    keys = list(mapping)
    assert r.mget(keys) == [v.encode() for v in mapping.values()]
    assert r.delete(*keys) == 20000
    assert redis_instance.client().dbsize() == 0


def test_inline_pinned_commands(bp):
    with bp.raw() as c, bp.raw() as pub:
        c.send(b"MULTI\r\nSET t \"x y\"\r\nEXEC\r\nRPUSH q a\r\nBLPOP q 1\r\nSUBSCRIBE inl\r\n")
        assert [c.read_reply_raw() for _ in range(6)] == [
            b"+OK\r\n", b"+QUEUED\r\n", b"*1\r\n+OK\r\n", b":1\r\n",
            b"*2\r\n$1\r\nq\r\n$1\r\na\r\n", b"*3\r\n$9\r\nsubscribe\r\n$3\r\ninl\r\n:1\r\n"]
        assert pub.command("PUBLISH", "inl", "m") == 1
        assert c.read_reply() == [b"message", b"inl", b"m"]
        c.send(b"UNSUBSCRIBE\r\nGET t\r\n")
        assert c.read_reply() == [b"unsubscribe", b"inl", 0]
        assert c.read_reply() == b"x y"
