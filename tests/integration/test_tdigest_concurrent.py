"""Many writers, one t-digest: four bloomproxy processes in front of one redis-server, three client
connections each, all sending pipelined TDIGEST.ADD (one value or 100 values per call) into the
same digest while a fifth proxy reads QUANTILE, CDF, RANK, REVRANK, TRIMMED_MEAN, MIN, MAX and
INFO all the time. Every ADD and every compressing read is a read-modify-write of the digest;
an ADD lost to a racing compression, or applied twice, shows as a wrong count.

The quantile check. The digest is compared with the exact quantiles of the values added, in rank:
an estimate v of the q-quantile must have a rank (the share of the values below or at v) within
    k * q * (1 - q) + 2 / N   of q,   k = 2 * pi * ln(N) / C
N values, compression C. Why: RedisBloom's compression merges two neighbours only while
    weight * C / (2 * pi * W * ln(W)) <= q0 * (1 - q0)  and  <= q2 * (1 - q2)
at both ends q0, q2 of the merged centroid (W the digest's weight): the t-digest paper's k_2 kind
of scale function (log(q / (1 - q)), normalised by 2 * pi * ln(W)). q * (1 - q) is concave, so
a centroid whose span contains q holds at most k * q * (1 - q) of the weight; an estimate
interpolates between the centroids around q and is off by about one such centroid (2 / N for
the discrete ranks). At C = 100 and N = 20000 that is 0.0063 at q = 0.01 and 0.156 at the median:
k_2 is tight at the tails, loose in the middle. (The proxy's digests of these values, added in one
connection, stay under a tenth of the bound at every q: 0.08 of it at C = 100, 0.06 at C = 500.)

The bound has teeth (test_quantile_bound_rejects_a_digest_missing_a_quarter): each proxy sends
one quarter of the values by rank (proxy 0 the lowest), and a digest built without one of those
quarters fails it. At C = 100 that holds for the lowest and the highest quarter, which move the
tail quantiles by up to 0.25 of the rank where the bound is 0.006; a middle quarter moves no
quantile by more than ~0.17 of the rank, which the bound allows there (0.84 and 0.79 of it at
worst). At C = 500 (bound 0.031 at the median) every missing quarter fails (a middle one by 5x),
so the concurrent test runs at both.

Also here: TDIGEST.MERGE of two sources into a destination from two proxies while two others add
into the sources (merges compress the sources in place: read-modify-writes racing the adds), and
the TTLs (kept by ADDs and compressing reads, dropped by MERGE into an existing destination).
"""

import bisect
import math
import random
import threading
from collections import deque

import pytest

from bp_helpers import Err, Simple
from bp_helpers import encode_command as cmd
from test_bf_concurrency import run_threads

PROXIES = 4
CONNECTIONS_PER_PROXY = 3
N_VALUES = 20000
BATCH = 100
SINGLE_SHARE = 0.2  # of the values, sent as one-value ADDs
CALLS_PER_WRITE = 4  # small writes (up to three in flight): the adds last long enough to race
READERS = 2  # connections reading through the fifth proxy
QS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.35, 0.5, 0.65, 0.75, 0.9, 0.95, 0.99, 0.999)
Q_ARGS = [repr(q) for q in QS]


def known_values(n, seed):
    """`n` distinct latency-like values (log-normal, 6 decimals): [(text, float)] sorted by
    value. The text parses to exactly that double, in Python and in the proxy alike."""
    rng = random.Random(seed)
    seen = {}
    while len(seen) < n:
        text = "%.6f" % rng.lognormvariate(3.0, 1.0)
        seen[text] = float(text)
    return sorted(seen.items(), key=lambda kv: kv[1])


def quarters(values):
    """Four quarters by rank: proxy t sends quarter t (quarter 0: the lowest values)."""
    n = len(values)
    return [values[t * n // 4:(t + 1) * n // 4] for t in range(4)]


def add_calls(texts, rng, single_share=SINGLE_SHARE):
    """`texts` shuffled into ADD calls: about `single_share` of them alone, the rest BATCH per
    call, the calls in a random order: [[text, ...]]."""
    texts = list(texts)
    rng.shuffle(texts)
    singles = int(len(texts) * single_share)
    calls = [[t] for t in texts[:singles]]
    rest = texts[singles:]
    calls += [rest[i:i + BATCH] for i in range(0, len(rest), BATCH)]
    rng.shuffle(calls)
    return calls


def send_calls(conn, key, calls, per_write=CALLS_PER_WRITE):
    """Sends TDIGEST.ADD of each call, pipelined (`per_write` calls per write, up to three writes
    in flight); every reply must be +OK."""
    def check(chunk):
        for call in chunk:
            reply = conn.read_reply()
            assert reply == b"OK" and isinstance(reply, Simple), f"ADD of {len(call)}: {reply!r}"

    pending = deque()
    for c in range(0, len(calls), per_write):
        chunk = calls[c:c + per_write]
        conn.send(b"".join(cmd("TDIGEST.ADD", key, *call) for call in chunk))
        pending.append(chunk)
        if len(pending) >= 3:
            check(pending.popleft())
    while pending:
        check(pending.popleft())


def info_of(conn, key):
    reply = conn.command("TDIGEST.INFO", key)
    assert isinstance(reply, list) and len(reply) == 18, reply
    return {bytes(reply[i]).decode(): reply[i + 1] for i in range(0, 18, 2)}


def as_double(reply):
    assert isinstance(reply, bytes) and not isinstance(reply, Err), reply
    return float(reply)


def rank_errors(sorted_floats, estimates, compression):
    """[(q, estimate, rank error, bound)] of the QUANTILE replies `estimates` (for QS) against
    the values, with the bound of the module docstring."""
    n = len(sorted_floats)
    k = 2 * math.pi * math.log(n) / compression
    out = []
    for q, v in zip(QS, estimates):
        low = bisect.bisect_left(sorted_floats, v) / n
        high = bisect.bisect_right(sorted_floats, v) / n
        out.append((q, v, max(0.0, low - q, q - high), k * q * (1 - q) + 2 / n))
    return out


def beyond_bound(errors):
    return [(q, v, round(err, 5), round(bound, 5)) for q, v, err, bound in errors if err > bound]


def fill(conn, key, texts, compression, rng):
    assert conn.command("TDIGEST.CREATE", key, "COMPRESSION", compression) == b"OK"
    send_calls(conn, key, add_calls(texts, rng, single_share=0.0))


# ---------------------------------------------------------------------------------------------
# Four proxies adding, a fifth reading


class CountDown:
    """A context manager for `n` writer threads: when the last one leaves (done or failed), it
    sets `event`, which ends the readers' loops."""

    def __init__(self, n, event):
        self.left, self.event, self.lock = n, event, threading.Lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with self.lock:
            self.left -= 1
            if self.left == 0:
                self.event.set()


class Reader:
    """Reads the digest through its own proxy until stopped, one pipeline of every read per
    round; checks each reply on its own (the digest may grow between the reads of a round, never
    shrink: INFO comes first)."""

    def __init__(self, proxy, key, floats, stop):
        self.proxy, self.key, self.stop = proxy, key, stop
        self.lo, self.hi, self.n = floats[0], floats[-1], len(floats)
        self.probes = [floats[i * (self.n - 1) // 6] for i in range(7)]
        self.seen = []  # Observations of each round's INFO, in order

    def run(self, _tid=0):
        with self.proxy.raw(timeout=60) as conn:
            while not self.stop.is_set():
                self.one_round(conn)

    def one_round(self, conn):
        key, probes = self.key, [repr(p) for p in self.probes]
        conn.send(b"".join([
            cmd("TDIGEST.INFO", key), cmd("TDIGEST.QUANTILE", key, *Q_ARGS),
            cmd("TDIGEST.CDF", key, *probes), cmd("TDIGEST.RANK", key, *probes),
            cmd("TDIGEST.REVRANK", key, *probes), cmd("TDIGEST.TRIMMED_MEAN", key, "0.1", "0.9"),
            cmd("TDIGEST.MIN", key), cmd("TDIGEST.MAX", key)]))
        info, quantiles, cdfs, ranks, revranks, mean, low, high = (
            conn.read_reply() for _ in range(8))
        assert isinstance(info, list) and len(info) == 18, info
        info = {bytes(info[i]).decode(): info[i + 1] for i in range(0, 18, 2)}
        obs = info["Observations"]
        assert obs == info["Merged weight"] + info["Unmerged weight"], info
        assert not self.seen or obs >= self.seen[-1], (self.seen[-1], info)
        assert obs <= self.n, info
        self.seen.append(obs)
        if obs < 2:  # the reads after INFO may see more; one observation reads as nan
            return
        got = [as_double(x) for x in quantiles]
        assert all(self.lo <= x <= self.hi for x in got), got
        assert got == sorted(got), f"QUANTILE not monotonic in q: {got}"
        got = [as_double(x) for x in cdfs]
        assert all(0 <= x <= 1 for x in got) and got == sorted(got), f"CDF {got}"
        assert all(isinstance(r, int) and -1 <= r <= self.n for r in ranks + revranks), (
            ranks, revranks)
        assert self.lo <= as_double(mean) <= self.hi, mean
        assert self.lo <= as_double(low) <= as_double(high) <= self.hi, (low, high)


@pytest.mark.parametrize("compression", [100, 500])
def test_four_proxies_add_while_a_fifth_reads(proxy, compression):
    values = known_values(N_VALUES, seed=20261129 + compression)
    floats = [f for _, f in values]
    rng = random.Random(compression)
    per_conn = []
    for quarter in quarters(values):
        calls = add_calls([t for t, _ in quarter], rng)
        per_conn += [calls[c::CONNECTIONS_PER_PROXY] for c in range(CONNECTIONS_PER_PROXY)]
    proxies = [proxy() for _ in range(PROXIES + 1)]
    key = "td:many"
    with proxies[0].raw() as c:
        assert c.command("TDIGEST.CREATE", key, "COMPRESSION", compression) == b"OK"
    stop = threading.Event()
    readers = [Reader(proxies[PROXIES], key, floats, stop) for _ in range(READERS)]
    writing = CountDown(len(per_conn), stop)

    def worker(t):
        if t >= len(per_conn):
            readers[t - len(per_conn)].run()
            return
        with writing:
            with proxies[t // CONNECTIONS_PER_PROXY].raw(timeout=120) as conn:
                send_calls(conn, key, per_conn[t])

    run_threads(worker, len(per_conn) + READERS, timeout=240)
    # The reads raced the adds: rounds that found some of the values, not all.
    during = sum(1 for r in readers for obs in r.seen if 0 < obs < N_VALUES)
    assert during >= 5, [r.seen for r in readers]

    with proxies[0].raw(timeout=30) as c:
        info = info_of(c, key)
        assert info["Observations"] == N_VALUES, info
        assert info["Merged weight"] + info["Unmerged weight"] == N_VALUES, info
        assert info["Compression"] == compression and info["Total compressions"] > 0, info
        assert as_double(c.command("TDIGEST.MIN", key)) == floats[0]
        assert as_double(c.command("TDIGEST.MAX", key)) == floats[-1]
        quantiles = c.command("TDIGEST.QUANTILE", key, *Q_ARGS)
        errors = rank_errors(floats, [as_double(x) for x in quantiles], compression)
        assert not beyond_bound(errors), f"(q, estimate, rank error, bound): {errors}"
        info = info_of(c, key)  # compressed now: every proxy reads the same digest
    for t, p in enumerate(proxies):
        with p.raw(timeout=30) as c:
            assert c.command("TDIGEST.QUANTILE", key, *Q_ARGS) == quantiles, f"through proxy {t}"
            assert info_of(c, key) == info, f"through proxy {t}"


@pytest.mark.parametrize("compression", [100, 500])
def test_quantile_bound_rejects_a_digest_missing_a_quarter(proxy, compression):
    """The same values and quantile check as the concurrent test: a digest of all of them passes,
    a digest without one proxy's quarter fails (every quarter at C = 500; at C = 100 the lowest
    and the highest, where the bound is tight)."""
    values = known_values(N_VALUES, seed=20261129 + compression)
    floats = [f for _, f in values]
    rng = random.Random(compression)
    parts = quarters(values)
    p = proxy()
    with p.raw(timeout=60) as c:
        fill(c, "td:all", [t for t, _ in values], compression, rng)
        got = [as_double(x) for x in c.command("TDIGEST.QUANTILE", "td:all", *Q_ARGS)]
        errors = rank_errors(floats, got, compression)
        assert not beyond_bound(errors), errors
        for t in range(4):
            key = f"td:without:{t}"
            fill(c, key, [text for i in range(4) if i != t for text, _ in parts[i]],
                 compression, rng)
            got = [as_double(x) for x in c.command("TDIGEST.QUANTILE", key, *Q_ARGS)]
            errors = rank_errors(floats, got, compression)
            if compression >= 500 or t in (0, 3):
                assert beyond_bound(errors), f"missing quarter {t} passes: {errors}"


# ---------------------------------------------------------------------------------------------
# MERGE racing the adds into its sources

A_CALLS, A_SIZE = 80, 100
B_CALLS, B_SIZE = 96, 101  # B_CALLS < 100: a count 100 i + 101 j has one (i, j)


def decompose(count):
    """(ADD calls of a, ADD calls of b) that make `count` observations, or None."""
    j = count % 100
    i = count // 100 - j
    if 0 <= i <= A_CALLS and 0 <= j <= B_CALLS:
        return i, j
    return None


def test_merge_while_adding_into_the_sources(proxy):
    """Two proxies add into td:a (calls of 100 values) and td:b (calls of 101 values) while two
    others merge them again and again: one into td:d with OVERRIDE, one into a new destination
    each time. Every MERGE answers OK and its destination counts whole ADD calls of a and b
    (100 i + 101 j: no ADD seen in part), never fewer than the merge before; at the end both
    sources hold every value exactly once, MIN/MAX exact, and a last MERGE counts them all."""
    rng = random.Random(31)
    values = known_values(A_CALLS * A_SIZE + B_CALLS * B_SIZE, seed=31)
    rng.shuffle(values)
    a_vals, b_vals = values[:A_CALLS * A_SIZE], values[A_CALLS * A_SIZE:]
    a_calls = [("td:a", [t for t, _ in a_vals[i:i + A_SIZE]])
               for i in range(0, len(a_vals), A_SIZE)]
    b_calls = [("td:b", [t for t, _ in b_vals[i:i + B_SIZE]])
               for i in range(0, len(b_vals), B_SIZE)]
    calls = a_calls + b_calls
    rng.shuffle(calls)
    writers = 4
    proxies = [proxy() for _ in range(4)]
    with proxies[0].raw() as c:
        assert c.command("TDIGEST.CREATE", "td:a") == b"OK"
        assert c.command("TDIGEST.CREATE", "td:b") == b"OK"
    stop = threading.Event()
    writing = CountDown(writers, stop)
    seen = {0: [], 1: []}

    def writer(t):
        with writing, proxies[t // 2].raw(timeout=120) as conn:
            for key, texts in calls[t::writers]:
                assert conn.command("TDIGEST.ADD", key, *texts) == b"OK"

    def merger(m):
        with proxies[2 + m].raw(timeout=120) as conn:
            n = 0
            while not stop.is_set() or n == 0:
                dest = "td:d" if m == 0 else f"td:e:{n}"
                args = ("OVERRIDE",) if m == 0 else ()
                assert conn.command("TDIGEST.MERGE", dest, 2, "td:a", "td:b", *args) == b"OK"
                obs = info_of(conn, dest)["Observations"]
                parts = decompose(obs)
                assert parts, f"merge {n} into {dest}: {obs} observations"
                if seen[m]:
                    assert all(x >= y for x, y in zip(parts, seen[m][-1])), (seen[m][-1], parts)
                seen[m].append(parts)
                n += 1

    run_threads(lambda t: writer(t) if t < writers else merger(t - writers), writers + 2,
                timeout=240)
    assert all(seen.values()), seen
    total = len(values)
    with proxies[3].raw(timeout=30) as c:
        for key, vals in (("td:a", a_vals), ("td:b", b_vals)):
            info = info_of(c, key)
            assert info["Observations"] == len(vals), (key, info)
            floats = sorted(f for _, f in vals)
            assert as_double(c.command("TDIGEST.MIN", key)) == floats[0]
            assert as_double(c.command("TDIGEST.MAX", key)) == floats[-1]
        assert c.command("TDIGEST.MERGE", "td:d", 2, "td:a", "td:b", "OVERRIDE") == b"OK"
        assert info_of(c, "td:d")["Observations"] == total
        floats = sorted(f for _, f in values)
        assert as_double(c.command("TDIGEST.MIN", "td:d")) == floats[0]
        assert as_double(c.command("TDIGEST.MAX", "td:d")) == floats[-1]


# ---------------------------------------------------------------------------------------------
# TTLs


def upstream_pttls(redis_instance, name):
    """PTTL of every upstream key of the digest `name` (the name, and the keys under its data
    key prefix {name})."""
    r = redis_instance.client()
    keys = [k for k in r.keys("*") if k == name.encode() or k.startswith(b"{%s}" % name.encode())]
    assert name.encode() in keys, keys
    return {k: r.pttl(k) for k in keys}


def test_ttl_survives_adds_and_reads_and_merge_drops_it(proxy, redis_instance):
    proxies = [proxy() for _ in range(PROXIES)]
    values = [t for t, _ in known_values(4 * 700, seed=7)]
    with proxies[0].raw() as c:
        assert c.command("TDIGEST.CREATE", "td:ttl") == b"OK"
        assert c.command("EXPIRE", "td:ttl", 1000) == 1
        assert c.command("TDIGEST.CREATE", "td:src") == b"OK"
        assert c.command("TDIGEST.ADD", "td:src", "1", "2", "3") == b"OK"
        assert c.command("EXPIRE", "td:src", 2000) == 1
    for t, p in enumerate(proxies):
        with p.raw(timeout=30) as c:
            # 700 values: the buffer of a C = 100 digest fills (an ADD that compresses).
            chunk = values[t * 700:(t + 1) * 700]
            for i in range(0, len(chunk), BATCH):
                assert c.command("TDIGEST.ADD", "td:ttl", *chunk[i:i + BATCH]) == b"OK"
            assert c.command("TDIGEST.ADD", "td:ttl", chunk[0]) == b"OK"
            for read in (("QUANTILE", "0.5"), ("CDF", "20"), ("RANK", "20"),
                         ("TRIMMED_MEAN", "0.1", "0.9"), ("BYRANK", "5")):
                reply = c.command(f"TDIGEST.{read[0]}", "td:ttl", *read[1:])
                assert not isinstance(reply, Err), (read, reply)
            assert 900 < c.command("TTL", "td:ttl") <= 1000, f"through proxy {t}"
    with proxies[1].raw() as c:
        info = info_of(c, "td:ttl")
        assert info["Observations"] == 4 * 701 and info["Total compressions"] >= 4, info
    pttls = upstream_pttls(redis_instance, "td:ttl")
    assert all(900_000 < v <= 1_000_000 for v in pttls.values()), pttls

    with proxies[2].raw() as c:
        assert c.command("TDIGEST.MERGE", "td:ttl", 1, "td:src") == b"OK"
        assert c.command("TTL", "td:ttl") == -1
        assert info_of(c, "td:ttl")["Observations"] == 4 * 701 + 3
        assert 1900 < c.command("TTL", "td:src") <= 2000  # compressed in place, TTL kept
        assert c.command("EXPIRE", "td:ttl", 1000) == 1
        assert c.command("TDIGEST.MERGE", "td:ttl", 1, "td:src", "OVERRIDE") == b"OK"
        assert c.command("TTL", "td:ttl") == -1
        assert info_of(c, "td:ttl")["Observations"] == 3
    assert set(upstream_pttls(redis_instance, "td:ttl").values()) == {-1}
    pttls = upstream_pttls(redis_instance, "td:src")
    assert all(1_900_000 < v <= 2_000_000 for v in pttls.values()), pttls
