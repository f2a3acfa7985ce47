"""A busy, paused, stopped or half-broken upstream, as the proxy's clients see it
(docs/connections.md, "Busy, paused and stopped servers" and "When a shared connection breaks").

Redis 7.0 itself is the reference: whatever it answers a direct client, byte for byte and as
promptly, the proxy's clients get too, even with a short `--upstream-timeout-ms`:

* A looping script (`EVAL`) or function (`FCALL`) past `busy-reply-threshold`: every other client
  (new ones, and ones that were pipelining before it started) gets Redis's exact `-BUSY ...` at
  once, never `-ERR upstream unavailable`; `SCRIPT KILL` / `FUNCTION KILL` answers at once and ends
  it, the script's client gets Redis's "Script killed by user" error, everyone goes on normally;
  also when the script's client leaves while it runs (its late reply reaches nobody).
* The same script started through ANOTHER proxy, or directly on Redis: the stall check's probe
  gets `-BUSY` and spares the connections, whose requests get Redis's `-BUSY` too.
* `CLIENT PAUSE WRITE` through the proxy: reads are answered at once, writes wait for `CLIENT
  UNPAUSE` (sent by yet another client, answered at once), as with Redis directly.
  `CLIENT PAUSE` (ALL) and `DEBUG SLEEP`: everybody waits, nobody gets an error.
* A pause started directly on Redis (unknown to the proxy): requests queued behind a held write
  fail with "command timeout" after `upstream-timeout-ms`, the held write never runs.
* One shared connection killed on Redis under load: each request that was on it gets
  `-ERR upstream unavailable (...)`, the clients of the other connection see nothing, everybody's
  next batch is served normally.
* A SIGSTOPped upstream still fails waiting requests with "command timeout"; service resumes
  after SIGCONT.
"""

import os
import re
import signal
import threading
import time

import pytest

from bp_helpers import Load, RawConn, encode_command as cmd, parse_resp, wait_until

UNAVAILABLE = b"-ERR upstream unavailable"
PROMPT = 1.0  # "at once": a reply Redis gives without waiting, seen through the proxy
BATCH_PROMPT = 1.5  # a pipelined batch of 120 commands (beyond a wait for the busy threshold)
HANG = 5.0  # no reply within this is a hang
STALL_MS = "300"  # the short --upstream-timeout-ms of these tests

LIB = "#!lua name=busylib\nredis.register_function('spin', function() while true do end end)"
LOOPS = {
    "script": {"start": ("EVAL", "while true do end", "0"), "kill": ("SCRIPT", "KILL"),
               "other_kill": ("FUNCTION", "KILL")},
    "function": {"start": ("FCALL", "spin", "0"), "kill": ("FUNCTION", "KILL"),
                 "other_kill": ("SCRIPT", "KILL")},
}
# What new clients send while the server is busy; Redis answers each with -BUSY (the kill command
# of the other kind too). Shared, dedicated and planned (DEL/EXPIRE/TYPE on possible filters)
# routes alike; PING and ECHO, which the proxy answers itself otherwise, as well.
BUSY_PROBES = (("GET", "k"), ("SET", "k", "v"), ("INCR", "n"), ("MGET", "a", "b"),
               ("HSET", "h", "f", "v"), ("DEL", "k"), ("EXPIRE", "k", "100"), ("TYPE", "k"),
               ("EVAL", "return 1", "0"), ("PING",), ("ECHO", "e"))
# Redis answers these with -BUSY too (before even looking up the command); RedisBloom would.
BF_PROBES = (("BF.ADD", "bf", "a"), ("BF.EXISTS", "bf", "a"))


def timed(conn, *args):
    """Sends one command on `conn`; returns (raw reply, seconds it took)."""
    t0 = time.monotonic()
    conn.send(cmd(*args))
    raw = conn.read_reply_raw()
    return raw, time.monotonic() - t0


def fresh_reply(port, *args, timeout=HANG):
    """(raw reply, seconds) of one command on a new connection to `port`."""
    with RawConn(port, timeout=timeout) as c:
        return timed(c, *args)


def wait_busy(redis_port):
    """Waits until Redis answers a direct client with -BUSY; returns that reply's bytes."""
    def busy():
        raw, _ = fresh_reply(redis_port, "GET", "probe")
        return raw if raw.startswith(b"-BUSY ") else None
    return wait_until(busy, 10, interval=0.02, what="redis to answer -BUSY")


def no_reply_within(conn, seconds):
    """True if `conn` has received nothing (and was not closed) within `seconds`."""
    return not conn.buf and not conn.is_closed(seconds) and not conn.buf


def bulk(value):
    if value is None:
        return b"$-1\r\n"
    return b"$%d\r\n%s\r\n" % (len(value), value)


class ModelLoad(Load):
    """`clients` threads, each on its own connection to `port`, sending pipelined batches of
    SET k v / GET k / INCR n on keys of its own (values embed the thread id and batch number)
    until stop(). Each thread keeps a model of what its keys may hold, so every reply is checked:

    * `-BUSY ...`: the command did not run (the model stays as it was); the texts are collected.
    * `-ERR upstream unavailable (...)` (only with allow_unavailable): the command may or may not
      have run (the model keeps both possibilities); the client's NEXT batch must be clean.
    * anything else must be a reply the model allows: another client's value, a reply out of
      order, a missing reply (HANG seconds) or a closed connection is a problem.

    Every batch is recorded as (sent_at, took, busy replies, unavailable replies)."""

    def __init__(self, port, clients=4, batch=40, prefix="ml", allow_unavailable=False,
                 pause=0.002):
        self.port, self.nclients, self.batch, self.prefix = port, clients, batch, prefix
        self.allow_unavailable = allow_unavailable
        self.pause = pause
        self.problems = []
        self.busy_texts = set()
        self.unavailable_texts = []
        self.records = [[] for _ in range(clients)]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.conns = []
        self._threads = []

    # (Load's __enter__, __exit__ and _problem; its own __init__, start, stop and _run.)

    def start(self):
        # Connected one after another from here, so they get the proxy's shared connections in
        # turn (round robin).
        self.conns = [RawConn(self.port, timeout=HANG) for _ in range(self.nclients)]
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(self.nclients)]
        for t in self._threads:
            t.start()
        wait_until(lambda: all(self.records) or self.problems, 10, what="load running")
        assert not self.problems, self.problems
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(HANG * 3)
        assert not any(t.is_alive() for t in self._threads), "load clients still running"
        for c in self.conns:
            c.close()
        return self

    def _run(self, tid):
        conn = self.conns[tid]
        keys = [f"{self.prefix}:{tid}:{i}" for i in range(self.batch)]
        counter = f"{self.prefix}:{tid}:n"
        own = f"{tid}-".encode()
        can_hold = {k: {None} for k in keys}  # values each key may hold now
        counts = {0}  # values the counter may hold now
        must_be_clean = False
        b = 0
        while not self._stop.is_set():
            b += 1
            payload, plan = [], []
            for i, key in enumerate(keys):
                value = f"{tid}-{b}-{i}".encode()
                payload += [cmd("SET", key, value), cmd("GET", key), cmd("INCR", counter)]
                plan += [("SET", key, value), ("GET", key, None), ("INCR", counter, None)]
            sent_at = time.monotonic()
            try:
                conn.send(b"".join(payload))
                got = [conn.read_reply_raw() for _ in plan]
            except (OSError, EOFError) as exc:
                self._problem(f"client {tid} batch {b}: no reply / closed: {exc!r}")
                return
            took = time.monotonic() - sent_at
            busy = unavailable = 0
            for i, ((kind, key, value), raw) in enumerate(zip(plan, got)):
                where = f"client {tid} batch {b} reply {i} ({kind})"
                if raw.startswith(b"-BUSY"):
                    busy += 1
                    with self._lock:
                        self.busy_texts.add(raw)
                    continue
                if raw.startswith(UNAVAILABLE) and self.allow_unavailable:
                    unavailable += 1
                    with self._lock:
                        if len(self.unavailable_texts) < 50:
                            self.unavailable_texts.append(raw)
                    if kind == "SET":
                        can_hold[key] = can_hold[key] | {value}
                    elif kind == "INCR":
                        counts = counts | {c + 1 for c in counts}
                    continue
                if kind == "SET":
                    ok = raw == b"+OK\r\n"
                    if ok:
                        can_hold[key] = {value}
                elif kind == "GET":
                    ok = any(raw == bulk(v) for v in can_hold[key])
                    if ok:
                        v = parse_resp(raw)[0]
                        can_hold[key] = {v}
                    elif raw.startswith(b"$") and own not in raw:
                        where += " (another client's value?)"
                else:
                    ok = raw.startswith(b":") and int(raw[1:-2]) in {c + 1 for c in counts}
                    if ok:
                        counts = {int(raw[1:-2])}
                if not ok:
                    self._problem(f"{where}: got {raw[:120]!r}")
                    return
            if must_be_clean and (busy or unavailable):
                self._problem(f"client {tid} batch {b}: errors again in the batch right after "
                              f"one with upstream errors ({busy} busy, {unavailable} unavailable)")
                return
            must_be_clean = unavailable > 0
            with self._lock:
                self.records[tid].append((sent_at, took, busy, unavailable))
            if self.pause:
                time.sleep(self.pause)

    # -- analysis ---------------------------------------------------------------------------

    def longest(self):
        with self._lock:
            return max((r[1] for recs in self.records for r in recs), default=0.0)

    def busy_clients(self):
        with self._lock:
            return {tid for tid, recs in enumerate(self.records) if any(r[2] for r in recs)}

    def unavailable_clients(self):
        with self._lock:
            return {tid for tid, recs in enumerate(self.records) if any(r[3] for r in recs)}

    def wait_served_after(self, t, batches=3, timeout=10):
        """Waits until every client had `batches` batches sent after monotonic time `t`, and
        asserts all of those were clean (no -BUSY, no upstream error)."""
        def enough():
            assert not self.problems, self.problems
            with self._lock:
                return all(sum(1 for r in recs if r[0] >= t) >= batches for recs in self.records)
        wait_until(enough, timeout, what=f"{batches} batches of every load client")
        with self._lock:
            dirty = [(tid, r) for tid, recs in enumerate(self.records) for r in recs
                     if r[0] >= t and (r[2] or r[3])]
        assert not dirty, f"batches sent after the upstream was fine again got errors: {dirty[:5]}"

    def assert_no_problems(self, max_batch=BATCH_PROMPT):
        assert not self.problems, "load clients were disturbed:\n" + "\n".join(self.problems)
        assert self.longest() < max_batch, f"a load batch took {self.longest():.2f} s"


def reference_run(redis_port, loop):
    """The busy sequence directly on Redis: what a second client, the probes, the kill, the
    script's client (which pipelines a SET and a GET behind its script) and a second kill get."""
    ref = {}
    with RawConn(redis_port, timeout=HANG) as s:
        s.send(cmd(*loop["start"]) + cmd("SET", "after", "1") + cmd("GET", "after"))
        ref["busy"] = wait_busy(redis_port)
        for args in BUSY_PROBES + (loop["other_kill"],):
            ref[args], _ = fresh_reply(redis_port, *args)
        ref["kill"], _ = fresh_reply(redis_port, *loop["kill"])
        ref["script"] = [s.read_reply_raw() for _ in range(3)]
    ref["kill again"], _ = fresh_reply(redis_port, *loop["kill"])
    with RawConn(redis_port) as d:
        assert d.command("DEL", "after") == 1
    return ref


@pytest.mark.parametrize("kind,flags,threshold", [
    ("script", ("--upstream-timeout-ms", STALL_MS), 200),
    ("function", ("--upstream-timeout-ms", STALL_MS), 200),
    ("script", (), 200),
    ("script", ("--upstream-timeout-ms", STALL_MS, "--threads", "2"), 1000),
], ids=["eval", "fcall", "default-timeout", "threads-threshold-1000"])
def test_long_script_gets_busy_to_everyone_and_kill_gets_through(proxy, redis_instance, kind,
                                                                  flags, threshold):
    """EVAL / FCALL of an endless loop through the proxy (busy-reply-threshold 200, proxy with
    --upstream-timeout-ms 300 or the default): load clients that were pipelining before it
    started and new clients get Redis's exact -BUSY at once (never an upstream error, never a
    proxy timeout) for over a second; SCRIPT / FUNCTION KILL from another client answers +OK at
    once; the script's client gets Redis's "Script killed by user" error (and the commands it
    pipelined behind the script run after it); every batch sent afterwards is served normally.
    All replies byte-compared with the same sequence run directly on Redis.

    With --threads 2 and busy-reply-threshold 1000 (over twice the stall timeout, so the stall
    check's probe would get no answer in time), requests waiting for the threshold are spared
    because the proxy knows the script runs, in whichever of its threads."""
    loop = LOOPS[kind]
    direct = RawConn(redis_instance.port, timeout=HANG)
    assert direct.command("CONFIG", "SET", "busy-reply-threshold", str(threshold)) == b"OK"
    p = proxy(*flags)
    if kind == "function":
        with p.raw() as c:
            assert c.command("FUNCTION", "LOAD", LIB) == b"busylib"
    ref = reference_run(redis_instance.port, loop)
    assert ref["kill"] == b"+OK\r\n" and ref["script"][0].startswith(b"-ERR Script killed by user")

    nload = 8 if "--threads" in flags else 4  # connections spread over the proxy's threads
    with ModelLoad(p.port, clients=nload) as load:
        time.sleep(0.2)
        script = RawConn(p.port, timeout=HANG)
        script.send(cmd(*loop["start"]) + cmd("SET", "after", "1") + cmd("GET", "after"))
        started = time.monotonic()
        busy = wait_busy(redis_instance.port)
        assert busy == ref["busy"]
        # New clients, one command each, then one pipelining many.
        for args in BUSY_PROBES + (loop["other_kill"],):
            raw, took = fresh_reply(p.port, *args)
            assert raw == ref[args], f"{args}: proxy {raw!r}, redis {ref[args]!r}"
            assert took < PROMPT, f"{args}: answered after {took:.2f} s"
        for args in BF_PROBES:
            raw, took = fresh_reply(p.port, *args)
            assert raw == busy, f"{args}: {raw!r}"
            assert took < PROMPT, f"{args}: answered after {took:.2f} s"
        with RawConn(p.port, timeout=HANG) as piped:
            t0 = time.monotonic()
            piped.send((cmd("SET", "p", "1") + cmd("GET", "p")) * 25)
            replies = [piped.read_reply_raw() for _ in range(50)]
            assert replies == [busy] * 50, replies[:3]
            assert time.monotonic() - t0 < PROMPT
        # A direct client gets the same at the same moment.
        raw, _ = fresh_reply(redis_instance.port, "GET", "k")
        assert raw == busy
        # Well past --upstream-timeout-ms: nobody was failed meanwhile.
        time.sleep(max(0.0, threshold / 1000 + 1.1 - (time.monotonic() - started)))
        assert no_reply_within(script, 0.0), script.buf
        assert not load.problems, load.problems
        raw, took = fresh_reply(p.port, *loop["kill"])
        assert raw == b"+OK\r\n", raw
        assert took < PROMPT, f"{loop['kill']} took {took:.2f} s"
        t0 = time.monotonic()
        got = [script.read_reply_raw() for _ in range(3)]
        assert got == ref["script"], f"proxy {got!r}, redis {ref['script']!r}"
        assert time.monotonic() - t0 < PROMPT
        script.close()
        load.wait_served_after(time.monotonic())
    # A batch sent as the script started waits for the threshold, as a direct client does.
    load.assert_no_problems(max_batch=threshold / 1000 + BATCH_PROMPT)
    assert load.busy_texts == {busy}, load.busy_texts
    assert load.busy_clients() == set(range(nload)), "a load client never saw -BUSY"
    raw, took = fresh_reply(p.port, *loop["kill"])
    assert raw == ref["kill again"] and took < PROMPT, raw
    with p.raw() as c:
        assert c.command("SET", "k", "fine") == b"OK"
        assert c.command("GET", "k") == b"fine"
        assert c.command("GET", "after") == b"1"
    assert "command timeout" not in p.log()
    direct.close()


def test_script_client_leaving_mid_script(proxy, redis_instance):
    """The client of a looping EVAL disconnects while the script runs: the others keep getting
    Redis's -BUSY (no upstream error, also well past --upstream-timeout-ms 300), SCRIPT KILL
    through the proxy still answers +OK and ends the script, and the script's late reply never
    reaches anybody: new clients' EVALs (on pooled connections) get their own replies."""
    direct = RawConn(redis_instance.port, timeout=HANG)
    assert direct.command("CONFIG", "SET", "busy-reply-threshold", "200") == b"OK"
    p = proxy("--upstream-timeout-ms", STALL_MS)
    with ModelLoad(p.port, clients=4) as load:
        time.sleep(0.2)
        script = RawConn(p.port, timeout=HANG)
        script.send(cmd("EVAL", "while true do end", "0"))
        busy = wait_busy(redis_instance.port)
        script.close()
        time.sleep(0.7)
        raw, took = fresh_reply(p.port, "GET", "k")
        assert raw == busy and took < PROMPT, (raw, took)
        raw, took = fresh_reply(p.port, "SCRIPT", "KILL")
        assert raw == b"+OK\r\n" and took < PROMPT, (raw, took)
        wait_until(lambda: fresh_reply(redis_instance.port, "GET", "k")[0] == b"$-1\r\n", HANG,
                   what="the script to end")
        load.wait_served_after(time.monotonic())
    load.assert_no_problems()
    assert load.busy_texts == {busy}, load.busy_texts
    for i in range(20):
        raw, took = fresh_reply(p.port, "EVAL", "return ARGV[1]", "0", f"mine-{i}")
        assert raw == bulk(f"mine-{i}".encode()), raw
    with p.raw() as c:
        for i in range(5):
            assert c.command("EVAL", "return ARGV[1]", "0", f"again-{i}") == f"again-{i}".encode()
    assert "command timeout" not in p.log()
    direct.close()


@pytest.mark.parametrize("threshold,stall_ms,starter", [
    (200, 300, "proxy"), (900, 600, "proxy"), (900, 600, "direct")])
def test_script_of_someone_else_spares_connections(proxy, redis_instance, threshold, stall_ms,
                                                   starter):
    """The looping script runs through ANOTHER proxy (or directly on Redis); both proxies have
    a short --upstream-timeout-ms. Clients of the second proxy (pipelining since before the
    script, one that sent a GET just after it started, new ones) get Redis's -BUSY, never
    "upstream unavailable (... command timeout)". With busy-reply-threshold 900 and
    --upstream-timeout-ms 600 (the threshold between one and two stall timeouts) the early
    requests wait past the stall timeout before Redis answers: the stall check's PING probe
    gets -BUSY within its own timeout and spares the connections. SCRIPT KILL through the
    second proxy ends the script."""
    direct = RawConn(redis_instance.port, timeout=HANG)
    assert direct.command("CONFIG", "SET", "busy-reply-threshold", str(threshold)) == b"OK"
    a = proxy("--upstream-timeout-ms", stall_ms)
    b = proxy("--upstream-timeout-ms", stall_ms, "--loglevel", "verbose")
    ref = reference_run(redis_instance.port, LOOPS["script"])
    start_port = a.port if starter == "proxy" else redis_instance.port
    with ModelLoad(b.port, clients=4) as load:
        time.sleep(0.2)
        early = RawConn(b.port, timeout=HANG)
        script = RawConn(start_port, timeout=HANG)
        script.send(cmd("EVAL", "while true do end", "0"))
        started = time.monotonic()
        time.sleep(0.1)  # time enough for the script to start (through proxy a: a new connection)
        raw, waited = timed(early, "GET", "early")
        assert raw == ref["busy"], f"the GET sent just after the script started got {raw!r}"
        if threshold > stall_ms:
            assert waited > stall_ms / 1000, f"the early GET waited only {waited:.2f} s"
        early.close()
        busy = wait_busy(redis_instance.port)
        assert busy == ref["busy"]
        for args in (("GET", "k"), ("SET", "k", "v"), ("EVAL", "return 1", "0")):
            raw, took = fresh_reply(b.port, *args)
            assert raw == ref[args], f"{args}: proxy {raw!r}, redis {ref[args]!r}"
            assert took < PROMPT, f"{args}: answered after {took:.2f} s"
        # Several stall-check periods with the server busy.
        time.sleep(max(0.0, threshold / 1000 + 1.0 - (time.monotonic() - started)))
        assert not load.problems, load.problems
        raw, took = fresh_reply(b.port, "SCRIPT", "KILL")
        assert raw == b"+OK\r\n" and took < PROMPT, (raw, took)
        assert script.read_reply_raw() == ref["script"][0]
        script.close()
        load.wait_served_after(time.monotonic())
    load.assert_no_problems(max_batch=threshold / 1000 + BATCH_PROMPT)
    assert load.busy_texts == {busy}, load.busy_texts
    assert load.busy_clients() == set(range(4)), "a load client never saw -BUSY"
    for p in (a, b):
        with p.raw() as c:
            assert c.command("INCR", "after") in (1, 2)
        assert "command timeout" not in p.log()
    if threshold > stall_ms:
        # Requests waited past the stall timeout: the probe ran, and it was what spared them.
        assert "is busy" in b.log(), "the stall check's probe never saw -BUSY"
    direct.close()


def pause_write_sequence(port):
    """CLIENT PAUSE 2000 WRITE from one client, then: held writes of other clients (SET, INCR,
    PUBLISH, PFCOUNT, a writing EVAL), pipelined reads and an EVAL_RO of another (answered at
    once), a client mixing both (its first read answered, the rest held behind its write),
    CLIENT UNPAUSE from a fourth client (at once), after which the held writes are answered.
    Asserts the timing; returns the replies, to compare direct Redis with the proxy."""
    out = {}
    conns = []

    def conn():
        c = RawConn(port, timeout=HANG)
        conns.append(c)
        return c

    try:
        pauser, unpauser = conn(), conn()
        holders = [(conn(), args) for args in (
            ("SET", "w", "1"), ("INCR", "n"), ("PUBLISH", "ch", "m"), ("PFCOUNT", "hll"),
            ("EVAL", "return redis.call('set', 'e', '1')", "0"))]
        reader, mixed = conn(), conn()
        raw, took = timed(pauser, "CLIENT", "PAUSE", "2000", "WRITE")
        paused_at = time.monotonic()
        out["pause"] = raw
        assert raw == b"+OK\r\n" and took < PROMPT, (raw, took)
        for c, args in holders:
            c.send(cmd(*args))
        t0 = time.monotonic()
        reader.send((cmd("GET", "r") + cmd("EXISTS", "r") + cmd("STRLEN", "r")
                     + cmd("TTL", "r") + cmd("GET", "missing")) * 10
                    + cmd("EVAL_RO", "return redis.call('get', 'r')", "0") + cmd("GET", "r"))
        out["reads"] = [reader.read_reply_raw() for _ in range(52)]
        assert time.monotonic() - t0 < PROMPT, "reads were not answered at once"
        t0 = time.monotonic()
        mixed.send(cmd("GET", "r") + cmd("SET", "m", "1") + cmd("GET", "m"))
        out["mixed first"] = mixed.read_reply_raw()
        assert time.monotonic() - t0 < PROMPT, "the read before the write was not answered"
        time.sleep(0.3)
        for c, args in holders + [(mixed, "mixed")]:
            assert no_reply_within(c, 0.0), f"{args} was answered during the pause: {c.buf!r}"
        raw, took = timed(unpauser, "CLIENT", "UNPAUSE")
        out["unpause"] = raw
        assert raw == b"+OK\r\n" and took < PROMPT, (raw, took)
        assert time.monotonic() - paused_at < 1.7, "test too slow: the pause was about to end"
        t0 = time.monotonic()
        out["held"] = [c.read_reply_raw() for c, _ in holders]
        out["mixed rest"] = [mixed.read_reply_raw() for _ in range(2)]
        assert time.monotonic() - t0 < PROMPT, "held writes not released at once by UNPAUSE"
        out["after"] = fresh_reply(port, "MGET", "w", "n", "e", "m")[0]
        out["reads again"] = fresh_reply(port, "GET", "r")[0]
    finally:
        for c in conns:
            c.close()
    return out


class ReadLoad:
    """`clients` threads pipelining GETs of one key whose value is known (a pause WRITE does not
    hold reads), checking each reply and timing each batch."""

    def __init__(self, port, key, value, clients=2, batch=50):
        self.port, self.key, self.value, self.batch = port, key, value, batch
        self.problems, self.longest, self.batches = [], 0.0, 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def __enter__(self):
        for t in self._threads:
            t.start()
        wait_until(lambda: self.batches >= len(self._threads) or self.problems, 10,
                   what="readers running")
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(HANG * 2)

    def _run(self):
        expected = [bulk(self.value)] * self.batch
        try:
            with RawConn(self.port, timeout=HANG) as c:
                while not self._stop.is_set():
                    t0 = time.monotonic()
                    c.send(cmd("GET", self.key) * self.batch)
                    got = [c.read_reply_raw() for _ in range(self.batch)]
                    took = time.monotonic() - t0
                    if got != expected:
                        self.problems.append(f"wrong reply: {got[:2]!r}")
                        return
                    self.longest = max(self.longest, took)
                    self.batches += 1
                    time.sleep(0.005)
        except (OSError, EOFError) as exc:
            self.problems.append(repr(exc))


def test_client_pause_write_holds_writes_not_reads(proxy, redis_instance):
    """CLIENT PAUSE 2000 WRITE through the proxy (--upstream-timeout-ms 300): pipelined GETs of
    other clients (new ones, and ones reading since before the pause) are answered at once while
    SET / INCR / PUBLISH / PFCOUNT / a writing EVAL of other clients wait; CLIENT UNPAUSE from a
    fourth client answers at once and releases them. Same replies, same held/answered pattern as
    direct Redis; a BF.ADD through the proxy is held like a write; nobody gets an error."""
    p = proxy("--upstream-timeout-ms", STALL_MS)
    direct = redis_instance.client()
    direct.flushall()
    direct.set("r", "read-me")
    with ReadLoad(redis_instance.port, "r", b"read-me") as readers:
        via_redis = pause_write_sequence(redis_instance.port)
    assert not readers.problems and readers.longest < PROMPT, (readers.problems, readers.longest)
    direct.flushall()
    direct.set("r", "read-me")
    with ReadLoad(p.port, "r", b"read-me") as readers:
        via_proxy = pause_write_sequence(p.port)
    assert not readers.problems and readers.longest < PROMPT, (readers.problems, readers.longest)
    assert via_proxy == via_redis, f"proxy {via_proxy!r}\nredis {via_redis!r}"
    # A filter write through the proxy is held too, and released by UNPAUSE.
    with p.raw(timeout=HANG) as pauser, p.raw(timeout=HANG) as adder, p.raw() as reader:
        assert pauser.command("CLIENT", "PAUSE", "2000", "WRITE") == b"OK"
        adder.send(cmd("BF.ADD", "bf", "item"))
        raw, took = timed(reader, "GET", "r")
        assert raw == bulk(b"read-me") and took < PROMPT
        assert no_reply_within(adder, 0.3), adder.buf
        raw, took = fresh_reply(p.port, "CLIENT", "UNPAUSE")
        assert raw == b"+OK\r\n" and took < PROMPT
        assert adder.read_reply_raw() == b":1\r\n"
        assert reader.command("BF.EXISTS", "bf", "item") == 1
    assert "command timeout" not in p.log()


def test_client_pause_all_makes_everyone_wait_without_errors(proxy, redis_instance):
    """CLIENT PAUSE 1000 (ALL) through a proxy with --upstream-timeout-ms 300: load clients and
    a new client wait for the pause, as Redis's own clients do, and then get their right
    replies; nobody gets an error (the stall check knows the pause)."""
    p = proxy("--upstream-timeout-ms", STALL_MS)
    direct = redis_instance.client()
    direct.set("k", "v")
    # Directly on Redis: a GET during a pause waits for it.
    with RawConn(redis_instance.port, timeout=HANG) as c:
        assert c.command("CLIENT", "PAUSE", "500") == b"OK"
        raw, took = fresh_reply(redis_instance.port, "GET", "k")
        assert raw == bulk(b"v") and took > 0.3, (raw, took)
    with ModelLoad(p.port, clients=4) as load:
        time.sleep(0.2)
        raw, took = fresh_reply(p.port, "CLIENT", "PAUSE", "1000")
        assert raw == b"+OK\r\n" and took < PROMPT
        paused_at = time.monotonic()
        raw, took = fresh_reply(p.port, "GET", "k")
        assert raw == bulk(b"v"), raw
        assert 0.5 < took < 3.0, f"GET answered after {took:.2f} s in a 1 s pause"
        load.wait_served_after(paused_at + 1.0)
    load.assert_no_problems(max_batch=3.0)
    assert 0.5 < load.longest(), "the load did not wait for the pause"
    assert not load.busy_clients() and not load.unavailable_clients()
    assert "command timeout" not in p.log()


def test_debug_sleep_makes_everyone_wait_without_errors(proxy, redis_factory):
    """DEBUG SLEEP 1 through a proxy with --upstream-timeout-ms 300: its client gets +OK after
    the sleep; load clients and a new client are answered after it, with their right replies
    and no error."""
    server = redis_factory(extra_args=("--enable-debug-command", "yes"))
    p = proxy("--upstream-timeout-ms", STALL_MS, upstream=server.address)
    server.client().set("k", "v")
    with ModelLoad(p.port, clients=4) as load:
        time.sleep(0.2)
        sleeper = RawConn(p.port, timeout=HANG)
        sleeper.send(cmd("DEBUG", "SLEEP", "1"))
        slept_at = time.monotonic()
        time.sleep(0.1)
        raw, took = fresh_reply(p.port, "GET", "k")
        assert raw == bulk(b"v"), raw
        assert 0.3 < took < 3.0, f"GET answered after {took:.2f} s during a 1 s sleep"
        assert sleeper.read_reply_raw() == b"+OK\r\n"
        assert 0.8 < time.monotonic() - slept_at < 3.0
        sleeper.close()
        load.wait_served_after(time.monotonic())
    load.assert_no_problems(max_batch=3.0)
    assert 0.5 < load.longest(), "the load did not wait for the sleep"
    assert "command timeout" not in p.log()


def test_pause_started_elsewhere_fails_queued_requests(proxy, redis_instance):
    """CLIENT PAUSE WRITE sent directly to Redis is unknown to the proxy: a SET held by it and
    the GET queued behind it on the shared connection fail with "upstream unavailable (...
    command timeout)" after --upstream-timeout-ms (the probe's PING gets PONG: not busy), long
    before the pause ends; the held write never runs; service goes on."""
    p = proxy("--upstream-timeout-ms", STALL_MS)
    with RawConn(redis_instance.port) as d, p.raw(timeout=HANG) as c:
        assert c.command("SET", "x", "1") == b"OK"
        assert d.command("CLIENT", "PAUSE", "4000", "WRITE") == b"OK"
        try:
            t0 = time.monotonic()
            c.send(cmd("SET", "held", "1") + cmd("GET", "x"))
            replies = [c.read_reply_raw() for _ in range(2)]
            took = time.monotonic() - t0
            for raw in replies:
                assert raw.startswith(UNAVAILABLE) and b"command timeout" in raw, replies
            assert took < 2.5, f"failed after {took:.2f} s"
            # The client goes on; reads are answered while the pause lasts.
            assert c.command("GET", "x") == b"1"
        finally:
            assert d.command("CLIENT", "UNPAUSE") == b"OK"
        assert d.command("GET", "held") is None
        assert c.command("SET", "y", "2") == b"OK"


def monitor_mapping(redis_port, prefix, clients, timeout=5.0):
    """Watches MONITOR directly on Redis until each load client's commands were seen; returns
    {client number: upstream address its commands come from}."""
    pattern = re.compile(rb'\[\d+ ([0-9.]+:\d+)\] "(?:SET|GET|INCR)" "' + prefix.encode()
                         + rb':(\d+):')
    seen = {}
    with RawConn(redis_port, timeout=HANG) as m:
        assert m.command("MONITOR") == b"OK"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(seen) < clients:
            line = m.read_reply()
            match = pattern.search(line)
            if match:
                tid, addr = int(match.group(2)), match.group(1).decode()
                assert seen.setdefault(tid, addr) == addr, f"client {tid} moved connections"
    assert len(seen) == clients, f"MONITOR saw only clients {sorted(seen)}"
    return seen


def proxy_connections(direct):
    """CLIENT LIST entries of Redis other than the asking direct connection: {addr: fields}."""
    own = direct.command("CLIENT", "ID")
    entries = {}
    for line in direct.command("CLIENT", "LIST").decode().splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if int(fields["id"]) != own:
            entries[fields["addr"]] = fields
    return entries


def test_broken_shared_connection_fails_only_its_requests(proxy, redis_instance):
    """8 clients pipelining through a proxy with 2 shared connections; one of those is killed
    with CLIENT KILL ID directly on Redis. Every request that was on it gets an error reply
    starting with "-ERR upstream unavailable" (each request gets exactly one reply, nobody
    hangs), the clients of the other shared connection see nothing, every client's next batch
    is served normally, and the proxy replaces the connection.

    First kill: a CLIENT PAUSE WRITE sent directly to Redis (shorter than the stall timeout)
    holds a batch of every client on its connection, so every client of the killed connection
    has requests on it. Second kill: the other connection, which now carries every client,
    under plain load."""
    p = proxy("--upstream-connections", "2")
    direct = RawConn(redis_instance.port, timeout=HANG)
    with ModelLoad(p.port, clients=8, allow_unavailable=True, prefix="kl", pause=0) as load:
        mapping = monitor_mapping(redis_instance.port, "kl", 8)
        conns = proxy_connections(direct)
        shared = set(mapping.values())
        assert len(shared) == 2 and shared <= set(conns), (mapping, sorted(conns))
        victim = mapping[0]
        on_victim = {tid for tid, addr in mapping.items() if addr == victim}
        assert 0 < len(on_victim) < 8
        assert direct.command("CLIENT", "PAUSE", "3000", "WRITE") == b"OK"
        try:
            time.sleep(0.3)
            assert direct.command("CLIENT", "KILL", "ID", conns[victim]["id"]) == 1
            killed_at = time.monotonic()
            wait_until(lambda: load.unavailable_clients() >= on_victim or load.problems, HANG,
                       what="upstream errors for every client of the killed connection")
            assert not load.problems, load.problems
            assert load.unavailable_clients() == on_victim, "the other connection's clients erred"
            # The errors came at once, while the pause still held the other connection.
            assert time.monotonic() - killed_at < PROMPT
        finally:
            assert direct.command("CLIENT", "UNPAUSE") == b"OK"
        load.wait_served_after(time.monotonic(), batches=5)
        assert load.unavailable_clients() == on_victim, "the other connection's clients erred"
        # A new connection replaced the killed one; the other one is still the same.
        survivor = (shared - {victim}).pop()
        wait_until(lambda: len(proxy_connections(direct)) == 2, HANG,
                   what="the proxy to open a new shared connection")
        remaining = set(proxy_connections(direct))
        assert victim not in remaining and survivor in remaining, remaining
        # Second kill, unassisted: errors only for what was on it, then normal service.
        round2 = time.monotonic()
        assert direct.command("CLIENT", "KILL", "ID", conns[survivor]["id"]) == 1
        killed2_at = time.monotonic()
        load.wait_served_after(time.monotonic() + 0.2, batches=5)
        wait_until(lambda: len(proxy_connections(direct)) == 2
                   and not set(proxy_connections(direct)) & shared, HANG,
                   what="the proxy to replace the second killed connection")
    load.assert_no_problems(max_batch=2.0)
    for raw in load.unavailable_texts:
        assert raw.endswith(b")\r\n") and raw.count(b"\r\n") == 1, raw
    # Errors only in batches sent around a kill, none later.
    with load._lock:
        late = [r for recs in load.records for r in recs if r[3] and (
            killed_at + 1.0 < r[0] < round2 or r[0] > killed2_at + 1.0)]
    assert not late, late
    assert not load.busy_clients()
    direct.close()


def test_stopped_upstream_still_times_out(proxy, redis_instance):
    """SIGSTOP of the upstream for 1.5 s, proxy with --upstream-timeout-ms 500: the requests
    waiting on both shared connections fail with "upstream unavailable (... command timeout)"
    before the upstream continues (the probe gets no answer: not busy, stopped), nobody hangs,
    and service resumes after SIGCONT."""
    p = proxy("--upstream-timeout-ms", "500")
    clients = [RawConn(p.port, timeout=HANG) for _ in range(4)]  # both shared connections
    for i, c in enumerate(clients):
        assert c.command("SET", f"s{i}", "before") == b"OK"
    pid = redis_instance.proc.pid
    os.kill(pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    resume = threading.Timer(1.5, os.kill, (pid, signal.SIGCONT))
    resume.start()
    try:
        for i, c in enumerate(clients):
            c.send((cmd("GET", f"s{i}") + cmd("SET", f"s{i}", "during")) * 5)
        for i, c in enumerate(clients):
            replies = [c.read_reply_raw() for _ in range(10)]
            for raw in replies:
                assert raw.startswith(UNAVAILABLE) and b"command timeout" in raw, replies
        took = time.monotonic() - stopped_at
        assert took < 1.5, f"requests failed only after {took:.2f} s, once the upstream resumed"
    finally:
        resume.join()
        os.kill(pid, signal.SIGCONT)
    wrong = []
    for i, c in enumerate(clients):
        def works(c=c, i=i):
            raw, took = timed(c, "GET", f"s{i}")
            if took > 3.0 or not (raw.startswith(UNAVAILABLE) or raw.startswith(b"$")):
                wrong.append((raw, took))
            return raw.startswith(b"$")
        wait_until(works, 10, interval=0.1, what="service to resume after SIGCONT")
        assert not wrong, wrong
        # Whatever the failed SETs did, the value is one of this client's.
        assert c.command("GET", f"s{i}") in (b"before", b"during")
        assert c.command("SET", f"s{i}", "after") == b"OK"
        assert c.command("GET", f"s{i}") == b"after"
        c.close()
