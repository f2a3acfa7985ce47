"""A random mix of the commands that change what a connection is, from many clients at once.

Each hazard client picks actions at random: a replication stream (SYNC, PSYNC, REPLCONF,
`redis-cli --rdb`), MONITOR, pub/sub, client tracking, CLIENT REPLY modes, CLIENT NO-EVICT,
SELECT, WATCH/MULTI, SUBSCRIBE inside MULTI, blocking commands, WAIT, short scripts, DEBUG SLEEP,
CLIENT PAUSE, READONLY/ASKING, RESET and QUIT mid-pipeline, and disconnects at random points.
Each action checks the replies it must get. Meanwhile bp_helpers.Load clients run checked
pipelined SET/GET/INCR and BF.ADD/BF.EXISTS: nothing the hazard clients do may disturb them.

Used by test_hazard_mix.py (a short run in CI) and bench/hazard_soak.sh (minutes).

    report = run_mix(proxy_port, seconds=20, hazard_clients=6, seed=1)
"""

import os
import random
import socket
import subprocess
import tempfile
import threading
import time

from bp_helpers import Err, Load, RawConn, Simple, encode_command as cmd


class ActionFailed(AssertionError):
    pass


def expect(got, want, what):
    if got != want:
        raise ActionFailed(f"{what}: got {got!r}, expected {want!r}")


def drain_replies(conn, seconds):
    """Reads whole replies for `seconds`; a partial one stays in the connection's buffer."""
    deadline = time.monotonic() + seconds
    old = conn.timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            conn.timeout = left
            try:
                conn.read_reply_raw()
            except socket.timeout:
                return
    finally:
        conn.timeout = old


def read_some(conn, limit, seconds):
    """Bytes the peer sends within `seconds` (at most `limit`)."""
    data = b""
    deadline = time.monotonic() + seconds
    while len(data) < limit and time.monotonic() < deadline:
        try:
            conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = conn.sock.recv(min(65536, limit - len(data)))
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    return data


class Hazards:
    """The actions. Each takes a fresh RawConn (closed by the caller) and the random source."""

    def __init__(self, port, tmpdir):
        self.port = port
        self.tmpdir = tmpdir

    def sync(self, c, rng):
        c.send(cmd(rng.choice(["SYNC", "PSYNC"]), *([] if rng.random() < 0.5 else ["?", "-1"])))
        got = read_some(c, 4096, 0.3)
        if got and not (got.startswith(b"$") or got.startswith(b"+FULLRESYNC")
                        or got.startswith(b"\n") or got.startswith(b"-ERR wrong number")):
            raise ActionFailed(f"SYNC: {got[:80]!r}")

    def replconf(self, c, rng):
        sub = rng.choice([["ACK", "0"], ["listening-port", "1234"], ["rdb-only", "1"],
                          ["capa", "eof"]])
        c.send(cmd("REPLCONF", *sub) + cmd("PING"))
        if sub[0] != "ACK":
            expect(c.read_reply_raw(), b"+OK\r\n", "REPLCONF")
        expect(c.read_reply_raw(), b"+PONG\r\n", "PING after REPLCONF")

    def rdb(self, c, rng):
        path = os.path.join(self.tmpdir, f"dump-{threading.get_ident()}.rdb")
        res = subprocess.run(["redis-cli", "-p", str(self.port), "--rdb", path],
                             capture_output=True, timeout=30)
        if res.returncode != 0 or not os.path.exists(path):
            raise ActionFailed(f"redis-cli --rdb: {res.returncode} {res.stderr[-200:]!r}")
        with open(path, "rb") as f:
            head = f.read(5)
        expect(head, b"REDIS", "RDB file header")
        os.unlink(path)

    def monitor(self, c, rng):
        expect(c.command("MONITOR"), Simple(b"OK"), "MONITOR")
        drain_replies(c, 0.1)
        end = rng.choice(["quit", "reset", "close"])
        if end == "quit":
            c.send(cmd("QUIT"))
        elif end == "reset":
            c.send(cmd("RESET"))
            # Monitor lines may come before +RESET; then the connection is normal again.
            deadline = time.monotonic() + 5
            while c.read_reply_raw() != b"+RESET\r\n":
                if time.monotonic() > deadline:
                    raise ActionFailed("no +RESET after MONITOR")
            expect(c.command("PING"), Simple(b"PONG"), "PING after MONITOR + RESET")

    def pubsub(self, c, rng):
        # A channel of this action alone: a message another client publishes to it would come
        # before the UNSUBSCRIBE confirmation, as Redis sends it.
        ch = f"hz:{threading.get_ident()}:{rng.randrange(1000)}"
        kind = rng.choice(["SUBSCRIBE", "PSUBSCRIBE"])
        c.send(cmd(kind, ch))
        reply = c.read_reply()
        expect(reply[0], kind.lower().encode(), "subscribe confirmation")
        with RawConn(self.port) as p:
            p.command("PUBLISH", ch, "hello")
        msg = c.read_reply()
        expect(msg[-1], b"hello", "message")
        c.send(cmd("PUNSUBSCRIBE" if kind == "PSUBSCRIBE" else "UNSUBSCRIBE") + cmd("PING"))
        c.read_reply()
        expect(c.read_reply_raw(), b"+PONG\r\n", "PING after UNSUBSCRIBE")

    def tracking(self, c, rng):
        with RawConn(self.port) as sub:
            my_id = sub.command("CLIENT", "ID")
            sub.command("SUBSCRIBE", "__redis__:invalidate")
            key = f"hz:track:{rng.randrange(1000)}"
            expect(c.command("CLIENT", "TRACKING", "ON", "REDIRECT", my_id), Simple(b"OK"),
                   "CLIENT TRACKING ON REDIRECT")
            c.command("GET", key)
            with RawConn(self.port) as w:
                w.command("SET", key, "x")
            msg = sub.read_reply()
            expect(msg[:2], [b"message", b"__redis__:invalidate"], "invalidation")
            expect(msg[2], [key.encode()], "invalidated key")

    def reply_modes(self, c, rng):
        key = f"hz:reply:{rng.randrange(1000)}"
        c.send(cmd("CLIENT", "REPLY", "OFF") + cmd("SET", key, "1") + cmd("CLIENT", "REPLY", "ON")
               + cmd("CLIENT", "REPLY", "SKIP") + cmd("GET", key) + cmd("GET", key))
        expect(c.read_reply_raw(), b"+OK\r\n", "CLIENT REPLY ON")
        expect(c.read_reply_raw(), b"$1\r\n1\r\n", "GET after SKIP")

    def no_evict(self, c, rng):
        expect(c.command("CLIENT", "NO-EVICT", "ON"), Simple(b"OK"), "NO-EVICT ON")
        c.command("GET", "hz:x")
        if rng.random() < 0.5:
            expect(c.command("CLIENT", "NO-EVICT", "OFF"), Simple(b"OK"), "NO-EVICT OFF")

    def select(self, c, rng):
        db = rng.randrange(1, 16)
        key = f"hz:db:{rng.randrange(1000)}"
        c.send(cmd("SELECT", db) + cmd("SET", key, db) + cmd("GET", key))
        expect(c.read_reply_raw(), b"+OK\r\n", "SELECT")
        expect(c.read_reply_raw(), b"+OK\r\n", "SET")
        expect(c.read_reply(), str(db).encode(), "GET in the selected db")
        if rng.random() < 0.5:
            expect(c.command("SELECT", 0), Simple(b"OK"), "SELECT 0")

    def transaction(self, c, rng):
        key = f"hz:tx:{rng.randrange(100)}"
        end = rng.choice(["EXEC", "DISCARD"])
        c.send(cmd("WATCH", key) + cmd("MULTI") + cmd("INCR", key) + cmd("PING") + cmd(end))
        for want in (b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n"):
            expect(c.read_reply_raw(), want, "transaction")
        last = c.read_reply()
        if end == "DISCARD":
            expect(last, Simple(b"OK"), "DISCARD")
        elif last is not None:  # nil: another hazard client changed the key
            expect(last[1], Simple(b"PONG"), "EXEC")

    def subscribe_in_multi(self, c, rng):
        c.send(cmd("MULTI") + cmd("SUBSCRIBE", "hz:a", "hz:b") + cmd("EXEC"))
        expect(c.read_reply_raw(), b"+OK\r\n", "MULTI")
        expect(c.read_reply_raw(), b"+QUEUED\r\n", "SUBSCRIBE queued")
        expect(c.read_reply_raw(), b"*1\r\n*3\r\n$9\r\nsubscribe\r\n$4\r\nhz:a\r\n:1\r\n",
               "EXEC of SUBSCRIBE a b (one element, then the second confirmation)")
        expect(c.read_reply(), [b"subscribe", b"hz:b", 2], "second confirmation")

    def blocking(self, c, rng):
        if rng.random() < 0.5:
            expect(c.command("BLPOP", f"hz:nolist:{rng.randrange(1000)}", "0.05"), None, "BLPOP")
        else:
            c.send(cmd("BLPOP", f"hz:nolist:{rng.randrange(1000)}", "0"))
            time.sleep(0.02)  # then the client vanishes mid-command

    def wait(self, c, rng):
        expect(c.command("WAIT", "0", "0"), 0, "WAIT")

    def scripts(self, c, rng):
        expect(c.command("EVAL", "return redis.call('INCR', KEYS[1])", "1", "hz:script") > 0,
               True, "EVAL")
        expect(c.command("EVAL_RO", "return 7", "0"), 7, "EVAL_RO")

    def debug_sleep(self, c, rng):
        expect(c.command("DEBUG", "SLEEP", "0.02"), Simple(b"OK"), "DEBUG SLEEP")

    def pause(self, c, rng):
        mode = rng.choice(["WRITE", "WRITE", "ALL"])
        expect(c.command("CLIENT", "PAUSE", "50", mode), Simple(b"OK"), "CLIENT PAUSE")
        if rng.random() < 0.5:
            with RawConn(self.port) as u:
                expect(u.command("CLIENT", "UNPAUSE"), Simple(b"OK"), "CLIENT UNPAUSE")

    def cluster_state(self, c, rng):
        for name in ("READONLY", "READWRITE", "ASKING"):
            reply = c.command(name)
            if not (isinstance(reply, Err) and b"cluster support disabled" in reply):
                raise ActionFailed(f"{name} on a standalone server: {reply!r}")

    def reset_mid_pipeline(self, c, rng):
        c.send(cmd("SELECT", "2") + cmd("SUBSCRIBE", "hz:r") + cmd("RESET") + cmd("GET", "hz:x"))
        expect(c.read_reply_raw(), b"+OK\r\n", "SELECT")
        c.read_reply()  # subscribe confirmation
        expect(c.read_reply_raw(), b"+RESET\r\n", "RESET")
        c.read_reply()  # GET in db 0

    def quit_mid_pipeline(self, c, rng):
        c.send(cmd("SET", "hz:q", "1") + cmd("QUIT") + cmd("SET", "hz:q", "2"))
        expect(c.read_until_eof(5), b"+OK\r\n+OK\r\n", "SET, QUIT, then the connection closes")

    def vanish(self, c, rng):
        last = cmd(rng.choice(["MULTI", "SUBSCRIBE", "MONITOR", "SYNC"]), "x")
        c.send(b"".join(cmd("SET", f"hz:v:{i}", i) for i in range(rng.randrange(1, 200)))
               + last[:rng.randrange(1, len(last) + 1)])

    ACTIONS = ["sync", "replconf", "rdb", "monitor", "pubsub", "tracking", "reply_modes",
               "no_evict", "select", "transaction", "subscribe_in_multi", "blocking", "wait",
               "scripts", "debug_sleep", "pause", "cluster_state", "reset_mid_pipeline",
               "quit_mid_pipeline", "vanish"]


def run_mix(port, seconds, hazard_clients=6, load_clients=4, seed=None, max_stall=2.0,
            actions=None, bf=True):
    """Runs the mix for `seconds`; returns a dict (load batches, longest stall, actions run per
    name, failures); `bf`: the load also runs BF.ADD/BF.EXISTS (not against a plain Redis).
    Raises AssertionError when a load client was disturbed or an action got a
    wrong reply."""
    rng_seed = seed if seed is not None else random.randrange(1 << 30)
    names = actions or Hazards.ACTIONS
    counts = {n: 0 for n in names}
    failures = []
    lock = threading.Lock()
    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="bp-hz-") as tmpdir:
        hazards = Hazards(port, tmpdir)

        def worker(i):
            rng = random.Random(rng_seed * 1000 + i)
            while not stop.is_set():
                name = rng.choice(names)
                try:
                    with RawConn(port, timeout=10) as c:
                        getattr(hazards, name)(c, rng)
                except Exception as exc:  # noqa: BLE001 - reported with the action's name
                    with lock:
                        failures.append(f"{name}: {exc!r}")
                with lock:
                    counts[name] += 1

        with Load(port, clients=load_clients, prefix="hzload", bf=bf) as load:
            threads = [threading.Thread(target=worker, args=(i,), daemon=True)
                       for i in range(hazard_clients)]
            for t in threads:
                t.start()
            time.sleep(seconds)
            stop.set()
            for t in threads:
                t.join(60)
        alive = [t for t in threads if t.is_alive()]
    report = {"seed": rng_seed, "batches": load.batches, "longest_stall": load.longest,
              "actions": counts, "failures": failures[:20], "hung": len(alive)}
    assert not alive, f"{len(alive)} hazard clients hung (seed {rng_seed})"
    load.assert_clean(max_stall=max_stall)
    assert not failures, f"hazard actions got wrong replies (seed {rng_seed}):\n" + \
        "\n".join(failures[:20])
    return report
