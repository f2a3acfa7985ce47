"""Replication through the proxy: SYNC, PSYNC and REPLCONF make the client's upstream connection a
raw tunnel of its own (docs/connections.md), so an RDB transfer and the replication stream reach
the client unchanged and never touch the shared connections other clients are multiplexed on.

Checked with the real replication clients: `redis-cli --rdb` (the file loads into a fresh
redis-server with the same keys), `redis-cli --replica` (the stream of writes), and a
redis-server started with `--replicaof` the proxy (full sync, stream, REPLCONF ACK for WAIT, a
partial resync after the link breaks; with passwords on both sides). Meanwhile pipelined
clients under load see no error, no wrong reply and no stall, and the proxy never logs a protocol
error from the upstream. Also: SYNC after pipelined commands, REPLCONF/SYNC inside MULTI (Redis's
bytes), SYNC/PSYNC refused by deny-command, by a user's rules and before AUTH as Redis refuses
them, a replica that leaves mid-transfer, the upstream dying under a tunnel, and a replica that
reads the RDB slowly (the proxy's memory stays bounded, then the whole file arrives).
"""

import csv
import os
import socket
import struct
import subprocess
import threading
import time

import pytest

from bp_helpers import (HOST, SMALL_QUARANTINE, Load, RawConn, compare_with_redis,
                        encode_command as cmd, replies_of, rss_kb, wait_until)

PROTOCOL_ERROR = "protocol error from upstream"
MB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Helpers


def no_diskless_delay(server):
    """The upstream starts an RDB transfer at once instead of waiting 5 s for more replicas."""
    server.client().config_set("repl-diskless-sync-delay", "0")


def info_field(server, section, name):
    """The field `name` of INFO `section` of a redis-server (a RedisServer), as a string."""
    with RawConn(server.port) as c:
        if server.password:
            assert c.command("AUTH", server.password) == b"OK"
        info = c.command("INFO", section).decode()
    for line in info.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None


def connected_replicas(server):
    return int(info_field(server, "replication", "connected_slaves"))


def client_list(server):
    with RawConn(server.port) as c:
        if server.password:
            c.command("AUTH", server.password)
        return c.command("CLIENT", "LIST").decode()


def replication_conns(server):
    """The upstream's connections that took part in replication: replicas (flag S) and those
    whose last command was SYNC, PSYNC or REPLCONF."""
    found = []
    for line in client_list(server).splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "S" in fields.get("flags", "") or fields.get("cmd") in ("sync", "psync", "replconf"):
            found.append(line)
    return found


def wait_no_replicas(server, timeout=5.0):
    """The upstream lost its replicas (connected_slaves:0) and every tunnel's upstream connection
    is closed (none kept in a pool, none leaked)."""
    try:
        wait_until(lambda: connected_replicas(server) == 0 and not replication_conns(server),
                   timeout, what="the upstream to lose its replicas and their connections")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; upstream CLIENT LIST:\n{client_list(server)}") from None


def assert_log_clean(p):
    log = p.log()
    assert PROTOCOL_ERROR not in log, "the proxy logged a protocol error:\n" + log[-3000:]
    assert p.alive(), "the proxy exited:\n" + log[-3000:]


def redis_cli(*args, timeout=60):
    return subprocess.run(["redis-cli", "-h", HOST, *[str(a) for a in args]],
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def rdb_via_cli(port, path, timeout=60):
    """`redis-cli --rdb path` against `port`; asserts it succeeded."""
    res = redis_cli("-p", port, "--rdb", path, timeout=timeout)
    out = res.stdout.decode(errors="replace") + res.stderr.decode(errors="replace")
    assert res.returncode == 0, f"redis-cli --rdb failed ({res.returncode}):\n{out}"
    assert "Transfer finished with success" in out, out
    assert path.exists() and path.read_bytes()[:5] == b"REDIS", out
    return path


def load_rdb(redis_factory, path):
    """A fresh redis-server that loads the RDB file at `path` at startup."""
    server = redis_factory(extra_args=("--dir", str(path.parent), "--dbfilename", path.name))
    log = server.log_path.read_text(errors="replace")
    assert "DB loaded from disk" in log, log[-2000:]
    return server


def read_sync_header(conn, timeout=30.0):
    """Reads the start of a SYNC reply on RawConn `conn`: the newlines Redis sends while it
    prepares the RDB, then `$<len>\\r\\n`. Returns len (disk-based transfer: no EOF capa)."""
    deadline = time.monotonic() + timeout
    while True:
        while conn.buf[:1] == b"\n":
            del conn.buf[:1]
        end = conn.buf.find(b"\r\n")
        if end >= 0:
            line = bytes(conn.buf[:end])
            del conn.buf[:end + 2]
            assert line.startswith(b"$") and line[1:].isdigit(), f"not a bulk header: {line!r}"
            return int(line[1:])
        assert time.monotonic() < deadline, "no RDB header within %ss" % timeout
        conn._fill(timeout)


def small_window_conn(port, rcvbuf, timeout=30.0):
    """A RawConn whose receive buffer is set to `rcvbuf` before connecting (so the TCP window
    stays small from the start)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    sock.connect((HOST, port))
    c = RawConn.__new__(RawConn)
    c.sock, c.timeout, c.buf = sock, timeout, bytearray()
    return c


def populate_big(server, total_mb, prefix="big"):
    """`total_mb` keys of 1 MB of random (incompressible) bytes, written directly."""
    r = server.client()
    pipe = r.pipeline(transaction=False)
    for i in range(total_mb):
        pipe.set(f"{prefix}:{i}", os.urandom(MB))
    pipe.execute()
    return r


class LineReader:
    """Collects the lines a subprocess writes on a pipe, in a thread."""

    def __init__(self, stream):
        self.lines = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream):
        for line in iter(stream.readline, b""):
            with self._lock:
                self.lines.append(line.decode(errors="replace").rstrip("\n"))

    def snapshot(self):
        with self._lock:
            return list(self.lines)

    def join(self, timeout=5):
        self._thread.join(timeout)


# ---------------------------------------------------------------------------------------------
# Data of every type, written through the proxy.


def fill_every_type(p):
    """Strings, hashes, lists, sets, zsets, a stream with a consumer group, keys with TTLs, a
    key in db 1 and bloom filters (BF.ADD through the proxy: its plain keys), a few hundred
    keys in all. Returns the number of keys in db 0."""
    r = p.client()
    pipe = r.pipeline(transaction=False)
    for i in range(150):
        pipe.set(f"str:int:{i}", i)
        pipe.set(f"str:emb:{i}", f"value-{i}")
    pipe.set("str:raw", "x" * 5000)
    pipe.set("str:bin", bytes(range(256)) * 4)
    pipe.set("str:empty", "")
    pipe.hset("hash:small", mapping={f"f{i}": f"v{i}" for i in range(5)})
    pipe.hset("hash:big", mapping={f"field:{i}": "v" * (i % 90) for i in range(700)})
    pipe.rpush("list:small", "a", "b", "c", 1, 2)
    pipe.rpush("list:big", *[f"item-{i}" * 3 for i in range(2000)])
    pipe.sadd("set:int", *range(20))
    pipe.sadd("set:str", *[f"m{i}" for i in range(20)])
    pipe.sadd("set:big", *[f"member-{i}" for i in range(800)])
    pipe.zadd("zset:small", {"a": 1, "b": 2.5, "c": -3})
    pipe.zadd("zset:big", {f"z{i}": i / 7 for i in range(400)})
    for i in range(60):
        pipe.xadd("stream", {"n": i, "payload": "p" * (i % 13)}, id=f"{1000 + i}-{i % 3}")
    for i in range(40):
        pipe.set(f"ttl:{i}", i, ex=3600 + i)
    pipe.hset("ttl:hash", "f", "v")
    pipe.expire("ttl:hash", 7200)
    pipe.execute()
    r.xgroup_create("stream", "group", id="0")
    r.xreadgroup("group", "consumer", {"stream": ">"}, count=10)
    for i in range(300):
        pipe.execute_command("BF.ADD", "bf", f"item-{i}")
    pipe.execute_command("BF.RESERVE", "bf:exact", "0.001", "1000")
    pipe.execute_command("BF.MADD", "bf:exact", *[f"e{i}" for i in range(50)])
    assert all(isinstance(x, int) or x == b"OK" or isinstance(x, list) for x in pipe.execute())
    r1 = p.client(db=1)
    r1.set("db1:key", "in db 1")
    r1.close()
    return r.dbsize()


def user_keys(r):
    return {k for k in r.scan_iter(count=1000) if not k.startswith(b"load:")}


def value_of(r, key):
    """(type, value) of `key`, comparable between servers whatever the order of a hash table."""
    kind = r.type(key)
    if kind == b"string":
        return kind, r.get(key)
    if kind == b"hash":
        return kind, r.hgetall(key)
    if kind == b"list":
        return kind, r.lrange(key, 0, -1)
    if kind == b"set":
        return kind, r.smembers(key)
    if kind == b"zset":
        return kind, r.zrange(key, 0, -1, withscores=True)
    if kind == b"stream":
        info = r.xinfo_stream(key)
        pending = r.xpending_range(key, "group", "-", "+", 100)
        return kind, (r.xrange(key), [info[f] for f in ("length", "last-generated-id")],
                      r.xinfo_groups(key),
                      [(x["message_id"], x["consumer"], x["times_delivered"]) for x in pending])
    raise AssertionError(f"unexpected type {kind!r} of {key!r}")


def assert_same_data(upstream, loaded):
    """Every key of `upstream` (except the load clients' ever-changing ones) is in `loaded` with
    the same type and value, and a TTL when it had one; nothing more."""
    up, lo = upstream.client(), loaded.client()
    want = user_keys(up)
    assert len(want) > 300
    got = user_keys(lo)
    assert got == want, f"missing {sorted(want - got)[:10]}, extra {sorted(got - want)[:10]}"
    load_keys = [k for k in lo.scan_iter(match="load:*", count=1000)]
    assert lo.dbsize() == len(want) + len(load_keys)
    for k in sorted(want):
        assert value_of(lo, k) == value_of(up, k), f"{k!r} differs"
        ttl = up.pttl(k)
        if ttl < 0:
            assert lo.pttl(k) == ttl, k
        else:
            assert 0 < lo.pttl(k) <= ttl + 1000, k
    for k in load_keys:
        assert lo.type(k) == b"string", k
    # The other database too.
    up1, lo1 = upstream.client(db=1), loaded.client(db=1)
    assert lo1.dbsize() == up1.dbsize() == 1
    assert lo1.get("db1:key") == b"in db 1"


# ---------------------------------------------------------------------------------------------
# redis-cli --rdb


def test_redis_cli_rdb_through_proxy_loads_into_a_fresh_server(proxy, redis_instance,
                                                                 redis_factory, tmp_path):
    """Two `redis-cli --rdb` at once through the proxy, while clients run pipelined load, write
    RDB files that fresh redis-servers load with every key, type, value and TTL of the upstream
    (DUMP compared key by key), bloom filters included: a proxy over the loaded copy answers
    BF.EXISTS/BF.CARD for them. The load clients see no error and no stall."""
    p = proxy()
    no_diskless_delay(redis_instance)
    fill_every_type(p)
    files = [tmp_path / "a" / "dump-a.rdb", tmp_path / "b" / "dump-b.rdb"]
    for f in files:
        f.parent.mkdir()
    with Load(p.port) as load:
        results = [None, None]

        def dump(i):
            try:
                results[i] = rdb_via_cli(p.port, files[i])
            except BaseException as exc:  # noqa: BLE001 - reported below
                results[i] = exc

        threads = [threading.Thread(target=dump, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        # One more, alone, with the load still running.
        single = rdb_via_cli(p.port, tmp_path / "dump-c.rdb")
    load.assert_clean(max_stall=2)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    assert_log_clean(p)
    wait_no_replicas(redis_instance)

    for f in files + [single]:
        loaded = load_rdb(redis_factory, f)
        assert_same_data(redis_instance, loaded)
        loaded.kill()
    # The filters work from the copy.
    copy = load_rdb(redis_factory, files[0])
    with proxy(upstream=copy.address).raw() as c, p.raw() as orig:
        card = orig.command("BF.CARD", "bf")
        assert 290 <= card <= 300
        assert c.command("BF.CARD", "bf") == card
        assert c.command("BF.MEXISTS", "bf", *[f"item-{i}" for i in range(300)]) == [1] * 300
        assert c.command("BF.INFO", "bf") == orig.command("BF.INFO", "bf")
        assert c.command("BF.MEXISTS", "bf:exact", "e0", "e49") == [1, 1]
        assert c.command("BF.INFO", "bf:exact", "CAPACITY") == [1000]


def test_redis_cli_rdb_with_a_20mb_value(proxy, redis_instance, redis_factory, tmp_path):
    """An RDB holding a 20 MB string (random, so not compressed: the transfer spans many reads)
    comes through the proxy whole: the loaded copy holds the same bytes. Load unaffected."""
    p = proxy()
    no_diskless_delay(redis_instance)
    big = os.urandom(20 * MB)
    r = p.client()
    r.set("huge", big)
    r.set("small", "s")
    r.rpush("list", *[b"x" * 1000] * 100)
    with Load(p.port) as load:
        path = rdb_via_cli(p.port, tmp_path / "huge.rdb")
    load.assert_clean(max_stall=2)
    assert_log_clean(p)
    assert path.stat().st_size > 20 * MB
    loaded = load_rdb(redis_factory, path).client()
    assert loaded.get("huge") == big
    assert loaded.get("small") == b"s"
    assert loaded.lrange("list", 0, -1) == [b"x" * 1000] * 100
    wait_no_replicas(redis_instance)


def test_sync_pipelined_behind_commands_is_refused_like_redis(bp, redis_instance):
    """SET/GET/SYNC in one write: Redis refuses the SYNC ("invalid with pending output": the
    replies before it are not written yet); so does the proxy, byte for byte, and the connection
    goes on as a normal one."""
    no_diskless_delay(redis_instance)
    compare_with_redis(bp.port, redis_instance,
                       cmd("SET", "a", "1") + cmd("GET", "a") + cmd("SYNC") + cmd("GET", "a"), 4)
    assert_log_clean(bp)


def test_sync_after_answered_commands_streams(bp, redis_instance):
    """SET and GET answered, then SYNC: the RDB as a bulk, then the replication stream. The
    client's later bytes (REPLCONF ACK) reach the upstream, which counts it as a replica until
    it closes."""
    no_diskless_delay(redis_instance)
    redis_instance.client().set("k", "v")
    with RawConn(bp.port, timeout=20) as c:
        c.send(cmd("SET", "a", "1") + cmd("GET", "a"))
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.read_reply_raw() == b"$1\r\n1\r\n"
        c.send(cmd("SYNC"))
        n = read_sync_header(c)
        rdb = c.read_exact(n)
        assert rdb[:5] == b"REDIS" and rdb[-9:-8] == b"\xff", rdb[:20]
        assert b"k" in rdb and b"a" in rdb
        c.send(cmd("REPLCONF", "ACK", "0"))
        wait_until(lambda: "state=online" in (info_field(redis_instance, "replication",
                                                         "slave0") or ""),
                   5, what="an online replica")
        # The stream follows: a write through another client arrives, framed as a command.
        with bp.raw() as w:
            assert w.command("SET", "streamed", "yes") == b"OK"
        wait_until(lambda: b"streamed" in c.buf or c._fill(1) or b"streamed" in c.buf, 5,
                   what="the write in the replication stream")
        assert cmd("SET", "streamed", "yes") in bytes(c.buf)
    wait_no_replicas(redis_instance)
    assert_log_clean(bp)


def test_replconf_and_sync_inside_multi_match_redis(bp, redis_instance):
    """Inside MULTI: REPLCONF ACK (queued, no reply inside EXEC's array) and SYNC (refused inside
    a transaction) get Redis's own bytes, and the connection goes on as on Redis."""
    compare_with_redis(bp.port, redis_instance,
                       cmd("MULTI") + cmd("SET", "m", "1") + cmd("REPLCONF", "ACK", "0")
                       + cmd("GET", "m") + cmd("EXEC") + cmd("PING") + cmd("GET", "m"), 6)
    compare_with_redis(bp.port, redis_instance,
                       cmd("MULTI") + cmd("SET", "m", "1") + cmd("SYNC") + cmd("EXEC")
                       + cmd("GET", "m") + cmd("MULTI") + cmd("PSYNC", "?", "-1")
                       + cmd("DISCARD") + cmd("GET", "m"), 9)
    assert_log_clean(bp)


# ---------------------------------------------------------------------------------------------
# redis-cli --replica


def test_redis_cli_replica_streams_writes_of_other_clients(proxy, redis_instance):
    """`redis-cli --replica` through the proxy syncs while clients run pipelined load, then
    prints (CSV) the writes other proxy clients make, in order. Idle with nothing to receive,
    it is not closed by the proxy's `timeout` (Redis never times out a replica). When it is
    killed the upstream loses the replica. The load clients see no error and no stall."""
    p = proxy("--timeout", "1")
    no_diskless_delay(redis_instance)
    # No PING from the upstream on the replication stream while the replica idles below.
    redis_instance.client().config_set("repl-ping-replica-period", "60")
    for i in range(200):
        redis_instance.client().set(f"before:{i}", i)
    cli = subprocess.Popen(["redis-cli", "-h", HOST, "-p", str(p.port), "--replica"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL)
    try:
        out, err = LineReader(cli.stdout), LineReader(cli.stderr)
        with Load(p.port) as load:
            wait_until(lambda: any("SYNC done" in ln for ln in err.snapshot()), 15,
                       what="redis-cli --replica to finish its sync")
            assert connected_replicas(redis_instance) == 1
            # The load clients' writes stream to it (a replica sees every write).
            wait_until(lambda: any(ln.lower().startswith('"set","load:')
                                   for ln in out.snapshot()[-100:]), 10,
                       what="the load's writes in redis-cli --replica's output")
        load.assert_clean(max_stall=2)
        with p.raw() as idle:
            time.sleep(2.5)  # idle, no bytes either way, past the proxy's client timeout
            assert idle.is_closed(1.0), "the proxy's timeout did not close an idle client"
        assert cli.poll() is None, err.snapshot()
        with Load(p.port, prefix="load:2") as load:
            w = p.client()
            w.set("repl:k", "v1")
            w.incr("repl:n")
            w.rpush("repl:list", "a", "b")
            w.hset("repl:hash", "f", "v")
            w.delete("repl:k")
            w.set("repl:last", "done")
            expected = [["set", "repl:k", "v1"], ["incrby", "repl:n", "1"],
                        ["rpush", "repl:list", "a", "b"], ["hset", "repl:hash", "f", "v"],
                        ["del", "repl:k"], ["set", "repl:last", "done"]]

            def mine():
                rows = []
                for line in out.snapshot():
                    if '"repl:' not in line:
                        continue
                    row = next(csv.reader([line]))
                    rows.append([row[0].lower()] + row[1:])
                return rows

            wait_until(lambda: len(mine()) >= len(expected), 10,
                       what="the writes in redis-cli --replica's output")
            assert mine() == expected, out.snapshot()[-20:]
            assert cli.poll() is None, err.snapshot()
        load.assert_clean(max_stall=2)
    finally:
        cli.kill()
        cli.wait(10)
    wait_no_replicas(redis_instance)
    with p.raw() as c:
        assert c.command("GET", "repl:last") == b"done"
    assert_log_clean(p)


# ---------------------------------------------------------------------------------------------
# Real replicas, passwords, an upstream that dies


def replica_link_up(server):
    return info_field(server, "replication", "master_link_status") == "up"


def test_redis_server_replicates_through_the_proxy(proxy, redis_instance, redis_factory):
    """A redis-server with `--replicaof` the proxy: full sync (keys and bloom filters written
    before), then the writes made through the proxy afterwards; its REPLCONF ACKs reach the
    upstream (WAIT 1 through the proxy answers 1); after the upstream drops the link (CLIENT
    KILL TYPE replica) it reconnects through the proxy with a partial resync. Load unaffected."""
    p = proxy()
    no_diskless_delay(redis_instance)
    w = p.client()
    for i in range(100):
        w.set(f"pre:{i}", i)
    w.execute_command("BF.ADD", "filter", "x")
    with Load(p.port) as load:
        replica = redis_factory(extra_args=("--replicaof", HOST, str(p.port)))
        rr = replica.client()
        wait_until(lambda: replica_link_up(replica), 15, what="master_link_status:up")
        assert info_field(replica, "replication", "master_port") == str(p.port)
        # Online once the upstream has the replica's first REPLCONF ACK (through the tunnel).
        wait_until(lambda: "state=online" in info_field(redis_instance, "replication",
                                                        "slave0"), 5, what="state=online")
        slave0 = info_field(redis_instance, "replication", "slave0")
        assert slave0.startswith(f"ip=127.0.0.1,port={replica.port},state=online"), slave0
        assert rr.get("pre:99") == b"99"
        assert rr.dbsize() >= 100

        w.set("post:1", "a")
        w.hset("post:hash", "f", "v")
        w.execute_command("BF.ADD", "filter", "y")
        wait_until(lambda: rr.get("post:1") == b"a", 5, what="post:1 on the replica")
        wait_until(lambda: rr.hget("post:hash", "f") == b"v", 5, what="post:hash")
        # The BF keys are plain keys: the replica holds exactly the upstream's.
        up = redis_instance.client()
        bf_keys = sorted(k for k in up.scan_iter(count=1000) if b"filter" in k)
        assert bf_keys
        wait_until(lambda: all(rr.dump(k) == up.dump(k) for k in bf_keys), 5,
                   what="the filter's keys on the replica")

        # ACKs flow from the replica through the tunnel: WAIT sees the replica.
        with p.raw(timeout=10) as c:
            assert c.command("SET", "acked", "1") == b"OK"
            t0 = time.monotonic()
            assert c.command("WAIT", "1", "5000") == 1
            assert time.monotonic() - t0 < 2.5

        # The link breaks: the replica comes back through the proxy with a partial resync.
        partial_before = int(info_field(redis_instance, "stats", "sync_partial_ok"))
        full_before = int(info_field(redis_instance, "stats", "sync_full"))
        assert up.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
        wait_until(lambda: int(info_field(redis_instance, "stats", "sync_partial_ok"))
                   > partial_before, 15, what="a partial resync through the proxy")
        wait_until(lambda: replica_link_up(replica), 10, what="master_link_status:up again")
        assert int(info_field(redis_instance, "stats", "sync_full")) == full_before
        w.set("post:2", "b")
        wait_until(lambda: rr.get("post:2") == b"b", 5, what="post:2 on the replica")
        assert rr.get("acked") == b"1"
        replica.kill()
        wait_no_replicas(redis_instance, timeout=5)
    load.assert_clean(max_stall=2)
    assert_log_clean(p)


def test_replica_authenticates_with_the_proxy(proxy, redis_factory, tmp_path):
    """Passwords on both sides: a proxy with `--requirepass` in front of an upstream that needs
    `--upstream-password`. SYNC/PSYNC/REPLCONF before AUTH get Redis's -NOAUTH (as from a Redis
    with requirepass) and start nothing; a redis-server with `--masterauth` replicates through
    the proxy (its tunnel connection authenticated upstream by the proxy), `redis-cli -a --rdb`
    too."""
    upstream = redis_factory(password="up-secret")
    reference = redis_factory(password="secret")
    no_diskless_delay(upstream)
    p = proxy("--requirepass", "secret", "--upstream-password", "up-secret",
              upstream=upstream.address)
    replies = compare_with_redis(
        p.port, reference,
        cmd("SYNC") + b"SYNC\r\n" + cmd("PSYNC", "?", "-1") + cmd("REPLCONF", "capa", "eof")
        + cmd("AUTH", "secret") + cmd("PING"), 6)
    assert replies[:4] == [b"-NOAUTH Authentication required.\r\n"] * 4
    assert info_field(upstream, "stats", "sync_full") == "0"
    w = p.client(password="secret")
    w.set("before", "1")
    replica = redis_factory(extra_args=("--replicaof", HOST, str(p.port),
                                        "--masterauth", "secret"))
    wait_until(lambda: replica_link_up(replica), 15, what="master_link_status:up")
    rr = replica.client()
    assert rr.get("before") == b"1"
    w.set("after", "2")
    wait_until(lambda: rr.get("after") == b"2", 5, what="a write on the replica")
    res = redis_cli("-p", p.port, "-a", "secret", "--no-auth-warning", "--rdb",
                    tmp_path / "auth.rdb")
    assert res.returncode == 0, res.stderr
    replica.kill()
    wait_no_replicas(upstream)
    loaded = load_rdb(redis_factory, tmp_path / "auth.rdb").client()
    assert loaded.get("after") == b"2"
    assert_log_clean(p)


def test_tunnels_when_the_upstream_dies(proxy, redis_instance, restart_redis, tmp_path):
    """The upstream dies under a `redis-cli --replica` tunnel: the replica's connection is
    closed (redis-cli exits), the proxy stays up; SYNC while the upstream is down gets the
    proxy's prompt `-ERR upstream unavailable` instead of a tunnel that hangs; once the
    upstream is back, `redis-cli --rdb` works again."""
    p = proxy()
    no_diskless_delay(redis_instance)
    cli = subprocess.Popen(["redis-cli", "-h", HOST, "-p", str(p.port), "--replica"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL)
    try:
        err = LineReader(cli.stderr)
        wait_until(lambda: any("SYNC done" in ln for ln in err.snapshot()), 15,
                   what="redis-cli --replica to finish its sync")
        redis_instance.kill()
        cli.wait(10)  # the tunnel closed: redis-cli noticed and exited
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(10)
    with p.raw() as c:
        wait_until(lambda: c.command("GET", "x").startswith(b"ERR upstream unavailable"), 5,
                   what="the proxy to see the upstream down")
        for args in (("SYNC",), ("PSYNC", "?", "-1"), ("REPLCONF", "capa", "eof")):
            t0 = time.monotonic()
            reply = c.command(*args)
            assert reply.startswith(b"ERR upstream unavailable"), (args, reply)
            assert time.monotonic() - t0 < 2.5
        assert c.command("GET", "x").startswith(b"ERR upstream unavailable")
    restart_redis(redis_instance.port)
    no_diskless_delay(redis_instance)
    with p.raw() as c:
        wait_until(lambda: c.command("SET", "x", "back") == b"OK", 10, what="service back")
    rdb_via_cli(p.port, tmp_path / "back.rdb")
    assert_log_clean(p)


# ---------------------------------------------------------------------------------------------
# Refused replication


def unknown(name, args=()):
    return (b"-ERR unknown command '" + name + b"', with args beginning with: "
            + b"".join(b"'" + a + b"' " for a in args) + b"\r\n")


def test_denied_sync_and_psync_are_unknown_commands(proxy, redis_instance, redis_factory,
                                                     tmp_path):
    """With `--deny-command SYNC --deny-command PSYNC`, SYNC and PSYNC (multibulk or inline) get
    the unknown-command error of a Redis where they are renamed away, byte for byte, and the
    connection goes on; `redis-cli --rdb` fails (non-zero exit, no file) without hanging; the
    upstream never starts a transfer. Load unaffected."""
    reference = redis_factory(extra_args=("--rename-command", "SYNC", "",
                                          "--rename-command", "PSYNC", ""))
    p = proxy("--deny-command", "SYNC", "--deny-command", "PSYNC")
    no_diskless_delay(redis_instance)
    with Load(p.port) as load:
        replies = compare_with_redis(
            p.port, reference,
            cmd("SET", "a", "1") + cmd("SYNC") + b"SYNC\r\n" + cmd("PSYNC", "?", "-1")
            + cmd("psync", "abc", "12") + cmd("GET", "a"), 6)
        assert replies[1:5] == [unknown(b"SYNC"), unknown(b"SYNC"),
                                unknown(b"PSYNC", (b"?", b"-1")),
                                unknown(b"psync", (b"abc", b"12"))]
        assert replies[5] == b"$1\r\n1\r\n"
        t0 = time.monotonic()
        res = redis_cli("-p", p.port, "--rdb", tmp_path / "denied.rdb", timeout=15)
        assert res.returncode != 0, res
        assert time.monotonic() - t0 < 10
        assert not (tmp_path / "denied.rdb").exists()
        with p.raw() as c:
            assert c.command("GET", "a") == b"1"
    load.assert_clean(max_stall=2)
    assert info_field(redis_instance, "stats", "sync_full") == "0"
    wait_no_replicas(redis_instance)
    assert_log_clean(p)


@pytest.mark.parametrize("how", ["deny-command", "user-rules"])
def test_refused_sync_after_replconf_answers_like_redis(proxy, redis_instance, redis_factory,
                                                        tmp_path, how):
    """`redis-cli --rdb` sends REPLCONF (allowed) before SYNC. A SYNC refused there (by
    deny-command, or by a user's rules that allow REPLCONF but not SYNC) must get Redis's own
    error on the same connection, as from a Redis with SYNC renamed away / the same ACL user:
    `+OK` for REPLCONF, then the error, and redis-cli reports the same failure."""
    if how == "deny-command":
        reference = redis_factory(extra_args=("--rename-command", "SYNC", ""))
        p = proxy("--deny-command", "SYNC")
        login, cli_auth = b"", ()
        error = unknown(b"SYNC")
    else:
        reference = redis_factory()
        reference.client().execute_command("ACL", "SETUSER", "repl", "on", ">pw", "~*", "&*",
                                           "+@all", "-sync", "-psync")
        conf = tmp_path / "users.conf"
        conf.write_text("user repl pw +@all -sync -psync\n")
        p = proxy("--config", conf)
        login, cli_auth = cmd("AUTH", "repl", "pw"), ("--user", "repl", "--pass", "pw",
                                                      "--no-auth-warning")
        error = b"-NOPERM this user has no permissions to run the 'sync' command\r\n"
    n = 3 if login else 2
    payload = login + cmd("REPLCONF", "capa", "eof") + cmd("SYNC")
    direct = replies_of(reference.port, payload, n)
    assert direct[-2:] == [b"+OK\r\n", error]
    with p.raw() as c:
        c.send(payload)
        got = []
        try:
            for _ in range(n):
                got.append(c.read_reply_raw())
        except EOFError:
            got.append("<connection closed by the proxy>")
    assert got == direct, f"through the proxy {got!r}, Redis answers {direct!r}"

    outs = []
    for port in (reference.port, p.port):
        res = redis_cli("-p", port, *cli_auth, "--rdb", tmp_path / f"x{port}.rdb", timeout=15)
        assert res.returncode != 0
        outs.append(res.stderr.decode(errors="replace"))
    assert outs[1] == outs[0], f"redis-cli through the proxy:\n{outs[1]}\ndirectly:\n{outs[0]}"
    assert_log_clean(p)


def test_user_without_dangerous_commands_gets_noperm_for_sync(proxy, redis_instance,
                                                              redis_factory, tmp_path):
    """A user whose rules are `+@all -@dangerous` gets Redis's -NOPERM for SYNC, PSYNC and
    REPLCONF (all @dangerous), byte for byte as from a Redis with the same ACL user, and goes
    on; `redis-cli --rdb` as that user fails as it does against Redis. Load unaffected."""
    reference = redis_factory()
    reference.client().execute_command("ACL", "SETUSER", "ops", "on", ">pw", "~*", "&*",
                                       "+@all", "-@dangerous")
    conf = tmp_path / "users.conf"
    conf.write_text("user ops pw +@all -@dangerous\n")
    p = proxy("--config", conf)
    no_diskless_delay(redis_instance)
    with Load(p.port) as load:
        replies = compare_with_redis(
            p.port, reference,
            cmd("AUTH", "ops", "pw") + cmd("SET", "a", "1") + cmd("SYNC") + b"SYNC\r\n"
            + cmd("PSYNC", "?", "-1") + cmd("REPLCONF", "capa", "eof") + cmd("GET", "a"), 7)

        def noperm(name):
            return b"-NOPERM this user has no permissions to run the '" + name + b"' command\r\n"

        assert replies[2:6] == [noperm(b"sync"), noperm(b"sync"), noperm(b"psync"),
                                noperm(b"replconf")]
        assert replies[6] == b"$1\r\n1\r\n"
        outs = []
        for port in (reference.port, p.port):
            res = redis_cli("-p", port, "--user", "ops", "--pass", "pw", "--no-auth-warning",
                            "--rdb", tmp_path / f"ops{port}.rdb", timeout=15)
            assert res.returncode != 0
            assert not (tmp_path / f"ops{port}.rdb").exists()
            outs.append(res.stderr.decode(errors="replace"))
        assert "NOPERM" in outs[0]
        assert outs[1] == outs[0], f"through the proxy:\n{outs[1]}\ndirectly:\n{outs[0]}"
    load.assert_clean(max_stall=2)
    assert info_field(redis_instance, "stats", "sync_full") == "0"
    assert_log_clean(p)


# ---------------------------------------------------------------------------------------------
# A replica that leaves mid-transfer


def test_sync_client_closing_mid_transfer(proxy, redis_instance):
    """A SYNC client that closes its socket mid-transfer (after 1 MB of a 30 MB RDB; by a reset
    right after +FULLRESYNC; before any reply; and behind a proxy that holds back the upstream
    side so the upstream itself is mid-transfer): the proxy stays up, the upstream sees the
    replica go (connected_slaves back to 0), the load clients notice nothing."""
    p = proxy()
    held = proxy("--client-output-pause", "1mb")
    no_diskless_delay(redis_instance)
    populate_big(redis_instance, 30)
    with Load(p.port) as load, Load(held.port, clients=2, prefix="load:held") as load2:
        # After 1 MB of the file.
        c = RawConn(p.port, timeout=30)
        c.send(cmd("SYNC"))
        n = read_sync_header(c)
        assert n > 30 * MB
        c.read_exact(MB)
        c.close()
        wait_no_replicas(redis_instance)

        # PSYNC, then a reset (SO_LINGER 0) as soon as +FULLRESYNC arrives.
        c = RawConn(p.port, timeout=30)
        c.send(cmd("PSYNC", "?", "-1"))
        line = c.read_reply()
        assert line.startswith(b"FULLRESYNC "), line
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
        wait_no_replicas(redis_instance)

        # Before any reply.
        for _ in range(3):
            c = RawConn(p.port)
            c.send(cmd("SYNC"))
            c.close()
        time.sleep(0.5)
        wait_no_replicas(redis_instance)

        # The upstream mid-transfer: this proxy stops reading it while its client is behind.
        c = small_window_conn(held.port, 16384)
        c.send(cmd("SYNC"))
        read_sync_header(c)
        c.read_exact(MB)
        time.sleep(0.5)
        slave0 = info_field(redis_instance, "replication", "slave0")
        assert slave0 and "state=send_bulk" in slave0, slave0
        c.close()
        wait_no_replicas(redis_instance)

        for q in (p, held):
            with q.raw() as c:
                assert c.command("SET", "after", "ok") == b"OK"
                assert c.command("GET", "after") == b"ok"
    load.assert_clean(max_stall=2)
    load2.assert_clean(max_stall=2)
    assert_log_clean(p)
    assert_log_clean(held)


# ---------------------------------------------------------------------------------------------
# A replica that reads slowly


def slow_sync(p, upstream, seconds=3.0):
    """A SYNC client with a small receive buffer that, once the RDB starts coming, reads 4 KB
    every 50 ms for `seconds`, then the rest at full speed. Returns (largest RSS growth of the
    proxy in KiB, the length announced, the RDB bytes, the upstream's INFO slave0 sampled every
    0.5 s after the first second of slow reads)."""
    baseline = rss_kb(p.process.pid)
    c = small_window_conn(p.port, 4096)
    states = []
    try:
        c.send(cmd("SYNC"))
        n = read_sync_header(c)  # the upstream's RDB is ready and coming
        grown = 0
        start = time.monotonic()
        sample_at = start + 1.0
        while time.monotonic() < start + seconds:
            c.sock.settimeout(30)
            chunk = c.sock.recv(4096)
            assert chunk, "the proxy closed the slow replica"
            c.buf += chunk
            grown = max(grown, rss_kb(p.process.pid) - baseline)
            if time.monotonic() >= sample_at:
                states.append(info_field(upstream, "replication", "slave0"))
                sample_at += 0.5
            time.sleep(0.05)
        assert len(c.buf) < n // 10, "the slow reader was not slow"
        rdb = c.read_exact(n)
        grown = max(grown, rss_kb(p.process.pid) - baseline)
    finally:
        c.close()
    return grown, n, rdb, states


def check_rdb(rdb, redis_factory, tmp_path, name, keys):
    assert rdb[:5] == b"REDIS" and rdb[-9:-8] == b"\xff"
    path = tmp_path / name / "slow.rdb"
    path.parent.mkdir()
    path.write_bytes(rdb)
    loaded = load_rdb(redis_factory, path)
    r = loaded.client()
    assert r.dbsize() >= keys
    assert len(r.get("big:0")) == MB
    loaded.kill()


def test_slow_sync_reader_keeps_proxy_memory_bounded(proxy, redis_instance, redis_factory,
                                                     tmp_path):
    """A SYNC client that reads a 50 MB RDB a few KB at a time: the proxy's RSS stays well below
    the dataset + the 64 MB output pause (+120 MB), the load clients are served throughout, and
    then the client reads the whole file, which loads."""
    p = proxy(env=SMALL_QUARANTINE)
    populate_big(redis_instance, 50)
    with Load(p.port) as load:
        grown, n, rdb, _ = slow_sync(p, redis_instance)
    load.assert_clean(max_stall=2)
    assert grown < 120 * 1024, f"the proxy grew by {grown} KiB for a slow replica"
    assert n == len(rdb) > 50 * MB
    wait_no_replicas(redis_instance)
    check_rdb(rdb, redis_factory, tmp_path, "default", 50)
    assert_log_clean(p)


def test_slow_sync_reader_behind_a_small_output_pause(proxy, redis_instance, redis_factory,
                                                      tmp_path):
    """With `--client-output-pause 2mb` the proxy stops reading the upstream's RDB while the
    slow SYNC client is behind: its RSS grows by far less than the 50 MB file (< 40 MB) and the
    upstream is still sending (state=send_bulk); then the whole file arrives and loads."""
    p = proxy("--client-output-pause", "2mb", env=SMALL_QUARANTINE)
    populate_big(redis_instance, 50)
    with Load(p.port) as load:
        grown, n, rdb, states = slow_sync(p, redis_instance)
    load.assert_clean(max_stall=2)
    assert grown < 40 * 1024, f"the proxy grew by {grown} KiB for a slow replica"
    assert states and all("state=send_bulk" in (st or "") for st in states), states
    assert n == len(rdb) > 50 * MB
    wait_no_replicas(redis_instance)
    check_rdb(rdb, redis_factory, tmp_path, "paused", 50)
    assert_log_clean(p)


def test_a_syncing_client_is_a_replica_for_client_list_and_kill(bp, redis_instance):
    """Once SYNC went through its tunnel, CLIENT LIST TYPE replica shows the client (flags=S)
    and TYPE normal does not; CLIENT KILL TYPE replica closes it, as Redis does with replicas."""
    no_diskless_delay(redis_instance)
    with RawConn(bp.port, timeout=20) as r, bp.raw() as c:
        r.send(cmd("SYNC"))
        read_sync_header(r)
        listed = c.command("CLIENT", "LIST", "TYPE", "replica")
        assert listed.count(b"\n") == 1 and b" flags=S " in listed, listed
        replica_id = int(listed.split(b" ")[0].split(b"=")[1])
        normal = c.command("CLIENT", "LIST", "TYPE", "normal")
        assert b"id=%d " % replica_id not in normal
        assert c.command("CLIENT", "KILL", "TYPE", "replica") == 1
        r.read_until_eof(5)  # the rest of the RDB, then the close (AssertionError if none)
    wait_no_replicas(redis_instance)
    assert_log_clean(bp)
