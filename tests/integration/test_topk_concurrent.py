"""Many writers, one Top-K sketch: four bloomproxy processes in front of one redis-server, three
client connections each, all sending pipelined TOPK.ADD (several items per call) and TOPK.INCRBY
(several pairs per call) into the same key at once. Each command is one atomic read-modify-write
of the buckets and the heap (spec: "Emulating it on plain Redis"); a lost or doubled update shows
as a wrong count.

1. No shared bucket (test_collision_free_totals_are_exact): the items are picked so that no two
   occupy the same bucket in any row (MurmurHash2 checked before the run) nor share a
   fingerprint. Then no step ever meets a foreign fingerprint, nothing is random even with decay
   < 1, and whatever the interleaving: every bucket holds its item's exact total, so COUNT is the
   exact total of every item; heap counts only grow, so the heap stays a true min-heap whose
   members are always the items with the largest running totals (an item outside the heap is
   never above its minimum), and with distinct totals LIST WITHCOUNT is exactly the true top k
   with exact counts.

2. Colliding items under decay 1 and 0.9 (test_colliding_heavy_counts_are_exact): a narrow sketch
   (k 4, width 16, depth 3) where four heavy items with pairwise distinct buckets, seeded before
   the run with 100000, 200000, 300000 and 400000 (so that every heap comparison between them
   comes out the same way all along and the lightest stays in slot 0), are hit during the run by
   240 light items colliding with them and with each other, and get more adds of their own. The
   light items' buckets change hands in an order-dependent way, but a heavy bucket is far too
   large ever to be taken over, so it ends at
       decay 1:    the heavy item's total - the light increments that reached it in that row
                   (every foreign step decrements: the closed form n < c: c -= n)
       decay 0.9:  the heavy item's total (P = 0.9^c underflows to exactly 0 for c >= ~7100: no
                   foreign step ever decrements it)
   whatever the order. COUNT of a heavy item is the largest of those over its rows, and after one
   INCRBY of 0 per heavy item (which sets its heap count to that largest bucket when it is at
   least slot 0's count) LIST WITHCOUNT gives the heavy items those counts. The one exception
   is RedisBloom's own: under decay 1 the lightest heavy item, in slot 0, can keep a stale higher
   heap count (its buckets fell below it after its last update, and an update below heapMin is
   dropped), and COUNT then leaves out its lower buckets and answers 0; the test allows exactly
   that. For every item: no error reply, expelled items only known ones, LIST and COUNT never
   above the exact total, light items never in the heap, INFO unchanged through every proxy.
"""

import itertools
import random
from collections import Counter, deque

import pytest

from bp_helpers import encode_command as cmd
from test_bf_concurrency import run_threads
from topk_model import bucket_index, fingerprint

PROXIES = 4
CONNECTIONS_PER_PROXY = 3
CONNECTIONS = PROXIES * CONNECTIONS_PER_PROXY
MAX_ITEMS_PER_CALL = 12
CALLS_PER_WRITE = 40


def lonely_items(count, width, depth, prefix, rng, taken=None):
    """`count` items no two of which share a bucket in any row of a width x depth sketch, nor a
    fingerprint (nor with the columns / fingerprints already in `taken`, which is updated)."""
    taken = taken if taken is not None else {"cols": [set() for _ in range(depth)], "fps": set()}
    out = []
    while len(out) < count:
        item = b"%s:%d" % (prefix, rng.getrandbits(40))
        cols = [bucket_index(item, width, r) for r in range(depth)]
        fp = fingerprint(item)
        if fp in taken["fps"] or any(c in taken["cols"][r] for r, c in enumerate(cols)):
            continue
        taken["fps"].add(fp)
        for r, c in enumerate(cols):
            taken["cols"][r].add(c)
        out.append(item)
    return out, taken


def workload(totals, rng, connections=CONNECTIONS):
    """Splits each item's total into TOPK.ADD occurrences (1 each) and TOPK.INCRBY parts (2..9),
    deals them at random to `connections` connections, and groups each connection's shuffled
    operations into calls: [[(kind, [(item, n)])]] per connection."""
    per_conn = [[] for _ in range(connections)]
    for item, total in totals.items():
        left = total
        while left:
            n = 1 if rng.random() < 0.5 else min(left, rng.randint(2, 9))
            per_conn[rng.randrange(connections)].append((item, n))
            left -= n
    out = []
    for ops in per_conn:
        rng.shuffle(ops)
        calls, i = [], 0
        while i < len(ops):
            size = rng.randint(1, MAX_ITEMS_PER_CALL)
            group = ops[i:i + size]
            i += size
            adds, incrs = [], []
            for it, n in group:
                (adds if n == 1 and rng.random() < 0.8 else incrs).append((it, n))
            if adds:
                calls.append(("ADD", adds))
            if incrs:
                calls.append(("INCRBY", incrs))
        out.append(calls)
    sent = Counter()
    for calls in out:
        for _, ops in calls:
            for it, n in ops:
                sent[it] += n
    assert sent == Counter(totals)
    return out


def encode_call(key, kind, ops):
    if kind == "ADD":
        return cmd("TOPK.ADD", key, *(it for it, _ in ops))
    return cmd("TOPK.INCRBY", key, *itertools.chain.from_iterable((it, n) for it, n in ops))


def run_workload(proxies, key, per_conn, known):
    """Sends every connection's calls at once, pipelined (CALLS_PER_WRITE calls per write, up to
    three writes in flight); checks every reply: an array of the call's length whose elements
    are null or a known item."""
    def check(conn, calls):
        for _, ops in calls:
            reply = conn.read_reply()
            assert isinstance(reply, list) and len(reply) == len(ops), f"reply {reply!r:.300}"
            bad = [e for e in reply if e is not None and e not in known]
            assert not bad, f"expelled unknown items {bad[:5]!r}"

    def worker(t):
        calls = per_conn[t]
        with proxies[t % len(proxies)].raw(timeout=120) as conn:
            pending = deque()
            for c in range(0, len(calls), CALLS_PER_WRITE):
                chunk = calls[c:c + CALLS_PER_WRITE]
                conn.send(b"".join(encode_call(key, kind, ops) for kind, ops in chunk))
                pending.append(chunk)
                if len(pending) >= 3:
                    check(conn, pending.popleft())
            while pending:
                check(conn, pending.popleft())

    run_threads(worker, len(per_conn), timeout=300)


def info_of(conn, key):
    reply = conn.command("TOPK.INFO", key)
    return dict(zip((bytes(x) for x in reply[0::2]), reply[1::2]))


def listed_of(conn, key):
    reply = conn.command("TOPK.LIST", key, "WITHCOUNT")
    assert isinstance(reply, list) and len(reply) % 2 == 0, reply
    return [(bytes(reply[i]), reply[i + 1]) for i in range(0, len(reply), 2)]


@pytest.mark.parametrize("decay", ["0.9", "1"])
def test_collision_free_totals_are_exact(proxy, decay):
    k, width, depth, n_items = 20, 4096, 5, 240
    rng = random.Random(20261129)
    items, _ = lonely_items(n_items, width, depth, b"lone", rng)
    # Distinct totals, 1 .. 2 * n_items - 1, in a random order over the items.
    values = list(range(1, 2 * n_items, 2))
    rng.shuffle(values)
    totals = dict(zip(items, values))
    proxies = [proxy() for _ in range(PROXIES)]
    key = "topk:many"
    with proxies[0].raw() as c:
        assert c.command("TOPK.RESERVE", key, k, width, depth, decay) == b"OK"
        info_before = info_of(c, key)
    run_workload(proxies, key, workload(totals, rng), set(items))

    top = sorted(totals.items(), key=lambda kv: -kv[1])[:k]
    for t, p in enumerate(proxies):
        with p.raw(timeout=30) as c:
            assert info_of(c, key) == info_before
            assert listed_of(c, key) == top, f"through proxy {t}"
            counts = c.command("TOPK.COUNT", key, *items)
            wrong = [(it, got, totals[it]) for it, got in zip(items, counts) if got != totals[it]]
            assert not wrong, f"COUNT through proxy {t} (item, got, exact): {wrong[:10]}"
            assert c.command("TOPK.QUERY", key, *items) == [int(it in dict(top)) for it in items]


@pytest.mark.parametrize("decay", ["1", "0.9"])
def test_colliding_heavy_counts_are_exact(proxy, decay):
    k, width, depth = 4, 16, 3
    rng = random.Random(1129 + len(decay))
    heavies, _ = lonely_items(k, width, depth, b"heavy", rng)
    # Heavy item i starts at (i + 1) * 100000 (sent first, alone): their counts stay 100000
    # apart, so every comparison between them in the heap comes out the same way all along and
    # heavies[0] stays in slot 0.
    seeds = {h: (i + 1) * 100000 for i, h in enumerate(heavies)}
    heavy_fps = {fingerprint(h) for h in heavies}
    lights = []
    while len(lights) < 240:
        it = b"light:%d" % rng.getrandbits(40)
        if fingerprint(it) not in heavy_fps and it not in lights:
            lights.append(it)
    totals = {it: rng.randint(1, 40) for it in lights}
    totals.update({h: 300 * (i + 1) for i, h in enumerate(heavies)})  # their adds in the run
    exact = {it: totals[it] + seeds.get(it, 0) for it in totals}

    # What the light items take off each heavy bucket under decay 1, row by row.
    cols = {it: [bucket_index(it, width, r) for r in range(depth)] for it in exact}
    foreign = {h: [sum(totals[li] for li in lights if cols[li][r] == cols[h][r])
                   for r in range(depth)] for h in heavies}
    assert all(min(f) > 0 for f in foreign.values()), "a heavy bucket no light item reaches"
    assert max(max(f) for f in foreign.values()) < 100000 // 4
    if decay == "1":
        want = {h: exact[h] - min(foreign[h]) for h in heavies}
    else:
        want = dict((h, exact[h]) for h in heavies)
    root = heavies[0]

    proxies = [proxy() for _ in range(PROXIES)]
    key = "topk:crowd"
    with proxies[0].raw() as c:
        assert c.command("TOPK.RESERVE", key, k, width, depth, decay) == b"OK"
        info_before = info_of(c, key)
        pairs = [(h, 100000) for h in heavies for _ in range(seeds[h] // 100000)]
        reply = c.command("TOPK.INCRBY", key, *itertools.chain.from_iterable(pairs))
        assert reply == [None] * len(pairs), reply
    run_workload(proxies, key, workload(totals, rng), set(exact))

    with proxies[1].raw(timeout=30) as c:
        assert info_of(c, key) == info_before
        names = list(exact)
        counts = dict(zip(names, c.command("TOPK.COUNT", key, *names)))
        over = [(it, counts[it], exact[it]) for it in names if counts[it] > exact[it]]
        assert not over, f"COUNT above the exact total: {over[:10]}"
        # heavies[0]'s heap count (slot 0's: heapMin) may be a stale higher value under decay 1,
        # and COUNT then leaves out its own lower buckets: 0.
        wrong = [(h, counts[h], want[h]) for h in heavies
                 if counts[h] != want[h] and not (h == root and decay == "1" and counts[h] == 0)]
        assert not wrong, f"heavy COUNTs (item, got, exact): {wrong}"
        listed = listed_of(c, key)
        assert [it for it, _ in listed] == heavies[::-1], listed
        assert all(cnt <= exact[it] for it, cnt in listed), listed
        # One INCRBY of 0 per heavy item sets its heap count to its largest bucket; only
        # heavies[0] keeps a stale higher count when its buckets fell below it (decay 1).
        assert c.command("TOPK.INCRBY", key, *itertools.chain.from_iterable(
            (h, 0) for h in heavies)) == [None] * k
        listed = dict(listed_of(c, key))
        assert {h: listed.get(h) for h in heavies[1:]} == {h: want[h] for h in heavies[1:]}
        assert want[root] <= listed[root] <= exact[root], (listed[root], want[root], exact[root])
        if decay != "1":
            assert listed[root] == want[root]
        assert c.command("TOPK.COUNT", key, root) == [
            want[root] if listed[root] == want[root] else 0]
        assert c.command("TOPK.QUERY", key, *names) == [int(it in want) for it in names]
    for t, p in enumerate(proxies):
        with p.raw() as c:
            assert info_of(c, key) == info_before, f"INFO through proxy {t}"
