"""No client can break another (docs/connections.md, one case per connection rule).

While several clients run pipelined SET/GET/INCR load through the proxy (bp_helpers.Load, on the
same shared upstream connections), another client sends a command that changes the state of the
connection it runs on: SYNC/PSYNC/REPLCONF, MONITOR, (P/S)SUBSCRIBE, CLIENT TRACKING/REPLY/
NO-EVICT, READONLY/READWRITE, SELECT, WATCH/MULTI, blocking commands, WAIT, XREAD BLOCK, DEBUG
SLEEP, long scripts, ASKING, SCRIPT DEBUG, CLIENT PAUSE, QUIT. Each is sent alone, in the middle
of a pipeline (`PING; <hazard>; GET x` in one write), followed by a disconnect without reading,
and followed by RESET. Afterwards the loaded clients saw no error, no wrong reply and no stall,
the proxy is alive, a fresh client finds clean connections (MULTI, SELECT, names), and where the
replies are deterministic the hazard client's replies equal those of the same bytes sent directly
to the redis-server, byte for byte (the same server: hash-ordered replies such as UNSUBSCRIBE
without arguments then come in the same order).

Transactions holding connection-state commands (SUBSCRIBE, SELECT, CLIENT SETNAME/ID/KILL,
REPLCONF ACK) are compared with direct Redis byte for byte too.
"""

import contextlib
import itertools
import re
import time

import pytest

from bp_helpers import Err, Load, RawConn, Simple, encode_command as cmd, parse_resp, wait_until

# Keys and databases the hazard clients use; deleted before each run, through the proxy and
# directly, so both runs start from the same state. The load uses keys of its own.
HZ_KEYS = ("hz:a", "hz:x", "hz:l", "hz:st", "hz:w", "hz:q", "hz:t")
HZ_DBS = (0, 3, 5)

_load_ids = itertools.count()

PING = cmd("PING")
RESET = cmd("RESET")
GET_X = cmd("GET", "hz:x")


def pipeline(*commands):
    return b"".join(cmd(*c) for c in commands)


def clean(redis):
    """Deletes the hazard keys in every database the tests use (directly on redis-server)."""
    with RawConn(redis.port) as c:
        for db in HZ_DBS:
            c.send(cmd("SELECT", db) + cmd("DEL", *HZ_KEYS))
            c.read_reply_raw()
            c.read_reply_raw()


def run(port, payload, nreplies, timeout=10.0):
    """Sends `payload` in one write on a new connection; returns (connection, the bytes of the
    first `nreplies` replies). The connection stays open."""
    c = RawConn(port, timeout=timeout)
    c.send(payload)
    return c, b"".join(c.read_reply_raw() for _ in range(nreplies))


def read_all(c, n):
    """The bytes of the next `n` replies on RawConn `c`."""
    return b"".join(c.read_reply_raw() for _ in range(n))


def direct(redis, payload, nreplies):
    c, got = run(redis.port, payload, nreplies)
    c.close()
    return got


def assert_like_direct(redis, variants, via, cleanup=True):
    """Sends each variant's payload directly to redis-server (after `clean`) and asserts the
    replies equal those received through the proxy (`via`, by variant name); reports every
    variant that differs."""
    diffs = []
    for name, (payload, n) in variants.items():
        if cleanup:
            clean(redis)
        got = direct(redis, payload, n)
        if via[name] != got:
            diffs.append(f"{name}: proxy {via[name][:300]!r}\n"
                         f"{name}: redis {got[:300]!r}")
    assert not diffs, "replies differ from redis-server's:\n" + "\n".join(diffs)


def assert_quiet(conns, wait=0.15):
    """None of `conns` ((name, RawConn) pairs) received a byte beyond what was read, nor was
    closed."""
    time.sleep(wait)
    for name, c in conns:
        closed = c.is_closed(0.01)
        what = "close" if closed else repr(bytes(c.buf))
        assert not closed and not c.buf, f"{name}: unexpected {what}"


def connected_replicas(redis):
    with RawConn(redis.port) as c:
        info = c.command("INFO", "replication")
    return int(re.search(rb"connected_slaves:(\d+)", info).group(1))


def upstream_clients(redis):
    """CLIENT LIST of redis-server as a list of dicts, without the connection that asks."""
    with RawConn(redis.port) as c:
        text = c.command("CLIENT", "LIST").decode()
    out = []
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        if fields.get("cmd") != "client|list":
            out.append(fields)
    return out


# A fresh client after a hazard: pinned connections taken from the pool are clean (no MULTI, no
# database, no subscription, no name), shared ones answer in order.
PROBE = pipeline(("SET", "hz:probe", "p"), ("GET", "hz:probe"), ("MULTI",), ("GET", "hz:probe"),
                 ("EXEC",), ("SELECT", "2"), ("GET", "hz:probe"), ("SELECT", "0"),
                 ("GET", "hz:probe"), ("SUBSCRIBE", "hz:probe"), ("UNSUBSCRIBE",),
                 ("WATCH", "hz:probe"), ("UNWATCH",), ("CLIENT", "GETNAME"), ("PING",))
PROBE_REPLIES = (b"+OK\r\n$1\r\np\r\n+OK\r\n+QUEUED\r\n*1\r\n$1\r\np\r\n+OK\r\n$-1\r\n+OK\r\n"
                 b"$1\r\np\r\n*3\r\n$9\r\nsubscribe\r\n$8\r\nhz:probe\r\n:1\r\n"
                 b"*3\r\n$11\r\nunsubscribe\r\n$8\r\nhz:probe\r\n:0\r\n+OK\r\n+OK\r\n$-1\r\n"
                 b"+PONG\r\n")


def assert_fresh_clients_clean(bp, n=3):
    for _ in range(n):
        c, got = run(bp.port, PROBE, 15)
        c.close()
        assert got == PROBE_REPLIES, f"a fresh client got {got!r}"


@contextlib.contextmanager
def loaded(bp, max_stall=2.0, clients=4):
    """Runs Load on the proxy around the block; afterwards the load must have gone on (more
    batches answered after the block), be clean (no error, no wrong reply, no batch slower than
    `max_stall` s), the proxy alive and fresh clients find clean connections."""
    load = Load(bp.port, clients=clients, batch=40, prefix=f"load{next(_load_ids)}")
    with load:
        yield load
        before = load.batches
        wait_until(lambda: load.batches >= before + 2 * clients or load.problems,
                   max_stall + 5, what="the load to go on after the hazard")
    load.assert_clean(max_stall=max_stall)
    assert bp.alive(), "the proxy died:\n" + bp.log()
    assert_fresh_clients_clean(bp)


# ---------------------------------------------------------------------------------------------
# Hazards with deterministic replies: alone, mid-pipeline, then RESET, then disconnect.

class Hazard:
    def __init__(self, name, hazard, follow, n_hazard, n_follow, silent=False, n_reset=None,
                 max_stall=2.0):
        self.name = name
        self.hazard = cmd(*hazard)
        self.follow = pipeline(*follow)
        self.n_hazard = n_hazard        # replies of the hazard itself
        self.n_follow = n_follow        # replies of the follow-up commands (alone variant)
        self.silent = silent            # the GET after it gets no reply (CLIENT REPLY OFF/SKIP)
        self.n_reset = n_hazard + 3 if n_reset is None else n_reset
        self.max_stall = max_stall

    def variants(self):
        """name -> (payload, number of replies)"""
        return {
            "alone": (self.hazard + self.follow, self.n_hazard + self.n_follow),
            "pipeline": (PING + self.hazard + GET_X, 1 + self.n_hazard + (0 if self.silent else 1)),
            "reset": (self.hazard + RESET + PING + cmd("GET", "hz:a"), self.n_reset),
        }


HAZARDS = [
    Hazard("select", ("SELECT", "5"),
           [("SET", "hz:a", "five"), ("GET", "hz:a"), ("SELECT", "0"), ("GET", "hz:a"),
            ("SELECT", "5"), ("GET", "hz:a"), ("SET", "hz:a", "five2")], 1, 7),
    Hazard("client-reply-off", ("CLIENT", "REPLY", "OFF"),
           [("SET", "hz:a", "1"), ("GET", "hz:a"), ("CLIENT", "REPLY", "ON"), ("GET", "hz:a")],
           0, 2, silent=True),
    Hazard("client-reply-skip", ("CLIENT", "REPLY", "SKIP"),
           [("SET", "hz:a", "2"), ("GET", "hz:a")], 0, 1, silent=True, n_reset=2),
    Hazard("client-no-evict", ("CLIENT", "NO-EVICT", "ON"),
           [("GET", "hz:a"), ("CLIENT", "NO-EVICT", "OFF"), ("GET", "hz:a")], 1, 3),
    Hazard("readonly", ("READONLY",), [("GET", "hz:a"), ("READWRITE",), ("GET", "hz:a")], 1, 3),
    Hazard("readwrite", ("READWRITE",), [("GET", "hz:a")], 1, 1),
    Hazard("asking", ("ASKING",), [("GET", "hz:a"), ("ASKING",), ("SET", "hz:a", "k")], 1, 3),
    Hazard("client-tracking", ("CLIENT", "TRACKING", "ON"),
           [("GET", "hz:a"), ("SET", "hz:a", "t"), ("GET", "hz:a"), ("CLIENT", "TRACKING", "OFF"),
            ("GET", "hz:a")], 1, 5),
    Hazard("subscribe", ("SUBSCRIBE", "hz:c1"),
           [("PING",), ("SUBSCRIBE", "hz:c2", "hz:c3"), ("GET", "hz:a"), ("UNSUBSCRIBE",),
            ("GET", "hz:a")], 1, 8),
    Hazard("psubscribe", ("PSUBSCRIBE", "hz:p*"),
           [("PING",), ("PSUBSCRIBE", "hz:q*", "hz:r*"), ("PUNSUBSCRIBE",), ("GET", "hz:a")],
           1, 7),
    Hazard("ssubscribe", ("SSUBSCRIBE", "hz:s1"),
           [("PING", "x"), ("SSUBSCRIBE", "hz:s2"), ("SUNSUBSCRIBE",), ("GET", "hz:a")], 1, 5),
    Hazard("multi", ("MULTI",),
           [("SET", "hz:a", "m"), ("DISCARD",), ("GET", "hz:a"), ("MULTI",), ("SET", "hz:a", "m"),
            ("GET", "hz:a"), ("EXEC",), ("GET", "hz:a")], 1, 8),
    Hazard("watch", ("WATCH", "hz:w"),
           [("SET", "hz:w", "mine"), ("MULTI",), ("SET", "hz:w", "x"), ("EXEC",), ("GET", "hz:w"),
            ("WATCH", "hz:w"), ("MULTI",), ("SET", "hz:w", "y"), ("EXEC",), ("GET", "hz:w")],
           1, 10),
    Hazard("blpop-timeout", ("BLPOP", "hz:l", "0.2"),
           [("RPUSH", "hz:l", "x", "y"), ("BLPOP", "hz:l", "0"), ("BLPOP", "hz:l", "0.1")], 1, 3),
    Hazard("brpop-timeout", ("BRPOP", "hz:l", "0.2"),
           [("RPUSH", "hz:l", "x", "y"), ("BRPOP", "hz:l", "0"), ("LLEN", "hz:l")], 1, 3),
    Hazard("wait-0-0", ("WAIT", "0", "0"),
           [("SET", "hz:a", "w"), ("WAIT", "0", "0"), ("GET", "hz:a")], 1, 3),
    Hazard("wait-1-100", ("WAIT", "1", "100"),
           [("SET", "hz:a", "w"), ("WAIT", "1", "100"), ("GET", "hz:a")], 1, 3),
    Hazard("xread-block", ("XREAD", "BLOCK", "200", "STREAMS", "hz:st", "$"),
           [("XADD", "hz:st", "1-1", "f", "v"), ("XREAD", "BLOCK", "0", "STREAMS", "hz:st", "0"),
            ("XREAD", "BLOCK", "100", "STREAMS", "hz:st", "$")], 1, 3),
    # Redis stops for 0.5 s: the others wait as they would with Redis, without errors.
    Hazard("debug-sleep", ("DEBUG", "SLEEP", "0.5"), [("GET", "hz:a")], 1, 1, max_stall=0.5 + 1.5),
    Hazard("client-pause-write", ("CLIENT", "PAUSE", "500", "WRITE"),
           [("GET", "hz:a"), ("SET", "hz:a", "p"), ("GET", "hz:a")], 1, 3, max_stall=0.5 + 1.5),
    Hazard("client-unpause", ("CLIENT", "UNPAUSE"), [("SET", "hz:a", "u")], 1, 1),
    Hazard("eval", ("EVAL", "return redis.call('incr', KEYS[1])", "1", "hz:a"),
           [("GET", "hz:a"), ("EVAL", "return redis.call('get', KEYS[1])", "1", "hz:a")], 1, 2),
    Hazard("script-kill-notbusy", ("SCRIPT", "KILL"), [("GET", "hz:a")], 1, 1),
]


def run_variants(bp, redis_instance, variants, via):
    """Runs every variant (payload, replies) on a connection of its own, each after a clean
    upstream; their replies go to via[name]; nothing more may arrive on any of them."""
    conns = []
    for name, (payload, n) in variants.items():
        clean(redis_instance)
        c, via[name] = run(bp.port, payload, n)
        conns.append((name, c))
    assert_quiet(conns)
    for _, c in conns:
        c.close()


@pytest.mark.parametrize("hz", HAZARDS, ids=[h.name for h in HAZARDS])
def test_hazard_under_load_like_redis(bp, redis_instance, hz):
    """The hazard command alone (with follow-up commands that see its state), in the middle of
    a pipeline, followed by RESET, and followed by a disconnect without reading, while 4 clients
    run pipelined load: the load sees no error, wrong reply or stall; the hazard client's replies
    are byte for byte those of the same bytes sent directly to redis-server; no extra byte."""
    variants = hz.variants()
    via = {}
    with loaded(bp, max_stall=hz.max_stall):
        run_variants(bp, redis_instance, variants, via)
        with bp.raw() as c:
            c.send(PING + hz.hazard + GET_X + cmd("SET", "hz:a", "gone"))
    assert_like_direct(redis_instance, variants, via)


# ---------------------------------------------------------------------------------------------
# Replication: SYNC, PSYNC, REPLCONF are tunnels to a connection of the client's own.

def read_sync_payload(c):
    """Reads a full synchronisation's RDB: keepalive newlines, then `$<len>\\r\\n<rdb>` (no CRLF
    after it). Returns the RDB bytes."""
    while True:
        while c.buf[:1] == b"\n":
            del c.buf[:1]
        end = c.buf.find(b"\r\n")
        if end >= 0:
            break
        c._fill()
    header = bytes(c.buf[:end])
    assert re.fullmatch(rb"\$\d+", header), f"not an RDB transfer: {bytes(c.buf[:100])!r}"
    del c.buf[:end + 2]
    return c.read_exact(int(header[1:]))


def read_for(c, quiet=0.5, limit=3.0):
    """Bytes received on `c` until `quiet` s of silence, the close (marked <EOF>) or `limit` s."""
    out = bytearray(c.buf)
    c.buf.clear()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        c.sock.settimeout(min(quiet, max(0.01, deadline - time.monotonic())))
        try:
            chunk = c.sock.recv(1 << 16)
        except TimeoutError:
            break
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            out += b"<EOF>"
            break
        out += chunk
    return bytes(out)


def read_until(c, needle, timeout=5.0):
    deadline = time.monotonic() + timeout
    while needle not in c.buf:
        assert time.monotonic() < deadline, f"{needle!r} not received: {bytes(c.buf[-300:])!r}"
        c._fill(timeout=max(0.01, deadline - time.monotonic()))
    return bytes(c.buf)


@pytest.mark.parametrize("sync", [("SYNC",), ("PSYNC", "?", "-1")], ids=["sync", "psync"])
def test_sync_and_psync_become_a_replication_link(bp, redis_instance, sync):
    """SYNC / PSYNC ? -1 under load: the client gets the upstream's RDB and then its replication
    stream (the load's writes), as a replica of Redis would; the loaded clients are untouched.
    Mid-pipeline (`PING; SYNC`), followed by RESET (Redis drops a replica that sends commands
    with replies: the connection closes, as directly), followed by a disconnect: each time the
    upstream's replica goes away with the client (INFO replication: connected_slaves 0)."""
    with loaded(bp) as load:
        with RawConn(bp.port, timeout=10) as c:
            c.send(cmd(*sync))
            if sync[0] == "PSYNC":
                line = read_until(c, b"\r\n")
                m = re.match(rb"\+FULLRESYNC ([0-9a-f]{40}) (\d+)\r\n", line)
                assert m, line[:100]
                del c.buf[:m.end()]
                info = redis_instance.client().info("replication")
                assert m.group(1).decode() == info["master_replid"], (line, info)
            rdb = read_sync_payload(c)
            assert rdb.startswith(b"REDIS0010"), rdb[:20]
            stream = read_until(c, load.prefix.encode())
            assert b"$3\r\nSET\r\n" in stream or b"$4\r\nINCR\r\n" in stream, stream[:300]
            assert connected_replicas(redis_instance) == 1
        wait_until(lambda: connected_replicas(redis_instance) == 0, 5, what="replica gone")

        # Mid-pipeline: Redis refuses a SYNC that comes while the reply to the PING before it
        # is still unwritten (one write: always), with an error, and goes on.
        with RawConn(bp.port, timeout=10) as c:
            c.send(PING + cmd(*sync) + GET_X)
            via_pipeline = read_for(c)
        wait_until(lambda: connected_replicas(redis_instance) == 0, 5, what="replica gone")

        # Followed by RESET: Redis disconnects a replica whose command has a reply.
        with RawConn(bp.port, timeout=10) as c:
            c.send(cmd(*sync) + RESET + PING)
            rest = c.read_until_eof(10)
            assert b"RESET" not in rest and b"PONG" not in rest, rest[:200]
        wait_until(lambda: connected_replicas(redis_instance) == 0, 5, what="replica gone")

        # Followed by a disconnect without reading.
        with RawConn(bp.port) as c:
            c.send(cmd(*sync))
        wait_until(lambda: connected_replicas(redis_instance) == 0, 5, what="replica gone")
    # Directly: the same RESET behaviour, and the same replies mid-pipeline.
    with RawConn(redis_instance.port, timeout=10) as c:
        c.send(cmd(*sync) + RESET + PING)
        rest = c.read_until_eof(10)
        assert b"RESET" not in rest and b"PONG" not in rest, rest[:200]
    with RawConn(redis_instance.port, timeout=10) as c:
        c.send(PING + cmd(*sync) + GET_X)
        assert via_pipeline == read_for(c)


@pytest.mark.parametrize("replconf,reply", [
    (("REPLCONF", "ACK", "0"), b""),
    (("REPLCONF", "listening-port", "6999"), b"+OK\r\n"),
    (("REPLCONF", "rdb-only", "1"), b"+OK\r\n"),
], ids=["ack", "listening-port", "rdb-only"])
def test_replconf_on_a_connection_of_its_own(bp, redis_instance, replconf, reply):
    """REPLCONF under load: its reply (none for ACK) is Redis's and PING after it gets +PONG;
    it reached the same upstream connection as the PSYNC that follows it (a replica's
    handshake): PSYNC ? -1 gets the upstream's FULLRESYNC and RDB, then the replication stream
    with the load's writes, the replica registered with the announced port (listening-port), or
    the connection closed after the RDB (rdb-only), as with Redis. Mid-pipeline and followed by
    RESET the replies equal direct Redis's; after a disconnect (before or after PSYNC) the
    upstream connection goes too (no replica left, no connection more than before)."""
    hz = cmd(*replconf)
    variants = {
        "alone": (hz + PING, 1 + bool(reply)),
        "pipeline": (PING + hz + GET_X, 2 + bool(reply)),
        "reset": (hz + RESET + PING + GET_X, 3 + bool(reply)),
    }
    via = {}
    with loaded(bp) as load:
        base = len(upstream_clients(redis_instance))
        run_variants(bp, redis_instance, variants, via)

        c, got = run(bp.port, hz + PING, 1 + bool(reply))
        with c:
            assert got == reply + b"+PONG\r\n"
            c.send(cmd("PSYNC", "?", "-1"))
            line = read_until(c, b"\r\n")
            assert re.match(rb"\+FULLRESYNC [0-9a-f]{40} \d+\r\n", line), line[:100]
            del c.buf[:line.index(b"\r\n") + 2]
            assert read_sync_payload(c).startswith(b"REDIS0010")
            if replconf[1] == "rdb-only":
                assert c.read_until_eof(5) == b""
            else:
                read_until(c, load.prefix.encode())
                info = redis_instance.client().info("replication")
                assert info["connected_slaves"] == 1, info
                if replconf[1] == "listening-port":
                    assert info["slave0"]["port"] == 6999, info
        wait_until(lambda: connected_replicas(redis_instance) == 0, 5, what="replica gone")

        # Followed by a disconnect without reading, before and after PSYNC.
        for payload in (hz + PING, hz + cmd("PSYNC", "?", "-1")):
            with bp.raw() as c:
                c.send(payload)
                time.sleep(0.05)
        wait_until(lambda: connected_replicas(redis_instance) == 0, 5, what="replica gone")
        wait_until(lambda: len(upstream_clients(redis_instance)) <= base, 5,
                   what="the hazard clients' upstream connections to close")
    assert_like_direct(redis_instance, variants, via)


def test_script_debug_is_a_tunnel(bp, redis_instance):
    """SCRIPT DEBUG YES under load: the Lua debugger's dialogue (step, continue, end of session,
    connection closed) equals the one with Redis directly, byte for byte; the forked session's
    writes are rolled back; mid-pipeline, followed by RESET and by a disconnect in the middle of
    a session, the load is untouched."""
    script = "redis.call('set','hz:a','dbg') return 7"

    def session(port):
        with RawConn(port, timeout=10) as c:
            out = [c.command("SCRIPT", "DEBUG", "YES")]
            c.send(cmd("EVAL", script, "0"))
            out.append(c.read_reply_raw())
            c.send(cmd("s"))
            out.append(c.read_reply_raw())
            c.send(cmd("c"))
            out.append(c.read_until_eof(10))
            return out

    others = {
        "pipeline": (PING + cmd("SCRIPT", "DEBUG", "YES") + GET_X, 3),
        "reset": (cmd("SCRIPT", "DEBUG", "YES") + RESET + PING + GET_X, 4),
    }
    via = {}
    with loaded(bp):
        via_session = session(bp.port)
        assert via_session[0] == b"OK"
        conns = []
        for name, (payload, n) in others.items():
            c, via[name] = run(bp.port, payload, n)
            conns.append((name, c))
        assert_quiet(conns)
        for _, c in conns:
            c.close()
        with RawConn(bp.port) as c:       # leaves in the middle of a debugging session
            c.send(cmd("SCRIPT", "DEBUG", "YES"))
            c.read_reply_raw()
            c.send(cmd("EVAL", script, "0"))
            c.read_reply_raw()
    assert redis_instance.client().get("hz:a") is None
    assert via_session == session(redis_instance.port)
    assert_like_direct(redis_instance, others, via, cleanup=False)


# ---------------------------------------------------------------------------------------------
# MONITOR

MONITOR_LINE = re.compile(rb"\d+\.\d+ \[\d+ [^\]]+\] .*")


def mask_monitor(data):
    """Monitor lines with their time stamp and client address replaced."""
    return re.sub(rb"\+\d+\.\d+ \[(\d+) [^\]]+\]", rb"+TIME [\1 ADDR]", data)


def read_quiet(port, payload, wait=0.4):
    """Bytes received after sending `payload` until `wait` s of silence or the close (marked
    <EOF>)."""
    with RawConn(port) as c:
        c.send(payload)
        return read_for(c, quiet=wait)


def test_monitor_under_load(bp, redis_instance):
    """MONITOR under load: the monitor sees the load's commands, the loaded clients see nothing
    of it. Mid-pipeline, the commands after MONITOR get Redis's replies (a monitor is a replica:
    "-ERR Replica can't interact with the keyspace"); QUIT answers +OK then closes; RESET ends
    monitoring (+RESET, then plain replies and no more monitor lines); disconnecting ends it."""
    with loaded(bp) as load:
        needle = f'"SET" "{load.prefix}:'.encode()
        with RawConn(bp.port) as m:
            assert m.command("MONITOR") == b"OK"
            deadline = time.monotonic() + 5
            while True:
                line = m.read_reply()
                assert isinstance(line, Simple) and MONITOR_LINE.fullmatch(line), line
                if needle in line:
                    break
                assert time.monotonic() < deadline, "the load's commands are not monitored"

        with RawConn(bp.port) as m:
            m.send(PING + cmd("MONITOR") + GET_X + cmd("PING"))
            assert m.read_reply_raw() == b"+PONG\r\n"
            assert m.read_reply_raw() == b"+OK\r\n"
            replies = []
            while len(replies) < 2:
                r = m.read_reply()
                if not (isinstance(r, Simple) and MONITOR_LINE.fullmatch(r)):
                    replies.append(r)
            assert replies == [Err(b"ERR Replica can't interact with the keyspace"), b"PONG"]

        with RawConn(bp.port) as m:
            m.send(cmd("MONITOR") + cmd("QUIT"))
            data = m.read_until_eof(5)
            items, pos = [], 0
            while pos < len(data):
                item, pos = parse_resp(data, pos)
                items.append(item)
            assert items[0] == b"OK" and items[-1] == b"OK", items[:3]
            assert all(MONITOR_LINE.fullmatch(i) for i in items[1:-1]), items

        with RawConn(bp.port) as m:
            assert m.command("MONITOR") == b"OK"
            m.read_reply()                  # a monitor line: the load runs
            m.send(RESET + PING + GET_X)
            while True:
                r = m.read_reply()
                if r == b"RESET":
                    break
                assert MONITOR_LINE.fullmatch(r), r
            assert m.read_reply_raw() == b"+PONG\r\n"
            assert m.read_reply_raw() == b"$-1\r\n"
            time.sleep(0.2)                  # the load goes on: nothing more is monitored
            assert not m.is_closed(0.01) and not m.buf, bytes(m.buf[:200])

        with RawConn(bp.port) as m:
            m.send(cmd("MONITOR") + GET_X)
        with RawConn(bp.port) as m:
            assert m.command("MONITOR") == b"OK"
    time.sleep(0.1)
    # No monitor is left behind upstream (the proxy closed the monitors' connections).
    wait_until(lambda: not [c for c in upstream_clients(redis_instance) if "O" in c["flags"]], 5,
               what="the monitors' upstream connections to close")


@pytest.mark.parametrize("payload", [
    pipeline(("MONITOR",), ("GET", "hz:x"), ("PING",), ("QUIT",)),
    pipeline(("MONITOR",), ("PING",), ("RESET",), ("PING",)),
    pipeline(("MONITOR",), ("ECHO", "e"), ("PING", "p"), ("QUIT",)),
], ids=["quit", "reset", "echo-quit"])
def test_monitor_pipeline_like_redis(bp, redis_instance, payload):
    """Without other clients, MONITOR followed in the same write by commands and QUIT/RESET gives
    the same bytes as Redis directly (time stamps and addresses masked): the monitor line of the
    client's own PING comes after +PONG and before QUIT's +OK / RESET's +RESET."""
    via = read_quiet(bp.port, payload)
    got_direct = read_quiet(redis_instance.port, payload)
    assert mask_monitor(via) == mask_monitor(got_direct)


# ---------------------------------------------------------------------------------------------
# Pub/sub

@pytest.mark.parametrize("sub,unsub,pub,channels,kind", [
    ("SUBSCRIBE", "UNSUBSCRIBE", "PUBLISH", ("hz:c1", "hz:c2"), b"message"),
    ("PSUBSCRIBE", "PUNSUBSCRIBE", "PUBLISH", ("hz:c1*", "hz:c2*"), b"pmessage"),
    ("SSUBSCRIBE", "SUNSUBSCRIBE", "SPUBLISH", ("{hz}c1", "{hz}c2"), b"smessage"),
], ids=["subscribe", "psubscribe", "ssubscribe"])
def test_pubsub_messages_under_load(bp, redis_instance, sub, unsub, pub, channels, kind):
    """A subscriber under load gets the messages another client publishes, in order; PING in
    pub/sub mode, then the unsubscribe without arguments (one reply per subscription) and a GET
    in normal mode again: the subscriber's whole transcript equals the one with Redis directly."""
    targets = [c.rstrip("*") + "x" if "*" in c else c for c in channels]

    def transcript(port, publisher):
        with RawConn(port) as s:
            s.send(cmd(sub, *channels))
            out = [s.read_reply_raw() for _ in channels]
            for i in range(20):
                assert publisher(targets[i % 2], f"m{i}") == 1
            out += [s.read_reply_raw() for _ in range(20)]
            s.send(PING + cmd(unsub) + GET_X)
            out += [s.read_reply_raw() for _ in range(len(channels) + 2)]
            assert not s.is_closed(0.1) and not s.buf
            return out

    with loaded(bp):
        with bp.raw() as p:
            via = transcript(bp.port, lambda ch, m: p.command(pub, ch, m))
    assert kind in via[len(channels)]
    with RawConn(redis_instance.port) as p:
        assert via == transcript(redis_instance.port, lambda ch, m: p.command(pub, ch, m))


def test_client_reply_off_then_subscribe_like_redis(bp, redis_instance):
    """CLIENT REPLY OFF then SUBSCRIBE a b under load: as with Redis, the subscription
    confirmations and the messages are still delivered, PING's reply is not, UNSUBSCRIBE's
    confirmations are; CLIENT REPLY ON answers again. Byte for byte with Redis directly."""
    def transcript(port, pubport):
        with RawConn(port) as s, RawConn(pubport) as p:
            s.send(cmd("CLIENT", "REPLY", "OFF") + cmd("SUBSCRIBE", "hz:a", "hz:b"))
            out = [s.read_reply_raw() for _ in range(2)]
            assert p.command("PUBLISH", "hz:b", "m1") == 1
            out.append(s.read_reply_raw())
            s.send(PING + cmd("UNSUBSCRIBE") + cmd("CLIENT", "REPLY", "ON") + GET_X)
            return out + [read_for(s)]

    with loaded(bp):
        via = transcript(bp.port, bp.port)
    assert via == transcript(redis_instance.port, redis_instance.port)


# ---------------------------------------------------------------------------------------------
# CLIENT TRACKING REDIRECT

@pytest.mark.parametrize("mode", ["alone", "pipeline", "disconnect", "reset"])
def test_tracking_redirect_under_load(bp, mode):
    """CLIENT TRACKING ON REDIRECT <proxy id of another client> under load: when a tracked key
    changes, the invalidation arrives on the redirect client's __redis__:invalidate channel
    (alone and mid-pipeline); after RESET or a disconnect of the tracked client, changing the key
    sends nothing and breaks nothing."""
    with loaded(bp):
        with bp.raw() as inv, bp.raw() as writer, bp.raw() as tracked:
            inv_id = inv.command("CLIENT", "ID")
            assert inv.command("SUBSCRIBE", "__redis__:invalidate") == [
                b"subscribe", b"__redis__:invalidate", 1]
            assert writer.command("SET", "hz:t", "1") == b"OK"
            on = cmd("CLIENT", "TRACKING", "ON", "REDIRECT", str(inv_id))
            if mode == "alone":
                tracked.send(on + cmd("GET", "hz:t"))
                assert read_all(tracked, 2) == b"+OK\r\n$1\r\n1\r\n"
            elif mode == "pipeline":
                tracked.send(PING + on + cmd("GET", "hz:t") + GET_X)
                assert read_all(tracked, 4) == b"+PONG\r\n+OK\r\n$1\r\n1\r\n$-1\r\n"
            else:
                tracked.send(on + cmd("GET", "hz:t"))
                assert read_all(tracked, 2) == b"+OK\r\n$1\r\n1\r\n"
                if mode == "reset":
                    tracked.send(RESET + cmd("GET", "hz:t"))
                    assert read_all(tracked, 2) == b"+RESET\r\n$1\r\n1\r\n"
                else:
                    tracked.close()
                    time.sleep(0.1)
            assert writer.command("SET", "hz:t", "2") == b"OK"
            if mode in ("alone", "pipeline"):
                assert inv.read_reply() == [b"message", b"__redis__:invalidate", [b"hz:t"]]
                assert tracked.command("CLIENT", "GETREDIR") == inv_id
                assert tracked.command("CLIENT", "TRACKING", "OFF") == b"OK"
                assert tracked.command("GET", "hz:t") == b"2"
            assert not inv.is_closed(0.2) and not inv.buf, bytes(inv.buf)


# ---------------------------------------------------------------------------------------------
# Blocking commands left by their client

@pytest.mark.parametrize("blocking,cmdname,push,woken", [
    (("BLPOP", "hz:l", "0"), "blpop", ("RPUSH", "hz:l", "v"), [b"hz:l", b"v"]),
    (("BRPOP", "hz:l", "0"), "brpop", ("RPUSH", "hz:l", "v"), [b"hz:l", b"v"]),
    (("BLMOVE", "hz:l", "hz:x", "LEFT", "RIGHT", "0"), "blmove", ("RPUSH", "hz:l", "v"), b"v"),
    (("XREAD", "BLOCK", "0", "STREAMS", "hz:st", "$"), "xread", ("XADD", "hz:st", "1-1", "f", "v"),
     [[b"hz:st", [[b"1-1", [b"f", b"v"]]]]]),
], ids=["blpop", "brpop", "blmove", "xread"])
def test_blocked_forever_then_disconnect(bp, redis_instance, blocking, cmdname, push, woken):
    """A command blocked with timeout 0 (alone, and mid-pipeline) under load, then the client
    leaves without reading: the others are never stalled, the blocked upstream connection is
    closed (redis-server no longer shows it blocked), and a value pushed afterwards is not popped
    for nobody. A client still connected is woken at once with the value."""
    r = redis_instance.client()

    def blocked():
        return [c for c in upstream_clients(redis_instance) if c["cmd"] == cmdname]

    with loaded(bp):
        for payload in (cmd(*blocking), PING + cmd(*blocking) + GET_X):
            with bp.raw() as c:
                c.send(payload)
                wait_until(blocked, 5, what=f"{cmdname} to block upstream")
                if payload.startswith(PING):
                    assert c.read_reply_raw() == b"+PONG\r\n"
                assert not c.is_closed(0.1) and not c.buf
            wait_until(lambda: not blocked(), 5, what="the blocked connection to close")
            r.execute_command(*push)
            time.sleep(0.1)
            if cmdname == "xread":
                assert r.xlen("hz:st") == 1
            else:
                assert r.llen("hz:l") == 1 and not r.exists("hz:x")
            r.delete("hz:l", "hz:x", "hz:st")
        with bp.raw() as c:
            c.send(cmd(*blocking))
            wait_until(blocked, 5, what=f"{cmdname} to block upstream")
            t0 = time.monotonic()
            r.execute_command(*push)
            assert c.read_reply() == woken
            assert time.monotonic() - t0 < 1.0
            assert r.lrange("hz:x", 0, -1) == ([b"v"] if cmdname == "blmove" else [])


# ---------------------------------------------------------------------------------------------
# Long scripts and SCRIPT KILL

LOOP = "local i = 0 while true do i = i + 1 end"


@pytest.mark.parametrize("mode", ["alone", "pipeline", "reset", "disconnect"])
def test_long_script_ended_by_script_kill(bp, redis_instance, mode):
    """A script looping forever (busy-reply-threshold 100 ms), alone, mid-pipeline, followed by
    RESET or by a disconnect: once Redis is busy, another client of the proxy (on the shared
    connections) gets Redis's -BUSY at once instead of waiting behind the script, as with Redis;
    SCRIPT KILL through the proxy answers at once and ends it; the script's client gets Redis's
    own replies, byte for byte. Load runs before and after (while a script runs Redis answers
    everybody -BUSY, so no client can run through it without errors)."""
    redis_instance.client().config_set("busy-reply-threshold", 100)
    loop = cmd("EVAL", LOOP, "0")
    payload, n = {"alone": (loop, 1), "pipeline": (PING + loop + GET_X, 3),
                  "reset": (loop + RESET + PING, 3), "disconnect": (loop, 0)}[mode]

    def busy_direct():
        with RawConn(redis_instance.port) as d:
            return d.command("PING").startswith(b"BUSY")

    def run_and_kill(port):
        c = RawConn(port, timeout=10)
        c.send(payload)
        wait_until(busy_direct, 5, what="the script to run")
        if mode == "disconnect":
            c.close()
        with RawConn(port) as other, RawConn(port) as killer:
            t0 = time.monotonic()
            busy = other.command("GET", "hz:a")
            assert isinstance(busy, Err) and busy.startswith(b"BUSY"), busy
            assert time.monotonic() - t0 < 1.0
            t0 = time.monotonic()
            assert killer.command("SCRIPT", "KILL") == b"OK"
            assert time.monotonic() - t0 < 1.0
            # The script stops at its next check of the kill flag: soon, not necessarily before
            # the next command is read.
            wait_until(lambda: other.command("GET", "hz:a") is None, 2, what="the script to end")
        if mode == "disconnect":
            return busy, b""
        got = read_all(c, n)
        assert not c.is_closed(0.1) and not c.buf, bytes(c.buf)
        c.close()
        return busy, got

    with loaded(bp):
        pass
    via = run_and_kill(bp.port)
    with loaded(bp):
        pass
    assert via == run_and_kill(redis_instance.port)


# ---------------------------------------------------------------------------------------------
# CLIENT PAUSE WRITE and CLIENT UNPAUSE

def test_client_pause_write_then_unpause_under_load(bp, redis_instance):
    """CLIENT PAUSE 10000 WRITE through the proxy under load, five times: it answers at once;
    reads of other clients (4 of them, so both shared connections carry one) are answered at
    once while writes wait, as with Redis; CLIENT UNPAUSE from another client answers at once
    and the held write completes; the load saw no error and waited no longer than the pause
    (+1.5 s)."""
    pause = 0.3
    with loaded(bp, max_stall=pause + 1.5):
        for cycle in range(5):
            readers = [RawConn(bp.port) for _ in range(4)]
            with bp.raw() as p, bp.raw() as writer, bp.raw() as u:
                try:
                    t0 = time.monotonic()
                    assert p.command("CLIENT", "PAUSE", "10000", "WRITE") == b"OK"
                    assert time.monotonic() - t0 < 1.0
                    writer.send(cmd("SET", "hz:a", f"held{cycle}"))
                    t0 = time.monotonic()
                    for r in readers:
                        r.send(cmd("GET", "hz:x") + PING)
                    stuck = []
                    for i, r in enumerate(readers):
                        r.timeout = max(0.05, t0 + 2.0 - time.monotonic())
                        try:
                            assert read_all(r, 2) == b"$-1\r\n+PONG\r\n"
                        except TimeoutError:
                            stuck.append(i)
                    assert not stuck, (f"cycle {cycle}: the reads of readers {stuck} were held "
                                       "by the pause (no reply within 2 s)")
                    assert time.monotonic() - t0 < 1.0
                    assert not writer.is_closed(0.05) and not writer.buf   # the write is held
                    time.sleep(pause - 0.1)
                    t0 = time.monotonic()
                    assert u.command("CLIENT", "UNPAUSE") == b"OK"
                    assert writer.read_reply() == b"OK"
                    assert time.monotonic() - t0 < 1.5
                    assert readers[0].command("GET", "hz:a") == b"held%d" % cycle
                finally:
                    with RawConn(redis_instance.port) as d:
                        d.command("CLIENT", "UNPAUSE")
                    for r in readers:
                        r.close()


# ---------------------------------------------------------------------------------------------
# QUIT mid-pipeline

@pytest.mark.parametrize("payload", [
    pipeline(("SET", "hz:q", "1"), ("PING",), ("QUIT",), ("SET", "hz:q", "2"), ("GET", "hz:q")),
    pipeline(("SET", "hz:q", "1"), ("MULTI",), ("SET", "hz:q", "3"), ("QUIT",), ("EXEC",)),
    pipeline(("SET", "hz:q", "1"), ("WATCH", "hz:q"), ("QUIT",), ("SET", "hz:q", "4")),
    pipeline(("SET", "hz:q", "1"), ("SELECT", "5"), ("QUIT",), ("SET", "hz:q", "5")),
    pipeline(("SET", "hz:q", "1"), ("SUBSCRIBE", "hz:c"), ("QUIT",), ("PING",)),
    pipeline(("SET", "hz:q", "1"), ("BLPOP", "hz:l", "0.1"), ("QUIT",), ("SET", "hz:q", "6")),
    pipeline(("SET", "hz:q", "1"), ("CLIENT", "REPLY", "OFF"), ("QUIT",), ("SET", "hz:q", "7")),
], ids=["plain", "multi", "watch", "select", "subscribe", "blpop", "reply-off"])
def test_quit_mid_pipeline(bp, redis_instance, payload):
    """QUIT in the middle of a pipeline under load: the replies up to QUIT's +OK, then the
    connection closes and the commands after QUIT never run: the same bytes and the same data
    as with Redis directly."""
    def go(port):
        clean(redis_instance)
        with RawConn(port) as c:
            c.send_quietly(payload)
            got = c.read_until_eof(5)
        r = redis_instance.client()
        return got, r.get("hz:q"), redis_instance.client(db=5).get("hz:q")

    with loaded(bp):
        via = go(bp.port)
    assert via[1] == b"1"
    assert via == go(redis_instance.port)


# ---------------------------------------------------------------------------------------------
# Transactions holding connection-state commands

@pytest.mark.parametrize("payload,n", [
    (pipeline(("MULTI",), ("SUBSCRIBE", "hz:a", "hz:b"), ("EXEC",), ("PING",)), 5),
    (pipeline(("MULTI",), ("SELECT", "3"), ("SET", "hz:a", "three"), ("EXEC",), ("GET", "hz:a"),
              ("SELECT", "0"), ("GET", "hz:a")), 7),
    (pipeline(("MULTI",), ("CLIENT", "SETNAME", "hz-x"), ("EXEC",), ("CLIENT", "GETNAME")), 4),
    (pipeline(("MULTI",), ("REPLCONF", "ACK", "0"), ("EXEC",), ("PING",)), 3),
    (pipeline(("MULTI",), ("CLIENT", "NO-EVICT", "ON"), ("READONLY",), ("GET", "hz:a"),
              ("EXEC",), ("GET", "hz:a")), 6),
    (pipeline(("MULTI",), ("CLIENT", "REPLY", "SKIP"), ("GET", "hz:a"), ("EXEC",),
              ("GET", "hz:a"), ("PING",)), 4),
    (pipeline(("MULTI",), ("CLIENT", "TRACKING", "ON"), ("EXEC",), ("GET", "hz:a"),
              ("CLIENT", "TRACKING", "OFF")), 5),
], ids=["subscribe", "select", "setname", "replconf-ack", "no-evict-readonly", "reply-skip",
        "tracking"])
def test_transaction_with_state_commands_like_redis(bp, redis_instance, payload, n):
    """MULTI + a connection-state command + EXEC (+ what follows) under load: the client's bytes
    equal Redis's directly, and nothing else arrives."""
    with loaded(bp):
        clean(redis_instance)
        c, via = run(bp.port, payload, n)
        assert_quiet([("transaction", c)])
        c.close()
    clean(redis_instance)
    c, got = run(redis_instance.port, payload, n)
    c.close()
    assert via == got


def test_transaction_subscribe_then_messages_like_redis(bp, redis_instance):
    """MULTI + SUBSCRIBE a b + EXEC + PING: then a message published by another client arrives,
    and UNSUBSCRIBE answers per channel, as with Redis directly (the connection is a tunnel)."""
    payload = pipeline(("MULTI",), ("SUBSCRIBE", "hz:a", "hz:b"), ("EXEC",), ("PING",))

    def transcript(port):
        with RawConn(port) as s, RawConn(port) as p:
            s.send(payload)
            out = read_all(s, 5)
            assert p.command("PUBLISH", "hz:b", "hello") == 1
            out += s.read_reply_raw()
            s.send(cmd("UNSUBSCRIBE") + GET_X)
            out += read_all(s, 3)
            assert not s.is_closed(0.15) and not s.buf, bytes(s.buf)
            return out

    with loaded(bp):
        via = transcript(bp.port)
    assert via == transcript(redis_instance.port)


def test_transaction_select_moves_the_client_to_db3(bp, redis_instance):
    """MULTI + SELECT 3 + SET + EXEC: afterwards the same client sees db 3 (GET, CLIENT INFO
    shows db=3), other clients db 0, and redis-server has the key in db 3."""
    with loaded(bp):
        with bp.raw() as c, bp.raw() as other:
            c.send(pipeline(("MULTI",), ("SELECT", "3"), ("SET", "hz:a", "three"), ("EXEC",)))
            assert read_all(c, 4) == b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n"
            assert c.command("GET", "hz:a") == b"three"
            assert b" db=3 " in c.command("CLIENT", "INFO")
            assert other.command("GET", "hz:a") is None
            assert b" db=0 " in other.command("CLIENT", "INFO")
            assert c.command("SET", "hz:x", "in3") == b"OK"
            assert redis_instance.client(db=3).get("hz:x") == b"in3"
            assert redis_instance.client().get("hz:x") is None


def test_transaction_client_id_is_the_proxy_id(bp):
    """MULTI + CLIENT ID + EXEC answers the proxy's id of the client (an integer), the same as
    CLIENT ID outside the transaction."""
    with loaded(bp):
        with bp.raw() as c:
            my_id = c.command("CLIENT", "ID")
            assert isinstance(my_id, int)
            c.send(pipeline(("MULTI",), ("CLIENT", "ID"), ("EXEC",)))
            assert read_all(c, 3) == b"+OK\r\n+QUEUED\r\n*1\r\n:%d\r\n" % my_id
            assert c.command("CLIENT", "ID") == my_id


def test_transaction_client_kill_type_normal_spares_upstream_connections(proxy, redis_instance,
                                                                        redis_factory):
    """MULTI + CLIENT KILL TYPE normal + EXEC kills the proxy's other client (as Redis would
    kill its other client: the same bytes as a direct redis-server with one other client), never
    the proxy's upstream connections: the killer keeps working, a new client works at once, a
    client of a second proxy on the same redis-server (created before) keeps working, and every
    upstream connection that existed before is still in redis-server's CLIENT LIST."""
    payload = pipeline(("MULTI",), ("CLIENT", "KILL", "TYPE", "normal"), ("EXEC",))
    a, b = proxy(), proxy()
    with a.raw() as other, b.raw() as b_client, a.raw() as h:
        assert other.command("SET", "hz:a", "1") == b"OK"
        assert b_client.command("GET", "hz:a") == b"1"
        assert h.command("GET", "hz:a") == b"1"
        before = {c["id"] for c in upstream_clients(redis_instance)}
        h.send(payload)
        via = read_all(h, 3)
        assert other.is_closed(2.0), "the other client of the proxy was not killed"
        assert h.command("GET", "hz:a") == b"1"
        assert h.command("PING") == b"PONG"
        assert b_client.command("SET", "hz:a", "2") == b"OK"
        assert b_client.command("GET", "hz:a") == b"2"
        with a.raw() as fresh:
            assert fresh.command("GET", "hz:a") == b"2"
        after = {c["id"] for c in upstream_clients(redis_instance)}
        gone = before - after
        assert not gone, f"upstream connections killed: {gone}"
    assert a.alive() and b.alive()
    assert_fresh_clients_clean(a)
    ref = redis_factory()
    with RawConn(ref.port) as ref_other:
        assert ref_other.command("PING") == b"PONG"
        assert via == direct(ref, payload, 3)
        assert ref_other.is_closed(2.0)


# ---------------------------------------------------------------------------------------------
# The proxy's own commands on a client's connection

def test_watch_survives_the_proxys_own_commands(bp):
    """Under load, a client WATCHes a key and then runs commands the proxy implements with its
    own upstream commands on the client's pinned connection (TYPE, BF.*, DEL/EXPIRE of a
    filter): its transaction still commits (no MULTI/EXEC of the proxy's reset the WATCH), a
    change by another client still aborts it, and a DEL of a watched filter by another client
    aborts it too, as DEL of a watched key does in Redis."""
    with loaded(bp):
        with bp.raw() as c, bp.raw() as other:
            assert other.command("BF.ADD", "hz:bf", "x") == 1
            c.send(pipeline(("WATCH", "hz:w"), ("TYPE", "hz:bf"), ("BF.ADD", "hz:bf", "y"),
                            ("BF.EXISTS", "hz:bf", "x"), ("EXPIRE", "hz:bf", "100"),
                            ("TYPE", "hz:w"), ("DEL", "hz:nothing"), ("MULTI",),
                            ("SET", "hz:w", "v"), ("EXEC",)))
            assert read_all(c, 10) == (b"+OK\r\n+MBbloom--\r\n:1\r\n:1\r\n:1\r\n+none\r\n:0\r\n"
                                       b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n")
            c.send(pipeline(("WATCH", "hz:w"), ("TYPE", "hz:bf"), ("BF.ADD", "hz:bf", "z")))
            assert read_all(c, 3) == b"+OK\r\n+MBbloom--\r\n:1\r\n"
            assert other.command("SET", "hz:w", "theirs") == b"OK"
            c.send(pipeline(("EXPIRE", "hz:bf", "200"), ("MULTI",), ("SET", "hz:w", "mine"),
                            ("EXEC",), ("GET", "hz:w")))
            assert read_all(c, 5) == b":1\r\n+OK\r\n+QUEUED\r\n*-1\r\n$6\r\ntheirs\r\n"
            assert c.command("WATCH", "hz:bf") == b"OK"
            assert other.command("DEL", "hz:bf") == 1
            c.send(pipeline(("MULTI",), ("SET", "hz:w", "mine"), ("EXEC",)))
            assert read_all(c, 3) == b"+OK\r\n+QUEUED\r\n*-1\r\n"
            assert c.command("BF.EXISTS", "hz:bf", "x") == 0
