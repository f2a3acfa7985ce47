"""Seeded random TDIGEST.* command sequences on one digest each, for test_tdigest_model.py,
which sends them through the proxy and through the model (tdigest_oracle) and compares every
reply byte for byte (sequences over several digests and at the limits: tdigest_edges.py).

A sequence is a list of commands, each a list of bytes. stream(): one digest of a given
compression fed by one value distribution (DISTRIBUTIONS), ADD of one value and of many (so
that the buffer fills, and compresses, in the middle of a call), with every read interleaved
(Reads: reads compress too), RESET now and then. vary_case() and interleave() vary how a
sequence reaches the proxy without changing a reply.
"""

import math

COMPRESSIONS = (1, 2, 5, 17, 100, 500, 1000)
INT64_MAX = (1 << 63) - 1


def capacity(compression):
    """Node slots of a digest (its buffer fills at capacity - 1 nodes)."""
    return 6 * compression + 10


def num(x):
    """The argument text of double `x`: Python's shortest repr, C's %.17g, or an integer."""
    return num_text(x, None)


def num_text(x, rng):
    if rng is not None:
        r = rng.random()
        if r < 0.25:
            return b"%.17g" % x
        if r < 0.35 and math.isfinite(x) and x == int(x) and abs(x) < 1e15:
            return b"%d" % int(x)
    return repr(x).encode()


# Value distributions: f(rng, i) is the i-th value of a stream.
def _long_tail(rng, _):
    return rng.choice((1, -1)) * rng.paretovariate(1.1)


def _magnitudes(rng, _):
    return rng.choice((1, -1)) * 10 ** rng.uniform(-300, 300)


def _huge(rng, _):
    return rng.choice((1.7976931348623157e308, -1.7976931348623157e308, 1e308, -1e308,
                       rng.uniform(-1, 1) * 1e308, rng.uniform(-1, 1) * 1e300))


def _tiny(rng, _):
    return rng.choice((5e-324, -5e-324, 1e-320, 2.2250738585072014e-308,
                       rng.uniform(-1, 1) * 1e-300, rng.uniform(-1, 1) * 1e-310))


def _zeros(rng, _):
    return rng.choice((0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 5e-324))


DISTRIBUTIONS = {
    "uniform": lambda rng, i: rng.uniform(-1000, 1000),
    "normal": lambda rng, i: rng.gauss(0, 1),
    "exponential": lambda rng, i: rng.expovariate(1.0),
    "long_tail": _long_tail,
    "duplicates": lambda rng, i: rng.choice((1.0, 2.0, 2.5, -3.0, 0.1, 1e6)),
    "integers": lambda rng, i: float(rng.randint(-50, 50)),
    "magnitudes": _magnitudes,
    "huge": _huge,
    "tiny": _tiny,
    "zeros": _zeros,
    "sorted": lambda rng, i: i * 0.25 + rng.choice((0.0, 0.0, 1e-9)),
    "reverse_sorted": lambda rng, i: 1e6 - i * 0.5,
    "sorted_runs": lambda rng, i: float(i // 7),
}


class Reads:
    """Read commands on one digest, with probes near what it holds: the values added so far
    (a sample), their neighbours, the extremes, the infinities."""

    def __init__(self, rng, key):
        self.rng = rng
        self.key = key
        self.seen = []
        self.size = 0

    def added(self, values):
        self.size += len(values)
        for v in values:
            if len(self.seen) < 64:
                self.seen.append(v)
            elif self.rng.random() < 0.05:
                self.seen[self.rng.randrange(64)] = v

    def value(self):
        rng, seen = self.rng, self.seen
        r = rng.random()
        if seen and r < 0.45:
            return rng.choice(seen)
        if seen and r < 0.6:
            v = rng.choice(seen)
            return math.nextafter(v, rng.choice((math.inf, -math.inf)))
        if len(seen) > 1 and r < 0.75:
            a, b = rng.sample(seen, 2)
            return a / 2 + b / 2
        if seen and r < 0.82:
            return rng.choice((min(seen), max(seen)))
        return rng.choice((math.inf, -math.inf, 1e308, -1e308, 0.0, -0.0, 1.0, -1e-300))

    def rank(self):
        rng, n = self.rng, self.size
        return min(INT64_MAX, rng.choice((0, 1, 2, max(n - 1, 0), n, n + 1,
                                          rng.randint(0, max(n, 1)), n // 2, 1 << 53,
                                          (1 << 53) + 1, 1 << 62, INT64_MAX,
                                          rng.randint(0, INT64_MAX))))

    def quantile(self):
        return self.rng.choice((0.0, 1.0, 0.5, 0.25, 0.75, 0.01, 0.99, 0.001, 0.999, 1e-9,
                                0.999999999, 1e-300, self.rng.random()))

    def command(self):
        """One read command (or MIN, MAX, INFO)."""
        rng, key = self.rng, self.key
        many = rng.randint(1, 5)
        r = rng.random()
        if r < 0.2:
            return [b"TDIGEST.QUANTILE", key] + [num_text(self.quantile(), rng)
                                                 for _ in range(many)]
        if r < 0.38:
            return [b"TDIGEST.CDF", key] + [num_text(self.value(), rng) for _ in range(many)]
        if r < 0.5:
            lo, hi = sorted(rng.sample([0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0,
                                        rng.random()], 2))
            if lo == hi:
                hi = 1.0
            return [b"TDIGEST.TRIMMED_MEAN", key, num_text(lo, rng), num_text(hi, rng)]
        if r < 0.65:
            name = rng.choice((b"TDIGEST.RANK", b"TDIGEST.REVRANK"))
            return [name, key] + [num_text(self.value(), rng) for _ in range(many)]
        if r < 0.8:
            name = rng.choice((b"TDIGEST.BYRANK", b"TDIGEST.BYREVRANK"))
            return [name, key] + [b"%d" % self.rank() for _ in range(many)]
        return [rng.choice((b"TDIGEST.MIN", b"TDIGEST.MAX", b"TDIGEST.INFO")), key]

    def all(self):
        """Every read once, with the edge probes."""
        key = self.key
        vals = [num(v) for v in (self.value(), -math.inf, math.inf, 1e308)]
        return [[b"TDIGEST.QUANTILE", key, b"0", b"1", b"0.5", b"0.999", b"0.001"],
                [b"TDIGEST.CDF", key] + vals,
                [b"TDIGEST.TRIMMED_MEAN", key, b"0.1", b"0.9"],
                [b"TDIGEST.TRIMMED_MEAN", key, b"0", b"1"],
                [b"TDIGEST.RANK", key] + vals,
                [b"TDIGEST.REVRANK", key] + vals,
                [b"TDIGEST.BYRANK", key] + [b"%d" % r for r in (0, 1, self.size - 1 if
                                                                    self.size else 0,
                                                                    self.size, INT64_MAX)],
                [b"TDIGEST.BYREVRANK", key, b"0", b"1", b"%d" % self.size],
                [b"TDIGEST.MIN", key], [b"TDIGEST.MAX", key], [b"TDIGEST.INFO", key]]


def add_size(rng, compression):
    """How many values one ADD carries: one, a few, or up to two thirds of the buffer."""
    r = rng.random()
    if r < 0.35:
        return 1
    if r < 0.7:
        return rng.randint(2, 12)
    return rng.randint(13, max(14, 2 * capacity(compression) // 3))


def stream(rng, key, compression, dist, total, read_rate=0.6):
    """One digest fed `total` values of distribution `dist`, reads interleaved."""
    make = DISTRIBUTIONS[dist]
    reads = Reads(rng, key)
    create = [b"TDIGEST.CREATE", key]
    if compression != 100 or rng.random() < 0.5:
        create += [b"COMPRESSION", b"%d" % compression]
    cmds = [create] + reads.all()
    first, reset = True, False
    while reads.size < total:
        n = 1 if first else add_size(rng, compression)
        values = [make(rng, reads.size + j) for j in range(n)]
        cmds.append([b"TDIGEST.ADD", key] + [num_text(v, rng) for v in values])
        reads.added(values)
        if first or reads.size == 2:
            cmds += reads.all()
        first = False
        while rng.random() < read_rate:
            cmds.append(reads.command())
        if not reset and rng.random() < 0.02:
            reset = True
            cmds.append([b"TDIGEST.RESET", key])
            cmds += reads.all()[:2]
            reads.size = 0
            first = True
    return cmds + reads.all()


def vary_case(rng, cmds):
    """`cmds` with one command name in ten in lower or mixed case (names are case-insensitive)."""
    out = []
    for c in cmds:
        r = rng.random()
        if r < 0.05:
            c = [c[0].lower()] + c[1:]
        elif r < 0.1:
            c = [bytes(ch ^ 32 if rng.random() < 0.5 and chr(ch).isalpha() else ch
                       for ch in c[0])] + c[1:]
        out.append(c)
    return out


def interleave(rng, seqs):
    """The commands of `seqs` (sequences on distinct keys) shuffled together, each sequence's
    own order kept: the proxy then sees runs of ADD on one digest cut by the others' commands."""
    seqs = [list(reversed(s)) for s in seqs if s]
    out = []
    while seqs:
        s = rng.choice(seqs)
        out.append(s.pop())
        if not s:
            seqs.remove(s)
    return out
