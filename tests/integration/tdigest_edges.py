"""Seeded TDIGEST.* sequences over several digests and at the limits, for test_tdigest_model.py
and test_tdigest_sort_depth.py (single-digest streams are tdigest_workload.py's):

- merges(): several digests of mixed compressions and fill levels merged into new and existing
  destinations and into their own sources, with repeated sources, COMPRESSION and OVERRIDE in
  every order, DEL, RESET and CREATE in between;
- errors(): every command with bad arguments on digests, missing keys and strings (the key's
  error and the argument's come in RedisBloom's order);
- overflow(): a digest multiplied by self-merges past 2^53 towards INT64_MAX, then topped up
  with copies of its earlier selves and single ADDs until every step overflows;
- int64_edge(): weights exactly up to INT64_MAX, and the merged weight INT64_MIN past it;
- deepest_sort_order(): the worst arrival order for the t-digest's quicksort.
"""

from tdigest_workload import (COMPRESSIONS, DISTRIBUTIONS, INT64_MAX, Reads, capacity, num,
                              num_text)


def merge_tail(rng):
    """MERGE's optional words: COMPRESSION c and OVERRIDE, in either order and case, or none."""
    c = b"%d" % rng.choice(COMPRESSIONS)
    comp = rng.choice((b"COMPRESSION", b"compression"))
    over = rng.choice((b"OVERRIDE", b"override"))
    return rng.choice(([], [], [comp, c], [over], [comp, c, over], [over, comp, c]))


def merges(rng, prefix, steps):
    """Digests of mixed compressions and fill levels merged every way, with reads, ADDs,
    RESETs and DELs in between."""
    names = [prefix + b":%d" % i for i in range(6)] + [prefix]
    reads = {k: Reads(rng, k) for k in names}
    live, cmds = set(), []

    def fill(key, n):
        dist = DISTRIBUTIONS[rng.choice(sorted(DISTRIBUTIONS))]
        values = [dist(rng, j) for j in range(n)]
        for at in range(0, n, 50):
            part = values[at:at + 50]
            cmds.append([b"TDIGEST.ADD", key] + [num_text(v, rng) for v in part])
        reads[key].added(values)

    for key in names[:5]:
        c = rng.choice(COMPRESSIONS[:6])
        cmds.append([b"TDIGEST.CREATE", key, b"COMPRESSION", b"%d" % c])
        live.add(key)
        fill(key, rng.choice((0, 1, 2, 5, 40, 3 * capacity(c) // 2)))
    for _ in range(steps):
        r = rng.random()
        key = rng.choice(names)
        if r < 0.45:
            pool = sorted(live) if live and rng.random() < 0.95 else names
            sources = [rng.choice(pool) for _ in range(rng.choice((1, 1, 2, 2, 3, 4)))]
            if rng.random() < 0.25 and live:
                key = rng.choice(sources)  # the destination is a source too
            cmds.append([b"TDIGEST.MERGE", key, b"%d" % len(sources)] + sources +
                        merge_tail(rng))
            if all(s in live for s in sources):
                live.add(key)
        elif r < 0.6:
            fill(key, rng.choice((1, 1, 3, 20, 200)))
        elif r < 0.9:
            cmds.append(reads[key].command())
        elif r < 0.95:
            cmds.append([b"TDIGEST.RESET", key])
        elif r < 0.97:
            cmds.append([b"DEL", key])
            live.discard(key)
        else:
            cmds.append([b"TDIGEST.CREATE", key, b"COMPRESSION",
                         b"%d" % rng.choice(COMPRESSIONS)])
            live.add(key)
    for key in names:
        cmds += reads[key].all()
    return cmds


def fits(weight, old):
    """`weight` when a digest may hold it, else `old` (the step overflows)."""
    return weight if weight <= INT64_MAX else old


def overflow(rng, prefix, compression, steps):
    """Digest `big` grown by self-merges (x2, x3, x4) past 2^53 to 2^62, copied now and then
    (`snap` digests), then for `steps` steps topped up with these copies of its earlier selves,
    self-merges, single ADDs (lost in the rounding of the merged weight, a double) and
    runs of ADDs, towards INT64_MAX: a step that would pass it replies "overflow detected" and
    changes nothing (but the digests it compressed). Reads after most steps. The weights the
    generator tracks are close, not exact (MERGE's totals round past 2^53): they only steer it."""
    big = prefix + b":big"
    reads = Reads(rng, big)
    snaps = {}  # name -> weight
    cmds = [[b"TDIGEST.CREATE", big, b"COMPRESSION", b"%d" % compression]]
    values = [rng.uniform(-100, 100) for _ in range(rng.choice((1, 3, 12, 2 * compression + 5)))]
    cmds.append([b"TDIGEST.ADD", big] + [num(v) for v in values])
    reads.added(values)
    weight = len(values)

    step = 0
    while step < steps:
        r = rng.random()
        growing = weight < 1 << 62
        if (growing and r < 0.75) or r < 0.15:
            n = rng.choice((1, 2, 3))
            cmds.append([b"TDIGEST.MERGE", big, b"%d" % n] + [big] * n)
            weight = fits(weight * (n + 1), weight)
        elif growing or r < 0.3 or not snaps:
            snap = prefix + b":snap%d" % len(snaps)
            tail = rng.choice(([], [], [b"COMPRESSION", b"%d" % rng.choice(COMPRESSIONS[:5])]))
            cmds.append([b"TDIGEST.MERGE", snap, b"1", big] + tail)
            snaps[snap] = weight
        elif r < 0.75:
            room = [k for k in sorted(snaps) if snaps[k] <= INT64_MAX - weight]
            if room and rng.random() < 0.6:  # the largest that fits: close in on INT64_MAX
                chosen = [max(room, key=snaps.get)]
            else:
                chosen = [rng.choice(sorted(snaps)) for _ in range(rng.choice((1, 1, 2)))]
            cmds.append([b"TDIGEST.MERGE", big, b"%d" % len(chosen)] + chosen)
            weight = fits(weight + sum(snaps[c] for c in chosen), weight)
        else:
            for _ in range(rng.choice((1, 1, 4))):
                n = rng.choice((1, 2, 7))
                cmds.append([b"TDIGEST.ADD", big] + [num(rng.uniform(-100, 100))
                                                     for _ in range(n)])
                weight = fits(weight + n, weight)
        if weight >= 1 << 62:
            step += 1
        if snaps and rng.random() < 0.2:
            cmds.append(Reads(rng, rng.choice(sorted(snaps))).command())
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            cmds.append(reads.command())
    cmds.append([b"TDIGEST.MERGE", big, b"2", big, big, b"OVERRIDE"])
    cmds += reads.all()
    return cmds


BAD_DOUBLES = (b"abc", b"", b"nan", b"-nan", b"1e999", b"1e-400", b"1 ", b"1\x00", b" 1",
               b"0x", b"--1")
BAD_INTS = (b"abc", b"", b"1.5", b"-0", b"+1", b"01", b"1e3", b"9223372036854775808", b"-1",
            b"0")


def errors(rng, prefix, count):
    """Commands with bad arguments (and good ones) on a digest, a missing key and a string, in
    random order: the key's errors and the arguments' in RedisBloom's order. Includes arity
    errors (so never inside MULTI)."""
    digest, missing, string = prefix + b":d", prefix + b":none", prefix + b":s"
    cmds = [[b"TDIGEST.CREATE", digest, b"COMPRESSION", b"7"],
            [b"TDIGEST.ADD", digest] + [num(rng.gauss(0, 1)) for _ in range(30)],
            [b"SET", string, b"x"]]
    keys = (digest, digest, missing, string)
    bad_d = lambda: rng.choice(BAD_DOUBLES)  # noqa: E731
    good_d = lambda: num_text(rng.gauss(0, 2), rng)  # noqa: E731
    mixed = lambda n: [bad_d() if rng.random() < 0.3 else good_d()  # noqa: E731
                       for _ in range(n)]
    for _ in range(count):
        k = rng.choice(keys)
        r = rng.randrange(12)
        n = rng.randint(0, 3)
        if r == 0:
            cmds.append([b"TDIGEST.ADD", k] + mixed(n) + [rng.choice((b"inf", b"-inf",
                                                                       bad_d(), good_d()))])
        elif r == 1:
            qs = [rng.choice((b"0.5", b"1", b"1.5", b"-0.1", b"inf", bad_d())) for _ in range(n)]
            cmds.append([b"TDIGEST.QUANTILE", k] + qs)
        elif r == 2:
            cmds.append([rng.choice((b"TDIGEST.CDF", b"TDIGEST.RANK", b"TDIGEST.REVRANK")), k]
                        + mixed(n))
        elif r == 3:
            ranks = [rng.choice((b"0", b"5", b"-1", b"1.5", rng.choice(BAD_INTS)))
                     for _ in range(n)]
            cmds.append([rng.choice((b"TDIGEST.BYRANK", b"TDIGEST.BYREVRANK")), k] + ranks)
        elif r == 4:
            cuts = [rng.choice((b"0", b"0.5", b"1", b"1.5", b"-1", b"0.5", bad_d()))
                    for _ in range(rng.choice((1, 2, 2, 2, 3)))]
            cmds.append([b"TDIGEST.TRIMMED_MEAN", k] + cuts)
        elif r == 5:
            tail = rng.choice(([], [b"COMPRESSION"], [b"COMPRESSION", rng.choice(BAD_INTS)],
                               [b"compression", b"5"], [b"5", b"COMPRESSION"],
                               [b"COMPRESSION", b"5", b"x"], [b"WRONG", b"5"],
                               [b"COMPRESSION", b"400000000000000000"]))
            cmds.append([b"TDIGEST.CREATE", k] + tail)
        elif r == 6:
            cmds.append([b"TDIGEST.MERGE", rng.choice(keys + (prefix + b":new",))] +
                        merge_args(rng, keys))
        elif r == 7:
            cmds.append([rng.choice((b"TDIGEST.MIN", b"TDIGEST.MAX", b"TDIGEST.INFO",
                                     b"TDIGEST.RESET")), k] + [b"x"] * rng.choice((0, 0, 1)))
        elif r == 8:
            cmds.append([rng.choice((b"TDIGEST.ADD", b"TDIGEST.QUANTILE", b"TDIGEST.MERGE",
                                     b"TDIGEST.CDF", b"tdigest.byrank"))] + [k] * (n % 2))
        elif r == 9:
            cmds.append([b"DEL", digest])
            cmds.append([b"TDIGEST.CREATE", digest])
        else:
            cmds.append([b"TDIGEST.ADD", digest] + [good_d() for _ in range(rng.randint(1, 9))])
    return cmds


def merge_args(rng, keys):
    """MERGE's arguments after the destination, good and bad: numkeys, sources, the tail."""
    n = rng.randint(1, 3)
    sources = [rng.choice(keys) for _ in range(n)]
    r = rng.random()
    if r < 0.15:
        count = rng.choice(BAD_INTS + (b"%d" % (n + 2),))
    else:
        count = b"%d" % n
    tail = rng.choice(([], [b"OVERRIDE"], [b"COMPRESSION", b"9"], [b"COMPRESSION"],
                       [b"COMPRESSION", rng.choice(BAD_INTS)], [b"JUNK"],
                       [b"OVERRIDE", b"JUNK"], [b"COMPRESSION", b"OVERRIDE"],
                       [b"COMPRESSION", b"400000000000000000"]))
    return [count] + sources + tail


def deepest_sort_order(n):
    """0..n-1 in the arrival order that makes the t-digest's quicksort (Lomuto around the middle
    node, tdigest_compress.lua's td_sort) pick the largest value of every range as its pivot:
    every partition leaves all but the pivot on its left, so the sort of n buffered nodes
    recurses n - 1 deep and compares about n^2 / 2 times."""
    at = list(range(n))  # at[slot]: the arrival index now in that slot
    value = [0] * n
    hi = n - 1
    while hi >= 2:
        p = hi // 2
        value[at[p]] = hi  # the pivot, the largest left; it is swapped to the end
        at[p], at[hi] = at[hi], at[p]
        hi -= 1
    for slot in range(hi + 1):
        value[at[slot]] = slot
    return value


def int64_edge(key, compression):
    """A digest of weight exactly 2^63 - 1024, built without rounding: ADD 7 values (2^3 - 1);
    five times MERGE key 1023 key...key (x1024) and ADD 1023 values (+1023): 2^53 - 1; ten
    times MERGE key 1 key (x2). Then a new minimum (its centroid keeps weight 1), ADDs up to
    INT64_MAX and one past it (overflow). The compression of a double sum past 2^63 - 512
    rounds it to 2^63: the merged weight, C's (int64) of it, is INT64_MIN on x86-64. From then
    on a compression only sorts (the total, MW + UW as doubles, is <= 1), and QUANTILE walks
    the centroids with MW - 1, which wraps to INT64_MAX in C. Needs a buffer of 600 nodes
    (compression >= 100): a smaller one compresses, and rounds the weight down, on the way."""
    cmds = [[b"TDIGEST.CREATE", key, b"COMPRESSION", b"%d" % compression],
            [b"TDIGEST.ADD", key] + [b"%d" % i for i in range(7)]]
    for _ in range(5):
        cmds.append([b"TDIGEST.MERGE", key, b"1023"] + [key] * 1023)
        cmds.append([b"TDIGEST.ADD", key] + [b"%d" % (i % 7) for i in range(1023)])
    cmds += [[b"TDIGEST.MERGE", key, b"1", key] for _ in range(10)]
    cmds += [[b"TDIGEST.INFO", key], [b"TDIGEST.ADD", key, b"-1"],
             [b"TDIGEST.ADD", key] + [b"%d" % (i % 5) for i in range(599)],
             [b"TDIGEST.ADD", key] + [b"0.5"] * 1025,  # 423 fit, the 424th overflows
             [b"TDIGEST.INFO", key], [b"TDIGEST.QUANTILE", key, b"0"], [b"TDIGEST.INFO", key],
             [b"TDIGEST.MIN", key], [b"TDIGEST.MAX", key]]
    return cmds
