"""Windowed Bloom filters: the four guarantees of docs/windowed-filters.md, shown on a real
redis-server through several proxies, one of them with its clocks minutes off (libfaketime).

A windowed filter (`BF.RESERVE key error capacity WINDOW W SLOTS g`) keeps an item added at
time t with lifetime L (W, or `BF.INSERT ... TTL L`) in slot e = the first with
SlotEnd(e) = ceil(e·W/(g−1)) >= t + L, whose keys carry PEXPIREAT SlotEnd(e) on the upstream's
clock; s = W/(g−1). Checked here:

1. no miss inside the lifetime: every item answers 1 through the OTHER proxy when that lookup's
   reply came back before t + L (t = when the add was sent); half the lookups are sent 2-25 ms
   before t + L, half 25-250 ms before (a machine loaded by sanitizers still gets enough back in
   time; the test fails, never passes vacuously, if fewer than 30 % do, or 5 % of the close ones);
2. forgotten one slot after: looked up from t' + L + s + 3 ms on (t' = when the add's reply
   came back, the latest upstream time its slot can have been decided at; the 3 ms are the slot
   end's rounding up to a whole ms, Redis keeping a key through the ms of its PEXPIREAT, and
   the test's ms), an item answers 1 no more often than a never-added item may: at most the
   binomial bound of the error rate (a one-in-a-million tail), not exactly never;
3. the upstream's keys for the filter (SCAN and MEMORY USAGE straight on redis-server: the proxy
   hides them) stay at most g slots plus the name and its marker, flat over 20 windows, and
   none is left once the items have expired;
4. four proxies adding disjoint items at once lose none, and BF.CARD counts each once.

Plus the false positives of lookups over 100,000 never-added items while items are added at
the reserved rate and at 5 times it (slots scaling).

The test's clock is the upstream's: same machine, both CLOCK_REALTIME (checked against TIME).
The proxy under libfaketime is started with FAKETIME "+7m" or "-5m" (its wall clock and its
CLOCK_MONOTONIC alike, checked from its log), so it can only get the slots right from the
upstream's TIME. Without faketime installed these tests fail (conftest `faketime_proxy`).
"""

import heapq
import math
import random
import re
import threading
import time

import pytest

from bp_helpers import RawConn, encode_command as cmd, scan_all
from test_bf_concurrency import run_threads

ERROR = 0.01
STEP_MS = 4            # one BF.ADD and one BF.INSERT ... TTL every STEP_MS, each through one proxy
BEFORE_MS = (2, 25)    # "just before t + L": a lookup sent this many ms (at random) before it
FAR_BEFORE_MS = (25, 250)  # ... for half the items, so that a loaded machine (CI under
                           # sanitizers) still gets most lookups back before t + L
AFTER_MARGIN_MS = 3    # "just after t' + L + s" (see the module's docstring)


def now_ms():
    return time.time() * 1000.0


def binomial_limit(n, p, tail=1e-6):
    """The least k with P(Bin(n, p) > k) <= tail: how many false positives n independent lookups
    at rate p may give without the rate being over p (a one-in-a-million chance)."""
    if n == 0:
        return 0
    logq, ratio = math.log1p(-p), math.log(p) - math.log1p(-p)
    logs, lp, top = [], n * logq, n * logq
    for k in range(n + 1):
        logs.append(lp)
        top = max(top, lp)
        if k == n or (k > n * p and lp < top - 60):
            break
        lp += math.log(n - k) - math.log(k + 1) + ratio
    probs = [math.exp(x - top) for x in logs]
    total, acc = sum(probs), 0.0
    for k, pr in enumerate(probs):
        acc += pr
        if 1 - acc / total <= tail:
            return k
    return n


def assert_same_clock(redis_server):
    """The upstream's TIME is the test's time.time() (same machine), within 50 ms."""
    with RawConn(redis_server.port) as c:
        t0 = now_ms()
        sec, usec = c.command("TIME")
        t1 = now_ms()
    upstream = int(sec) * 1000 + int(usec) / 1000
    assert t0 - 50 <= upstream <= t1 + 50, \
        f"the upstream's clock is {upstream - t1:+.0f} ms from the test's: these tests need both"


def prefix_of(name):
    """The data-key prefix of a name without braces (docs/bloom-filters.md, key layout)."""
    return "{%s}" % name


def filter_keys(redis_server, name):
    """{"marker": bool, "slots": {e: [keys]}, "other": [keys]} of filter `name` (no braces),
    read straight from redis-server: its marker, its slots' names and their own keys (every
    key of slot e starts with P:bf:<id>:w<e>), and anything else under its prefix."""
    prefix = prefix_of(name)
    slot_re = re.compile(re.escape(prefix).encode() + rb":bf:([0-9a-f]{16}):w(\d+)(?::|$)")
    marker = f"{prefix}:bf:m:{name}".encode()
    out = {"marker": False, "slots": {}, "other": [], "ids": set()}
    with RawConn(redis_server.port, timeout=10) as c:
        for k in scan_all(c, "MATCH", prefix.replace("{", "\\{").replace("}", "\\}") + "*",
                          "COUNT", 1000):
            m = slot_re.match(k)
            if k == marker:
                out["marker"] = True
            elif m:
                out["ids"].add(m.group(1))
                out["slots"].setdefault(int(m.group(2)), []).append(k)
            else:
                out["other"].append(k)
    return out


def slot_end(e, window, g):
    """SlotEnd(e) = ceil(e·W/(g−1)) (filters/bloom/window/window_slots.h)."""
    return -((-e * window) // (g - 1))


def describe_slot(name, e, keys, at_ms, window, g):
    """Slot e's keys seen at `at_ms`, for a failure message: whether its name (hash) is among
    them, and where `at_ms` is from its end."""
    slot_name = f"{prefix_of(name)}:bf:".encode()
    has_name = any(k.endswith(b":w%d" % e) and k.startswith(slot_name) for k in keys)
    return (f"slot {e} ({len(keys)} keys{'' if has_name else ', its name gone'}, "
            f"{at_ms - slot_end(e, window, g):+.0f} ms from its end)")


def memory_of(redis_server, keys):
    """MEMORY USAGE ... SAMPLES 0 of each key, pipelined; {key: bytes} (a key gone meanwhile:
    0)."""
    if not keys:
        return {}
    with RawConn(redis_server.port, timeout=10) as c:
        c.send(b"".join(cmd("MEMORY", "USAGE", k, "SAMPLES", "0") for k in keys))
        return {k: c.read_reply() or 0 for k in keys}


def info_map(conn, name):
    reply = conn.command("BF.INFO", name)
    assert isinstance(reply, list) and len(reply) % 2 == 0, f"BF.INFO {name}: {reply!r}"
    return {bytes(reply[i]): reply[i + 1] for i in range(0, len(reply), 2)}


# ---------------------------------------------------------------------------------------------
# Guarantees 1 and 2: steady adds through two proxies, each item checked through the other one
# just before t + L and just after t' + L + s


class Item:
    __slots__ = ("name", "via", "life", "sent", "replied", "before", "strict", "checked_at",
                 "after")

    def __init__(self, name, via, life):
        self.name, self.via, self.life = name, via, life
        self.before = self.strict = self.checked_at = self.after = None


def lookups(conn, key, items):
    """One BF.MEXISTS of the items' names on `conn`: (replies, sent at, reply back at)."""
    t0 = now_ms()
    reply = conn.command("BF.MEXISTS", key, *[it.name for it in items])
    t1 = now_ms()
    assert isinstance(reply, list) and len(reply) == len(items) and set(reply) <= {0, 1}, \
        f"BF.MEXISTS {key} ({len(items)} items) answered {reply!r:.300}"
    return reply, t0, t1


def add_and_check(conns, key, window, g, duration_ms, rng):
    """For duration_ms: every STEP_MS a BF.ADD (lifetime W) through one proxy and a
    BF.INSERT ... TTL L (L random in [W/10, W], or W) through the other, alternating; each
    item looked up through the other proxy just before t + L and after t' + L + s (lookups
    due at the same moment go in one BF.MEXISTS). Returns the items."""
    s = window / (g - 1)
    items, heap = [], []
    start = now_ms()
    step = 0
    while True:
        t = now_ms()
        next_add = start + step * STEP_MS
        adding = next_add < start + duration_ms
        if adding and t >= next_add:
            for which in (0, 1):
                via = (step + which) % 2
                it = Item(f"{key}:{step}:{which}:{rng.getrandbits(32):08x}", via,
                          window if which == 0 or rng.random() < 0.1
                          else rng.randint(window // 10, window))
                args = (("BF.ADD", key, it.name) if which == 0 else
                        ("BF.INSERT", key, "TTL", it.life, "ITEMS", it.name))
                it.sent = now_ms()
                reply = conns[via].command(*args)
                it.replied = now_ms()
                assert reply in (0, 1, [0], [1]), f"{args} answered {reply!r}"
                items.append(it)
                idx = len(items) - 1
                ahead = rng.uniform(*(BEFORE_MS if rng.random() < 0.5 else FAR_BEFORE_MS))
                before = max(it.replied, it.sent + it.life - ahead)
                heapq.heappush(heap, (before, idx, "before"))
                heapq.heappush(heap, (it.replied + it.life + s + AFTER_MARGIN_MS, idx, "after"))
            step += 1
            continue
        due = []
        while heap and heap[0][0] <= t:
            due.append(heapq.heappop(heap))
        groups = {}
        for _, idx, kind in due:
            groups.setdefault((kind, 1 - items[idx].via), []).append(items[idx])
        for (kind, via), group in groups.items():
            reply, t0, t1 = lookups(conns[via], key, group)
            for it, r in zip(group, reply):
                if kind == "before":
                    # The lookup ran on the upstream before its reply came back: at or before
                    # t + L if t1 is.
                    it.before, it.strict, it.checked_at = r, t1 <= it.sent + it.life, t1
                else:
                    assert t0 >= it.replied + it.life + s, "scheduled too early"
                    it.after = r
        if not adding and not heap:
            return items
        if adding and heap:
            wake = min(next_add, heap[0][0])
        elif heap:
            wake = heap[0][0]
        pause = (wake - now_ms()) / 1000.0
        if pause > 0:
            time.sleep(min(pause, 0.05))


GUARANTEE_CASES = [  # g, W (ms), the second proxy's clock
    (2, 2000, "+7m"),  # s = W: forgotten after 2W
    (3, 2001, "-5m"),  # s = 1000.5 ms: slot ends rounded up to whole ms
    (5, 2999, "+7m"),  # s = 749.75 ms
]


@pytest.mark.parametrize("g,window,offset", GUARANTEE_CASES,
                         ids=[f"g{g}-W{w}-clock{o}" for g, w, o in GUARANTEE_CASES])
def test_found_for_the_lifetime_and_forgotten_one_slot_after(g, window, offset, redis_instance,
                                                              proxy, faketime_proxy):
    """Guarantees 1 and 2, for three windows of steady adds (about 1,500 items per window)
    through a proxy on the machine's clock and one `offset` off, each item looked up through
    the other; then, everything expired, the filter is empty and only its name and marker are
    left upstream."""
    assert_same_clock(redis_instance)
    plain, skewed = proxy(), faketime_proxy(offset)
    key = f"win{g}"
    per_window = 2 * window // STEP_MS
    rng = random.Random(f"{g}-{window}")
    with plain.raw(timeout=10) as a, skewed.raw(timeout=10) as b:
        assert a.command("BF.RESERVE", key, str(ERROR), per_window, "WINDOW", window,
                         "SLOTS", g) == b"OK"
        items = add_and_check([a, b], key, window, g, 3 * window, rng)

        strict = [it for it in items if it.strict]
        missed = [it for it in strict if it.before != 1]
        assert not missed, (
            f"{len(missed)} of {len(strict)} items not found before t + L (guarantee 1); first: "
            + "; ".join(f"{it.name} added via proxy {it.via} life {it.life} ms, looked up "
                        f"{it.sent + it.life - it.checked_at:.1f} ms before t + L"
                        for it in missed[:5]))
        near = [it for it in strict if it.sent + it.life - it.checked_at <= BEFORE_MS[1]]
        assert len(strict) >= 0.3 * len(items) and len(near) >= 0.05 * len(items), (
            f"only {len(strict)} of {len(items)} lookups came back before t + L ({len(near)} "
            f"within {BEFORE_MS[1]} ms of it): the machine was too slow to show guarantee 1")
        late = sum(it.after for it in items)
        limit = binomial_limit(len(items), ERROR)
        assert late <= limit, (
            f"{late} of {len(items)} items still found after t' + L + s (guarantee 2 allows "
            f"false positives only: at most {limit} at {ERROR})")
        assert all(it.before is not None and it.after is not None for it in items)

        # Every slot has ended: nothing left upstream but the name and its marker.
        last = max(it.replied for it in items) + window * g / (g - 1) + AFTER_MARGIN_MS
        time.sleep(max(0.0, (last - now_ms()) / 1000))
        assert a.command("BF.CARD", key) == 0 and b.command("BF.CARD", key) == 0
        left = filter_keys(redis_instance, key)
        assert left["marker"] and not left["slots"] and not left["other"], left
        assert a.command("EXISTS", key) == 1
    print(f"g={g} W={window}: {len(items)} items, {len(strict)} looked up before t + L "
          f"({len(near)} within {BEFORE_MS[1]} ms of it), "
          f"{late} found after t' + L + s (limit {limit})")


# ---------------------------------------------------------------------------------------------
# Guarantee 3: the upstream's keys and memory for a filter stay flat


class Adder:
    """A thread adding fresh items to `key` through `port` at `per_ms` items per ms (BF.MADD
    every `every_ms`), until stop(). Keeps (sent, replied, first item index, count) per batch."""

    def __init__(self, port, key, per_ms, every_ms=10, tag="i"):
        self.port, self.key, self.per_ms, self.every_ms, self.tag = port, key, per_ms, every_ms, tag
        self.batches, self.problems = [], []
        self.added = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def item(self, i):
        return f"{self.tag}:{i}"

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "adder still running"
        assert not self.problems, self.problems[:3]

    def _run(self):
        try:
            with RawConn(self.port, timeout=30) as c:
                start = now_ms()
                while not self._stop.is_set():
                    due = int((now_ms() - start) * self.per_ms)
                    while self.added < due:
                        n = min(due - self.added, 2000)
                        sent = now_ms()
                        reply = c.command("BF.MADD", self.key,
                                          *[self.item(self.added + j) for j in range(n)])
                        if not isinstance(reply, list) or len(reply) != n:
                            self.problems.append(f"BF.MADD {self.key}: {reply!r:.200}")
                            return
                        self.batches.append((sent, now_ms(), self.added, n))
                        self.added += n
                    time.sleep(self.every_ms / 1000)
        except Exception as exc:  # noqa: BLE001 - reported by stop()
            self.problems.append(repr(exc))


def test_keys_and_memory_flat_over_20_windows(redis_instance, proxy):
    """W = 600 ms, g = 3 (s = 300 ms), items added at 80 % of the reserved rate for 20 windows:
    sampled every ~50 ms straight on redis-server, the filter's keys are its name, its marker
    and at most g slots (every slot at least g - 1 once the window is full), and the memory of
    its keys is as high in the last windows as in the first full ones, no higher. Once adds stop,
    after W + s nothing is left but the name and the marker, and BF.CARD is 0."""
    window, g, capacity = 600, 3, 3000
    s = window // (g - 1)
    p = proxy()
    key = "flat"
    with p.raw() as c:
        assert c.command("BF.RESERVE", key, str(ERROR), capacity, "WINDOW", window,
                         "SLOTS", g) == b"OK"
    adder = Adder(p.port, key, 0.8 * capacity / window).start()
    start, samples = now_ms(), []
    try:
        while now_ms() < start + 20 * window:
            t = now_ms()
            keys = filter_keys(redis_instance, key)
            mem = memory_of(redis_instance, [k for ks in keys["slots"].values() for k in ks])
            per_slot = {e: sum(mem.get(k, 0) for k in ks) for e, ks in keys["slots"].items()}
            samples.append((t - start, keys, per_slot))
            time.sleep(0.05)
    finally:
        adder.stop()
    assert adder.added > 15 * capacity * 0.8, f"only {adder.added} items added"
    for t, keys, _ in samples:
        assert len(keys["slots"]) <= g, (
            f"{len(keys['slots'])} slots' keys at once, {t:.0f} ms into the run: "
            + "; ".join(describe_slot(key, e, ks, start + t, window, g)
                        for e, ks in sorted(keys["slots"].items())))
        assert not keys["other"], f"keys that belong to no slot at {t:.0f} ms: {keys['other']}"
        assert len(keys["ids"]) <= 1, keys["ids"]
    steady = [(t, k, m) for t, k, m in samples if t >= window + s + 50]
    assert max(len(k["slots"]) for _, k, _ in steady) == g
    full = sum(1 for _, k, _ in steady if len(k["slots"]) >= g - 1)
    assert full >= 0.9 * len(steady), f"only {full} of {len(steady)} samples with >= {g - 1} slots"

    def peak(lo, hi, what):
        return max(what(k, m) for t, k, m in steady if lo * window <= t < hi * window)

    def nkeys(k, _):
        return sum(len(v) for v in k["slots"].values())

    def mem(_, m):
        return sum(m.values())

    early_keys, late_keys = peak(2, 10, nkeys), peak(10, 20, nkeys)
    early_mem, late_mem = peak(2, 10, mem), peak(10, 20, mem)
    assert late_keys <= early_keys, f"the slots' keys grew: {early_keys} -> {late_keys}"
    assert late_mem <= 1.2 * early_mem, f"the slots' memory grew: {early_mem} -> {late_mem} bytes"
    print(f"{len(samples)} samples, {adder.added} items: slot keys {early_keys} -> {late_keys}, "
          f"memory {early_mem} -> {late_mem} bytes")

    last = max(r for _, r, _, _ in adder.batches)
    time.sleep(max(0.0, (last + window + s + AFTER_MARGIN_MS - now_ms()) / 1000))
    left = filter_keys(redis_instance, key)
    assert left["marker"] and not left["slots"] and not left["other"], left
    with p.raw() as c:
        assert c.command("BF.CARD", key) == 0
        assert c.command("BF.EXISTS", key, adder.item(adder.added - 1)) == 0
        assert c.command("EXISTS", key) == 1


# ---------------------------------------------------------------------------------------------
# False positives while the filter is in use, at the reserved rate and at 5 times it


def test_false_positives_at_the_reserved_rate_and_at_5x(proxy):
    """Two filters (W = 3 s, g = 3, capacity 2,000 per window at 1 %), one fed at the reserved
    rate and one at 5 times it, through one proxy; once a window and a slot have passed (all g
    slots in use), 100,000 never-added items looked up in each through another proxy (BF.MEXISTS
    of 1,000) while the adds go on: found at most as often as the error rate allows. The 5x
    filter's slots have scaled; recent items are all found in both."""
    window, g, capacity = 3000, 3, 2000
    a, b = proxy(), proxy()
    loads = {1: "fp1", 5: "fp5"}
    with a.raw() as c:
        for key in loads.values():
            assert c.command("BF.RESERVE", key, str(ERROR), capacity, "WINDOW", window,
                             "SLOTS", g) == b"OK"
    adders = {load: Adder(a.port, key, load * capacity / window, every_ms=20, tag=f"in{load}")
              for load, key in loads.items()}
    for ad in adders.values():
        ad.start()
    found = {}
    try:
        warm = window + window / (g - 1) + 100
        time.sleep(warm / 1000)
        for load, ad in adders.items():
            want = load * capacity * warm / window
            assert ad.added >= 0.9 * want, \
                f"the {load}x adder added {ad.added} items of {want:.0f}: the rate is not reached"
        t0 = time.monotonic()
        with b.raw(timeout=30) as c:
            for load, key in loads.items():
                ones = 0
                for chunk in range(100):
                    names = [f"never:{load}:{chunk * 1000 + j}" for j in range(1000)]
                    reply = c.command("BF.MEXISTS", key, *names)
                    assert isinstance(reply, list) and len(reply) == 1000, f"{reply!r:.200}"
                    ones += sum(reply)
                found[load] = ones
                # The items of the last few batches, added well within their lifetime: found.
                ad = adders[load]
                assert not ad.problems, f"the {load}x adder stopped: {ad.problems[:3]}"
                # Recent: sent less than half a window ago (under sanitizers one BF.MADD of
                # 2,000 can take a second, so "the last 5 batches" may span more than W).
                sent = now_ms()
                recent = [b for b in ad.batches[-5:] if b[0] > sent - window / 2]
                assert recent, f"the {load}x adder sent nothing in the last {window / 2} ms"
                names = [ad.item(first + j) for _, _, first, n in recent for j in range(n)]
                got = c.command("BF.MEXISTS", key, *names)
                if now_ms() < min(b[0] for b in recent) + window:  # back within their lifetime
                    assert got == [1] * len(names), f"recent items not found: {got!r:.200}"
            infos = {load: info_map(c, key) for load, key in loads.items()}
        took = time.monotonic() - t0
    finally:
        for ad in adders.values():
            ad.stop()
    limit = binomial_limit(100000, ERROR)
    print(f"false positives over 100,000 never-added items: {found} (limit {limit}, "
          f"{took:.1f} s of lookups); "
          f"items added {[ad.added for ad in adders.values()]}; "
          f"sub-filters {[i[b'Number of filters'] for i in infos.values()]}")
    for load, ones in found.items():
        assert ones <= limit, f"{ones} false positives in 100,000 at {load}x the reserved rate"
    assert infos[5][b"Number of filters"] > g, f"the 5x filter's slots did not scale: {infos[5]}"
    assert infos[1][b"Capacity"] == capacity and infos[1][b"Window"] == window


# ---------------------------------------------------------------------------------------------
# Guarantee 4: proxies adding at once lose nothing


def window_away_from_a_boundary(g=2, margin_ms=120_000):
    """A window of about an hour such that no add in the next `margin_ms` changes slot (with
    g = 2 an add's slot changes when the upstream's time crosses a multiple of W)."""
    assert g == 2
    t = int(now_ms())
    for w in range(3_600_000, 4_200_000, 60_000):
        if margin_ms < t % w < w - margin_ms:
            return w
    raise AssertionError("no window without a slot boundary in the next two minutes")


def test_four_proxies_add_disjoint_items_at_once(redis_instance, proxy):
    """Four proxies, each adding 4,000 items of its own (BF.ADD pipelines, BF.MADD, BF.INSERT)
    at once to two windowed filters: one reserved, one created by the first add (bf-window).
    All in one slot (W about an hour, chosen so that no slot boundary falls in the test): every
    item found through every proxy, and BF.CARD (and BF.INFO's items) equal to the adds that
    answered 1 - every item, bar false positives of the adds themselves."""
    window = window_away_from_a_boundary()
    flags = ("--bf-window", f"auto:* {window} SLOTS 2 CAPACITY 100000 ERROR 0.001")
    proxies = [proxy(*flags) for _ in range(4)]
    names = ("reserved", "auto:1")
    with proxies[0].raw() as c:
        assert c.command("BF.RESERVE", names[0], "0.001", 100000, "WINDOW", window,
                         "SLOTS", 2) == b"OK"
    per_proxy, batch = 4000, 100
    ones = [[0, 0] for _ in proxies]

    def worker(tid):
        with proxies[tid].raw(timeout=30) as c:
            for first in range(0, per_proxy, batch):
                items = [f"p{tid}:{i}" for i in range(first, first + batch)]
                for f, name in enumerate(names):
                    kind = (first // batch + f) % 3
                    if kind == 0:
                        c.send(b"".join(cmd("BF.ADD", name, x) for x in items))
                        got = [c.read_reply() for _ in items]
                    elif kind == 1:
                        got = c.command("BF.MADD", name, *items)
                    else:
                        got = c.command("BF.INSERT", name, "ITEMS", *items)
                    assert isinstance(got, list) and set(got) <= {0, 1}, f"{got!r:.200}"
                    ones[tid][f] += sum(got)

    run_threads(worker, len(proxies))
    total = len(proxies) * per_proxy
    everything = [f"p{t}:{i}" for t in range(len(proxies)) for i in range(per_proxy)]
    for f, name in enumerate(names):
        added = sum(o[f] for o in ones)
        assert added >= total - binomial_limit(total, 0.001), f"{name}: {added} of {total} new"
        for p in proxies:
            with p.raw(timeout=30) as c:
                for i in range(0, total, 1000):
                    got = c.command("BF.MEXISTS", name, *everything[i:i + 1000])
                    assert got == [1] * len(got), f"{name}: items lost through proxy {p.port}"
                assert c.command("BF.CARD", name) == added
                info = info_map(c, name)
                assert info[b"Number of items inserted"] == added, info
                assert info[b"Window"] == window and info[b"Slots"] == 2, info
                assert info[b"Capacity"] == 100000, info
        keys = filter_keys(redis_instance, name)
        assert keys["marker"] and len(keys["slots"]) == 1 and not keys["other"], keys
