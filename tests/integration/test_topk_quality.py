"""How well bloomproxy's Top-K finds the heavy hitters of Zipf streams, against RedisBloom's
algorithm (topk_model.py, checked against the recorded vectors by test_topk_model.py) on the same
streams.

Each case: one Zipf stream (exponent s, `updates` draws over `distinct` items, a fixed seed),
sent through a real bloomproxy into one sketch with pipelined TOPK.ADD from four connections at
once (the stream cut into batches of 100 items, dealt round robin to the connections; every third
batch as 100 single-item calls, the others as one 100-item call; the fourth connection sends
TOPK.INCRBY item 1 instead, the same update). The exact counts are known, so:

    precision   = |LIST ∩ true top k| / |LIST|  (true top k: every item counted at least as
                  often as the k-th most frequent one: ties at the boundary are no misses)
    count error = mean over the listed items of |LIST WITHCOUNT count - exact count| / exact count

The model runs the same stream in order with MODEL_SEEDS seeds of Python's random numbers (decay
< 1 draws one Bernoulli(decay^count) trial per step against a foreign fingerprint; RedisBloom
draws glibc's rand() from an unseeded state, so only the statistics can be compared). The proxy
passes when

    precision(proxy)   >= median precision(model) - max(PRECISION_MARGIN, 1 / k)
    count error(proxy) <= median count error(model) * (1 + ERROR_REL_MARGIN) + ERROR_ABS_MARGIN

Why these margins. Measured with the model over 12 seeds, 2 streams per case (these seeds and
+10) and 6 random interleavings of the 4 connections' batches (the order the proxy sees) per
stream: on the narrow case (k 50, width 100) precision stayed within 0.03 of its median (0.82
against 0.85, 0.88 against 0.91; one item is 0.02) and the count error within +24 % of its
median (0.27 against 0.22); on the three wide cases precision never left 1.00 and the count error
never passed 0.0035 (medians 0.0003-0.0029). So PRECISION_MARGIN = 0.08 (four items of 50; for
k = 10 the floor 1 / k allows one miss), ERROR_REL_MARGIN = 0.5 (twice the relative spread seen)
and ERROR_ABS_MARGIN = 0.005 (for the wide cases, where the error is a few in a thousand: still
below what a broken decay gives). They are not so loose the test cannot fail:
test_margins_reject_broken_decay runs the same check on the model with its decay replaced by
garbage (a step decrements with probability 1/2 whatever the count) and with the decay ignored
(decay 1's closed form: every step decrements), and requires both to fail every case: they give
count errors of 0.02-0.04 and 0.08-0.27 on the wide cases (limits 0.006-0.009) and 0.57 and 0.81
on the narrow one (limit about 0.37). A fake proxy answering TOPK.* from the garbage model (a
harness check, not kept) failed all four cases here, with count errors 0.020, 0.036, 0.57, 0.044.

test_one_decay_step_has_probability_decay_to_the_count checks the decay step alone: a binomial
test of one trial against a bucket of count c, for counts inside the 256-entry table and above.

Besides the statistics, what holds for any run of the algorithm: no error reply, every expelled
item is an item of the stream, LIST holds k distinct items of the stream with counts > 0, never
above the exact count (HeavyKeeper only underestimates, unless two items share a fingerprint:
such items are left out of that check), QUERY answers 1 for each listed item, COUNT never above
the exact count either, and INFO is the reserved shape.
"""

import itertools
import random
import statistics
from collections import Counter, deque

import pytest

from bp_helpers import encode_command as cmd
from test_bf_concurrency import run_threads
from topk_model import TopK

MODEL_SEEDS = 5
PRECISION_MARGIN = 0.08
ERROR_REL_MARGIN = 0.5
ERROR_ABS_MARGIN = 0.005

CONNECTIONS = 4
BATCH = 100           # items per batch; every SINGLES_EVERY-th batch goes as single-item calls
SINGLES_EVERY = 3
CHUNK = 8             # batches sent per write; up to 3 chunks in flight per connection

# name: (s, distinct items, updates, stream seed, k, width, depth, decay)
CASES = {
    "s1.0-k10-w200-d4": (1.0, 20000, 100000, 7, 10, 200, 4, 0.9),
    "s1.2-k50-w500-d5": (1.2, 50000, 100000, 7, 50, 500, 5, 0.925),
    "s1.0-k50-w100-d3": (1.0, 20000, 100000, 7, 50, 100, 3, 0.9),
    "s1.2-k10-w50-d3": (1.2, 30000, 150000, 8, 10, 50, 3, 0.925),
}


def zipf_stream(distinct, s, updates, seed):
    """`updates` items drawn with P(rank r) ∝ 1 / r^s over `distinct` items, named by random
    numbers (so that rank and hash are unrelated)."""
    rng = random.Random(seed)
    cum = list(itertools.accumulate(1.0 / r ** s for r in range(1, distinct + 1)))
    names = set()
    while len(names) < distinct:
        names.add(b"z%d" % rng.getrandbits(48))
    names = sorted(names)
    rng.shuffle(names)
    return [names[r] for r in rng.choices(range(distinct), cum_weights=cum, k=updates)]


def true_top(exact, k):
    """Every item counted at least as often as the k-th most frequent item."""
    kth = sorted(exact.values(), reverse=True)[k - 1]
    return {it for it, c in exact.items() if c >= kth}


def quality(listed, exact, k):
    """(precision, mean relative count error) of LIST WITHCOUNT's [(item, count)]."""
    assert listed, "LIST is empty"
    top = true_top(exact, k)
    precision = sum(1 for it, _ in listed if it in top) / len(listed)
    error = statistics.mean(abs(c - exact[it]) / exact[it] for it, c in listed)
    return precision, error


def limits(model_results, k):
    """(least precision, largest count error) the proxy may show, from the model's results."""
    p = statistics.median(r[0] for r in model_results)
    e = statistics.median(r[1] for r in model_results)
    return p - max(PRECISION_MARGIN, 1 / k), e * (1 + ERROR_REL_MARGIN) + ERROR_ABS_MARGIN


def run_model(stream, k, width, depth, decay, seeds, hash_cache, broken=None):
    """[(precision, count error)] of the model on `stream` in order, one per seed. broken:
    "garbage" (a step decrements with probability 1/2 whatever the count) or "nodecay" (every
    step decrements: decay 1's closed form)."""
    exact = Counter(stream)
    out = []
    for seed in seeds:
        m = TopK(k, width, depth, 1.0 if broken == "nodecay" else decay, seed=seed,
                 hash_cache=hash_cache)
        if broken == "garbage":
            m.table = [0.5] * len(m.table)
        for it in stream:
            m.add(it)
        out.append(quality(m.list(), exact, k))
    return out


# ---------------------------------------------------------------------------------------------
# Sending a stream through the proxy


def parse_list_withcount(reply):
    assert isinstance(reply, list) and len(reply) % 2 == 0, reply
    return [(bytes(reply[i]), reply[i + 1]) for i in range(0, len(reply), 2)]


def send_stream(proxies, key, stream, connections=CONNECTIONS, singles_every=SINGLES_EVERY,
                incrby=()):
    """Sends `stream` into `key` through `proxies` (connection t uses proxies[t % len]): batches
    of BATCH items dealt round robin to the connections, pipelined, every `singles_every`-th batch
    as single-item calls (0: never), the others as one call. incrby: the connections that send
    TOPK.INCRBY key item 1 … instead of TOPK.ADD key item … (the same update). Checks every
    reply (an array of the call's length, each element null or an item of the stream). Returns
    the number of expelled items reported."""
    items = set(stream)
    batches = [stream[i:i + BATCH] for i in range(0, len(stream), BATCH)]
    expelled = [0] * connections

    def calls_of(j, batch):
        t = j % connections
        name = "TOPK.INCRBY" if t in incrby else "TOPK.ADD"
        args = (lambda it: (it, 1)) if t in incrby else (lambda it: (it,))
        if singles_every and j % singles_every == 0:
            return [(cmd(name, key, *args(it)), 1) for it in batch]
        return [(cmd(name, key, *itertools.chain.from_iterable(args(it) for it in batch)),
                 len(batch))]

    def check(conn, t, calls):
        for _, n in calls:
            reply = conn.read_reply()
            assert isinstance(reply, list) and len(reply) == n, f"reply {reply!r:.300}"
            for e in reply:
                if e is not None:
                    assert isinstance(e, bytes) and e in items, f"expelled {e!r:.100}"
                    expelled[t] += 1

    def worker(t):
        mine = [(j, batches[j]) for j in range(t, len(batches), connections)]
        proxy = proxies[t % len(proxies)]
        with proxy.raw(timeout=120) as conn:
            pending = deque()
            for c in range(0, len(mine), CHUNK):
                calls = [call for j, b in mine[c:c + CHUNK] for call in calls_of(j, b)]
                conn.send(b"".join(data for data, _ in calls))
                pending.append(calls)
                if len(pending) >= 3:
                    check(conn, t, pending.popleft())
            while pending:
                check(conn, t, pending.popleft())

    run_threads(worker, connections, timeout=300)
    return sum(expelled)


def fp_sharers(stream, hash_cache):
    """Items of the stream sharing their fingerprint with another one."""
    by_fp = Counter(hash_cache[it][0] for it in set(stream))
    return {it for it in set(stream) if by_fp[hash_cache[it][0]] > 1}


# ---------------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("case", list(CASES))
def test_proxy_quality_matches_redisbloom_model(case, proxy):
    s, distinct, updates, stream_seed, k, width, depth, decay = CASES[case]
    stream = zipf_stream(distinct, s, updates, stream_seed)
    exact = Counter(stream)
    p = proxy()
    key = "topk:" + case
    with p.raw(timeout=30) as c:
        assert c.command("TOPK.RESERVE", key, k, width, depth, repr(decay)) == b"OK"
    expelled = send_stream([p], key, stream, incrby={3})

    with p.raw(timeout=30) as c:
        listed = parse_list_withcount(c.command("TOPK.LIST", key, "WITHCOUNT"))
        plain = c.command("TOPK.LIST", key)
        names = [it for it, _ in listed]
        queried = c.command("TOPK.QUERY", key, *names)
        counted = c.command("TOPK.COUNT", key, *names)
        info = c.command("TOPK.INFO", key)

    hash_cache = {}
    model = run_model(stream, k, width, depth, decay, range(MODEL_SEEDS), hash_cache)
    min_precision, max_error = limits(model, k)
    got_precision, got_error = quality(listed, exact, k)
    report = (f"{case}: proxy precision {got_precision:.3f} (least allowed {min_precision:.3f}), "
              f"count error {got_error:.4f} (most allowed {max_error:.4f}); model seeds "
              f"0..{MODEL_SEEDS - 1}: precision "
              + " ".join(f"{r[0]:.2f}" for r in model) + ", count error "
              + " ".join(f"{r[1]:.4f}" for r in model) + f"; {expelled} expelled")
    print(report)

    # What any run of the algorithm satisfies.
    assert info[0::2] == [b"k", b"width", b"depth", b"decay"], info
    assert info[1::2] == [k, width, depth, b"%.17g" % decay], info
    assert len(listed) == k, f"LIST has {len(listed)} entries, k = {k}"
    assert len(set(names)) == k, names
    assert plain == names
    assert all(it in exact for it in names), names
    assert all(c > 0 for _, c in listed), listed
    assert [c for _, c in listed] == sorted((c for _, c in listed), reverse=True), listed
    sharers = fp_sharers(stream, hash_cache)
    over = [(it, c, exact[it]) for it, c in listed if c > exact[it] and it not in sharers]
    assert not over, f"LIST counts above the exact counts: {over}"
    assert queried == [1] * k, queried
    over = [(it, c, exact[it]) for it, c in zip(names, counted)
            if c > exact[it] and it not in sharers]
    assert not over, f"COUNT above the exact counts: {over}"

    # Against RedisBloom's algorithm.
    assert got_precision >= min_precision, report
    assert got_error <= max_error, report


@pytest.mark.parametrize("case", list(CASES))
def test_margins_reject_broken_decay(case):
    """The margins can fail: the model with a garbage decay (P = 1/2 per step) and with no decay
    at all (every step decrements) must fall outside them on every case, while the model itself
    with other seeds stays inside."""
    s, distinct, updates, stream_seed, k, width, depth, decay = CASES[case]
    stream = zipf_stream(distinct, s, updates, stream_seed)
    hash_cache = {}
    min_precision, max_error = limits(
        run_model(stream, k, width, depth, decay, range(MODEL_SEEDS), hash_cache), k)
    for p, e in run_model(stream, k, width, depth, decay, [101, 102], hash_cache):
        assert p >= min_precision and e <= max_error, (case, p, e, min_precision, max_error)
    for broken in ("garbage", "nodecay"):
        (p, e), = run_model(stream, k, width, depth, decay, [201], hash_cache, broken=broken)
        print(f"{case}: {broken}: precision {p:.3f} (least allowed {min_precision:.3f}), "
              f"count error {e:.4f} (most allowed {max_error:.4f})")
        assert p < min_precision or e > max_error, (case, broken, p, e)


# (decay, count c): P(c) = decay^c, from the table below 256 and composed above it
STEP_POINTS = [(0.9, 1), (0.9, 6), (0.5, 2), (0.925, 20), (0.999, 300), (0.998, 700)]
STEP_KEYS = 1000


def test_one_decay_step_has_probability_decay_to_the_count(bp):
    """The decay step itself: on a one-bucket sketch (k 1, width 1, depth 1) holding item a with
    count c, one TOPK.ADD of another item b makes one trial, which lowers a's bucket to c - 1
    with probability decay^c (RedisBloom: rand() / RAND_MAX < T[c], T composed for c >= 256);
    COUNT a then answers 0 (a is in the heap with count c = heapMin, and COUNT leaves out its
    buckets below heapMin), else c; for c = 1, b takes the bucket over and expels a. Over
    STEP_KEYS sketches per point the share of lowered buckets must be within 4.5 standard
    deviations of decay^c (a false alarm about once in 10^5 runs per point; a step drawn with
    the wrong probability, e.g. decay^(c-1), or one that always or never decrements, fails)."""
    problems, report = [], []
    with bp.raw(timeout=60) as c:
        for p_i, (decay, count) in enumerate(STEP_POINTS):
            keys = [b"step:%d:%d" % (p_i, i) for i in range(STEP_KEYS)]
            c.send(b"".join(cmd("TOPK.RESERVE", key, 1, 1, 1, repr(decay)) + cmd(
                "TOPK.INCRBY", key, "a", count) + cmd("TOPK.ADD", key, "b") + cmd(
                "TOPK.COUNT", key, "a") for key in keys))
            lowered = 0
            for _ in keys:
                assert c.read_reply() == b"OK"
                assert c.read_reply() == [None]
                added, got = c.read_reply(), c.read_reply()
                if count == 1:
                    # Lowered to 0: b takes the bucket over with the step left (1), and its
                    # best 1 >= heapMin 1 expels a from the heap.
                    assert (added, got) in (([None], [1]), ([b"a"], [0])), (added, got)
                    lowered += got == [0]
                    continue
                assert added == [None], added  # b's best is 0 < heapMin: no heap change
                # a is in the heap with count c = heapMin: COUNT leaves out a bucket below it.
                assert got in ([count], [0]), got
                lowered += got == [0]
            p = decay ** count
            sd = (p * (1 - p) / STEP_KEYS) ** 0.5
            share = lowered / STEP_KEYS
            report.append(f"decay {decay} count {count}: {share:.3f} lowered, decay^count "
                          f"{p:.3f} ± {sd:.3f}")
            if abs(share - p) > 4.5 * sd:
                problems.append(report[-1])
    print("\n".join(report))
    assert not problems, "\n".join(problems)
