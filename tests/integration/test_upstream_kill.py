"""The upstream redis-server is SIGKILLed under load and restarted on the same port.

* 50 clients running GET/SET and BF.ADD/BF.EXISTS: the proxy survives; every reply a client gets
  is the right one for its own request or `-ERR upstream unavailable (...)`, never another
  client's; while the upstream is down a new connection gets its error at once; service resumes
  within 1 s of the upstream accepting connections again.
* With `appendonly yes` + `appendfsync always`: every BF.ADD the proxy acknowledged (:1 or :0)
  before the kill is still found by BF.MEXISTS after the restart (the AOF replay), i.e. the proxy
  only acknowledges an add once Redis has applied (and so logged) its writes.
"""

import random
import socket
import threading
import time

from bp_helpers import HOST, RawConn, encode_command as cmd, wait_until

# protocol/errors.h kUpstreamUnavailablePrefix; the reason in parentheses varies.
UNAVAILABLE = b"-ERR upstream unavailable"
REPLY_TIMEOUT = 5.0  # no reply within this is a hang, not slowness
DOWN_SECONDS = 1.5  # how long the upstream stays dead
PROMPT_ERROR = 1.0  # while the upstream is down, a fresh connection's error reply within this
RESUME = 1.0  # service must resume within this of the upstream accepting connections again
ERROR_PAUSE = 0.01  # a client pauses this long after an error reply (as a real client backs off;
# 50 threads spinning on instant errors would starve the measuring thread of the GIL)


def is_unavailable(raw):
    """One complete `-ERR upstream unavailable (...)` line."""
    return raw.startswith(UNAVAILABLE) and raw.endswith(b"\r\n") and raw.count(b"\r\n") == 1


def bulk(value):
    return b"$%d\r\n%s\r\n" % (len(value), value)


class LoadClient:
    """One client thread of the mixed load, with its own connection and a model of what it
    wrote, so each reply can be checked against the client's own requests.

    Key values and bloom items embed the thread id and a sequence number: a reply meant for
    another client (or a stale one) cannot pass for the right one."""

    KEYS = 4

    def __init__(self, tid, port, shared):
        self.tid = tid
        self.port = port
        self.shared = shared  # {"killed_at": monotonic time the old upstream was dead, or None}
        self.conn = None
        self.keys = [f"kill:t{tid}:k{j}" for j in range(self.KEYS)]
        # Per key: the last value whose SET was acknowledged and when that SET was sent; and
        # the values of SETs that got an error (they may or may not have been applied).
        self.acked = {k: None for k in self.keys}
        self.maybe = {k: set() for k in self.keys}
        self.own_items = []  # (item, sent_at) of acknowledged BF.ADDs to bf:t{tid}
        self.shared_items = []  # the same for the shared filter
        self.problems = []
        self.ok = self.errors = self.closes = self.lost = 0
        self.rng = random.Random(tid)

    # -- connection -------------------------------------------------------------------------

    def exchange(self, *args):
        """Sends one command; returns (raw reply, sent_at). raw is None when the proxy closed
        the connection (the client reconnects on its next command) or did not answer."""
        if self.conn is None:
            self.conn = RawConn(self.port, timeout=REPLY_TIMEOUT)
        sent_at = time.monotonic()
        try:
            self.conn.send(cmd(*args))
            return self.conn.read_reply_raw(), sent_at
        except socket.timeout:
            self.problems.append(f"t{self.tid} {args}: no reply within {REPLY_TIMEOUT}s")
        except (EOFError, OSError):
            self.closes += 1
        self.conn.close()
        self.conn = None
        return None, sent_at

    def may_be_lost(self, sent_at):
        """A write sent before the old upstream was dead may have been applied there and then
        lost with it (this redis-server has no persistence)."""
        killed_at = self.shared["killed_at"]
        return killed_at is not None and sent_at < killed_at

    def good(self):
        self.ok += 1

    def error(self, args, raw):
        """Handles a reply that is not the expected one; True if it is an acceptable error."""
        if raw is None:
            return True  # connection closed: counted in exchange()
        if is_unavailable(raw):
            self.errors += 1
            time.sleep(ERROR_PAUSE)
            return True
        self.problems.append(f"t{self.tid} {args}: unexpected reply {raw[:200]!r}")
        return False

    # -- commands ---------------------------------------------------------------------------

    def set(self, key, value):
        raw, sent_at = self.exchange("SET", key, value)
        value = value.encode()
        if raw == b"+OK\r\n":
            self.acked[key] = (value, sent_at)
            self.maybe[key].clear()
            self.good()
        else:
            self.maybe[key].add(value)
            self.error(("SET", key, value), raw)

    def get(self, key):
        raw, _ = self.exchange("GET", key)
        if raw is None or is_unavailable(raw):
            self.error(("GET", key), raw)
            return
        acked = self.acked[key]
        if raw == b"$-1\r\n" and (acked is None or self.may_be_lost(acked[1])):
            self.lost += acked is not None
            self.acked[key] = None
            self.good()
            return
        if acked is not None and raw == bulk(acked[0]):
            self.good()
            return
        for value in self.maybe[key]:
            if raw == bulk(value):  # a SET that got an error had been applied after all
                self.acked[key] = (value, time.monotonic())
                self.maybe[key].clear()
                self.good()
                return
        if raw == b"$-1\r\n":
            what = "nil, yet its SET was acknowledged and not lost since"
        elif raw.startswith(b"$") and raw.split(b"\r\n", 1)[1].startswith(b"t%d:" % self.tid):
            what = "a stale value of its own"
        else:
            what = "NOT ITS OWN reply"
        self.problems.append(f"t{self.tid} GET {key}: {what}: {raw[:200]!r}; last acknowledged "
                             f"SET {acked!r}, unacknowledged {sorted(self.maybe[key])[:5]}, "
                             f"killed_at {self.shared['killed_at']}")

    def bf_add(self, key, item, record):
        raw, sent_at = self.exchange("BF.ADD", key, item)
        if raw in (b":1\r\n", b":0\r\n"):  # :0 = a false positive: all its bits already set
            record.append((item, sent_at))
            self.good()
        else:
            self.error(("BF.ADD", key, item), raw)

    def bf_exists(self, key, record):
        if not record:
            return
        item, added_at = self.rng.choice(record)
        raw, _ = self.exchange("BF.EXISTS", key, item)
        if raw == b":1\r\n" or (raw == b":0\r\n" and self.may_be_lost(added_at)):
            self.good()
        else:
            self.error(("BF.EXISTS", key, item, f"added at {added_at}"), raw)

    def run(self, stop):
        seq = 0
        own_filter, shared_filter = f"kill:bf:t{self.tid}", "kill:bf:shared"
        while not stop.is_set():
            seq += 1
            key = self.keys[seq % self.KEYS]
            self.set(key, f"t{self.tid}:s{seq}:" + "v" * (seq % 23))
            self.get(key)
            self.get(self.keys[(seq + 1) % self.KEYS])  # written a few rounds ago
            self.bf_add(own_filter, f"t{self.tid}:i{seq}", self.own_items)
            self.bf_exists(own_filter, self.own_items)
            if seq % 5 == 0:
                self.bf_add(shared_filter, f"t{self.tid}:i{seq}", self.shared_items)
                self.bf_exists(shared_filter, self.shared_items)
        if self.conn is not None:
            self.conn.close()


def start_threads(targets):
    crashes = []

    def wrapper(target):
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            crashes.append(repr(exc))

    threads = [threading.Thread(target=wrapper, args=(t,), daemon=True) for t in targets]
    for t in threads:
        t.start()
    return threads, crashes


def first_accept(port, result, stop):
    """Records in result["t"] when `port` first accepts a TCP connection (polled every ms)."""
    while not stop.is_set():
        try:
            socket.create_connection((HOST, port), timeout=0.5).close()
        except OSError:
            time.sleep(0.001)
            continue
        result["t"], result["wall"] = time.monotonic(), time.time()
        return


def first_service(port, result, stop, problems):
    """Records in result["t"] when SET + GET + BF.ADD first all succeed through the proxy,
    trying again every 2 ms, on a connection of its own."""
    conn, n = None, 0
    while not stop.is_set():
        n += 1
        value = f"resume:{n}"
        try:
            if conn is None:
                conn = RawConn(port, timeout=REPLY_TIMEOUT)
            steps = ((("SET", "kill:resume", value), b"+OK\r\n"),
                     (("GET", "kill:resume"), bulk(value.encode())),
                     (("BF.ADD", "kill:resume:bf", value), b":1\r\n", b":0\r\n"))
            for args, *want in steps:
                conn.send(cmd(*args))
                raw = conn.read_reply_raw()
                if raw in want:
                    continue
                if not is_unavailable(raw):
                    problems.append(f"resume probe {args}: unexpected reply {raw[:200]!r}")
                break
            else:
                result["t"], result["wall"] = time.monotonic(), time.time()
                break
        except (EOFError, OSError) as exc:
            problems.append(f"resume probe: connection failed: {exc!r}")
            if conn is not None:
                conn.close()
            conn = None
        time.sleep(0.002)
    if conn is not None:
        conn.close()


def test_sigkill_under_mixed_load(proxy, redis_instance, restart_redis):
    # Verbose logging puts each upstream connection's close and re-establishment in the log
    # (with ms timestamps), which the fixture prints if the test fails.
    p = proxy("--loglevel", "verbose")
    shared = {"killed_at": None}
    stop = threading.Event()
    clients = [LoadClient(tid, p.port, shared) for tid in range(50)]
    threads, crashes = start_threads([lambda c=c: c.run(stop) for c in clients])
    probe_problems, down_probes = [], []
    accepted, resumed, stop_watch = {}, {}, threading.Event()
    try:
        # Every client is up and running before the kill.
        wait_until(lambda: all(c.ok >= 20 for c in clients) or crashes, 60,
                   what="every client to get 20 good replies")
        assert not crashes, crashes
        ok_before = sum(c.ok for c in clients)

        restart_redis(redis_instance.port, kill_only=True)  # SIGKILL, then reaped
        shared["killed_at"] = killed_at = time.monotonic()

        # While it is down: a new connection's request is refused at once (the proxy has no
        # upstream connection to queue it on), whatever the command.
        n = 0
        while time.monotonic() - killed_at < DOWN_SECONDS:
            n += 1
            args = ("GET", "kill:down") if n % 2 else ("BF.ADD", "kill:down:bf", f"d{n}")
            t0 = time.monotonic()
            with RawConn(p.port, timeout=REPLY_TIMEOUT) as fresh:
                fresh.send(cmd(*args))
                raw = fresh.read_reply_raw()
            down_probes.append((time.monotonic() - t0, args[0], raw))
            time.sleep(0.1)

        # The restart: the instant the new server accepts connections is taken by polling its
        # port (the helper's own PING loop would be up to 20 ms late), and the first success
        # through the proxy is polled for at the same time.
        watchers, _ = start_threads([
            lambda: first_accept(redis_instance.port, accepted, stop_watch),
            lambda: first_service(p.port, resumed, stop_watch, probe_problems)])
        restart_redis(redis_instance.port, kill_only=False)  # same port, same dir
        restarted_at = time.monotonic()
        wait_until(lambda: "t" in resumed, 10, interval=0.01,
                   what="SET+GET+BF.ADD through the proxy to succeed after the restart")
        stop_watch.set()
        for t in watchers:
            t.join(10)

        # Every client recovers on its own (same connection, or a new one if it was closed).
        base = {c.tid: c.ok for c in clients}
        wait_until(lambda: all(c.ok - base[c.tid] >= 20 for c in clients) or crashes, 30,
                   what="every client to get 20 good replies after the restart")
    finally:
        stop.set()
        stop_watch.set()
        for t in threads:
            t.join(30)

    assert not crashes, crashes
    assert not any(t.is_alive() for t in threads), "client threads still running"
    problems = [msg for c in clients for msg in c.problems] + probe_problems
    assert not problems, f"{len(problems)} wrong replies:\n" + "\n".join(problems[:20])

    assert p.alive(), f"bloomproxy died (exit code {p.process.returncode})"
    with p.raw() as c:
        assert c.command("PING") == b"PONG"

    bad = [(round(dt, 3), name, raw) for dt, name, raw in down_probes if not is_unavailable(raw)]
    assert not bad, f"requests while the upstream was down: {bad}"
    slowest_error = max(dt for dt, _, _ in down_probes)
    assert slowest_error < PROMPT_ERROR, \
        f"error replies took up to {slowest_error:.3f}s: {[round(d[0], 3) for d in down_probes]}"

    resume_latency = resumed["t"] - accepted["t"]
    summary = (f"ok before kill {ok_before}, ok total {sum(c.ok for c in clients)}, errors "
               f"{sum(c.errors for c in clients)}, closed connections "
               f"{sum(c.closes for c in clients)}, values lost with the old server "
               f"{sum(c.lost for c in clients)}; {len(down_probes)} down probes, slowest error "
               f"{slowest_error * 1000:.1f} ms; upstream accepting {accepted['t'] - killed_at:.3f}"
               f" s after the kill (wall {accepted['wall']:.3f}), helper saw PING "
               f"{restarted_at - accepted['t']:.3f} s later; service resumed "
               f"{resume_latency * 1000:.1f} ms after accept (wall {resumed['wall']:.3f})")
    print(summary)
    assert resume_latency < RESUME, f"service resumed too late: {summary}"
    assert sum(c.errors for c in clients) > 0, "the kill was not felt by any client"


def test_acknowledged_bf_add_survives_kill_with_appendfsync_always(proxy, redis_factory):
    # `--appendonly yes` after the helper's `--appendonly no` wins; the server's directory is
    # kept across start(), so the restarted server replays the AOF (Redis 7: appendonlydir/).
    upstream = redis_factory(extra_args=("--appendonly", "yes", "--appendfsync", "always"))
    p = proxy("--loglevel", "verbose", upstream=upstream.address)
    filters = [f"aof:bf{i}" for i in range(3)]
    acked = {f: [] for f in filters}  # list.append is atomic: the threads share these lists
    stats = {"errors": 0, "closes": 0, "problems": []}
    stop, killed = threading.Event(), threading.Event()

    def adder(tid):
        conn, seq = None, 0
        while not stop.is_set():
            seq += 1
            key, item = filters[seq % len(filters)], f"t{tid}:{seq}"
            try:
                if conn is None:
                    conn = RawConn(p.port, timeout=REPLY_TIMEOUT)
                conn.send(cmd("BF.ADD", key, item))
                raw = conn.read_reply_raw()
            except socket.timeout:
                stats["problems"].append(f"t{tid} BF.ADD {key} {item}: no reply")
                raw = None
            except (EOFError, OSError):
                stats["closes"] += 1
                raw = None
            if raw is None:
                if conn is not None:
                    conn.close()
                conn = None
            elif raw in (b":1\r\n", b":0\r\n"):
                acked[key].append(item)
            elif is_unavailable(raw):
                # Unknown outcome: the add may or may not have reached the server.
                stats["errors"] += 1
                if not killed.is_set():
                    stats["problems"].append(f"t{tid} BF.ADD before the kill: {raw!r}")
                time.sleep(ERROR_PAUSE)
            else:
                stats["problems"].append(f"t{tid} BF.ADD {key} {item}: {raw[:200]!r}")
        if conn is not None:
            conn.close()

    threads, crashes = start_threads([lambda t=t: adder(t) for t in range(10)])
    try:
        wait_until(lambda: sum(map(len, acked.values())) >= 600 or crashes, 60,
                   what="600 acknowledged BF.ADDs")
        alive_at_kill = sum(t.is_alive() for t in threads)
        killed.set()
        upstream.kill()  # SIGKILL while the adders are running
        wait_until(lambda: stats["errors"] > 0, 5, what="an error reply after the kill")
        time.sleep(0.2)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not crashes, crashes
    assert not stats["problems"], stats["problems"][:20]
    assert alive_at_kill == 10, f"only {alive_at_kill} adders were running at the kill"
    total = sum(map(len, acked.values()))
    assert total > 200, f"only {total} acknowledged adds: the test would prove little"
    assert any((upstream.dir / "appendonlydir").iterdir()), "no AOF was written"

    upstream.start()  # same port and directory: replays the AOF
    with p.raw(timeout=30) as c:
        wait_until(lambda: isinstance(c.command("BF.MEXISTS", filters[0], "probe"), list), 10,
                   interval=0.05, what="the proxy to serve again after the restart")
        for key, items in acked.items():
            for i in range(0, len(items), 500):
                batch = items[i:i + 500]
                got = c.command("BF.MEXISTS", key, *batch)
                assert isinstance(got, list), f"BF.MEXISTS {key}: {got!r}"
                missing = [item for item, v in zip(batch, got) if v != 1]
                assert not missing, (f"{key}: {len(missing)} of {len(batch)} acknowledged "
                                     f"items lost across the kill, e.g. {missing[:10]}")
    print(f"acknowledged adds {total} ({', '.join(f'{k}: {len(v)}' for k, v in acked.items())})"
          f", error replies {stats['errors']}, closed connections {stats['closes']}")
    assert p.alive()
