"""The proxy's t-digest (the Lua scripts of filters/tdigest/, run by the proxy on a standalone
redis-server) against the bit-exact C++ model of RedisBloom's (filters/tdigest/tdigest.h, which
tests/unit/tdigest_model_test.cc holds to every recorded RedisBloom reply), on seeded random
sequences the recordings do not have (tdigest_workload.py, tdigest_edges.py): every compression of
tdigest_workload.COMPRESSIONS, every value distribution, ADD of one and of many values, every
read interleaved, MERGE every way, weights past 2^53 up to the overflow, argument errors, odd key
names, command names in any case, weights exactly up to INT64_MAX and the merged weight
INT64_MIN past it. Each sequence goes through the proxy (in pipelines of random depth, where
runs of ADD on one digest are batched, some inside MULTI) and through tests/model/tdigest_oracle,
and every reply is compared byte for byte, in RESP2 and, after HELLO 3, in RESP3; some, one
command at a time, also compare the digest's whole state (its data key on the upstream) with the
model's after every command.

The model's side and the comparison are tdigest_check.py's.
"""

import random

import pytest

import tdigest_edges as edges
import tdigest_workload as work
from tdigest_check import check, check_states, oracle_replies


def streams(rng, compression, prefix, dists=None):
    """A stream of every distribution (or of `dists`), one digest each, of twice its capacity
    (300 values at least); the streams one after another, or shuffled together."""
    seqs = []
    for dist in dists or sorted(work.DISTRIBUTIONS):
        key = b"%s:%s:%d" % (prefix, dist.encode(), compression)
        total = max(300, 2 * work.capacity(compression))
        seqs.append(work.stream(rng, key, compression, dist, total))
    if rng.random() < 0.5:
        return work.vary_case(rng, work.interleave(rng, seqs))
    return work.vary_case(rng, [c for s in seqs for c in s])


@pytest.mark.parametrize("compression", work.COMPRESSIONS)
def test_streams_match_model(bp, tmp_path, compression):
    seed = 7000 + compression
    cmds = streams(random.Random(seed), compression, b"td")
    assert check(bp, cmds, tmp_path, seed) > 500


# Compressions the first test does not have, a few distributions each.
OTHER_COMPRESSIONS = (3, 4, 10, 33, 64, 250, 2000)


def test_other_compressions_match_model(bp, tmp_path):
    rng = random.Random(7500)
    cmds = []
    for compression in OTHER_COMPRESSIONS:
        dists = rng.sample(sorted(work.DISTRIBUTIONS), 4)
        cmds += streams(rng, compression, b"oc", dists)
    assert check(bp, cmds, tmp_path, 7500) > 1000


# Key names: plain, a hash tag, a space and a NUL, and the empty name (the seventh digest of
# merges() is named by the prefix alone).
MERGE_PREFIXES = (b"m0", b"{m1}", b"m 2\x00", b"")


@pytest.mark.parametrize("seed", range(len(MERGE_PREFIXES)))
def test_merges_match_model(bp, tmp_path, seed):
    rng = random.Random(8000 + seed)
    cmds = work.vary_case(rng, edges.merges(rng, MERGE_PREFIXES[seed], 350))
    assert check(bp, cmds, tmp_path, 8000 + seed) > 300


def test_argument_errors_match_model(bp, tmp_path):
    rng = random.Random(8500)
    cmds = edges.errors(rng, b"e0", 400) + edges.errors(rng, b"e1", 400)
    assert check(bp, cmds, tmp_path, 8500, multi=False) > 800
    # Inside MULTI too, but for the arity errors (Redis refuses those when it queues them; the
    # others come in EXEC's array). Dropping them changes nothing else: they change nothing.
    cmds = edges.errors(rng, b"e2", 400)
    want = oracle_replies(cmds, False)
    cmds = [c for c, r in zip(cmds, want) if b"wrong number of arguments" not in r]
    assert check(bp, cmds, tmp_path, 8501) > 300


@pytest.mark.parametrize("compression", (1, 2, 5, 17, 100))
def test_weight_overflow_matches_model(bp, tmp_path, compression):
    seed = 9000 + compression
    cmds = edges.overflow(random.Random(seed), b"o", compression, 140)
    want = oracle_replies(cmds, False)
    overflows = sum(r == b"-ERR T-Digest: overflow detected\r\n" for r in want)
    assert overflows >= 10, "the sequence must reach the overflow"
    assert check(bp, cmds, tmp_path, seed) > 300


@pytest.mark.parametrize("compression", (100, 1000))
def test_int64_edge_matches_model(bp, redis_server, tmp_path, compression):
    """Weights exactly up to INT64_MAX, and the merged weight INT64_MIN that C's cast of a
    compression's double sum 2^63 gives (tdigest_edges.int64_edge): replies and states."""
    cmds = edges.int64_edge(b"edge", compression)
    want = oracle_replies(cmds, False)
    assert b"+Merged weight\r\n:-9223372036854775808\r\n" in want[-3]
    assert check_states(bp, redis_server, cmds, tmp_path) == len(cmds)


def test_states_match_model(bp, redis_server, tmp_path):
    """Streams, merges and self-merges to the overflow one command at a time, the digest each
    names compared after each with the model's, as the upstream holds it, byte for byte: a
    difference shows where it is made (centroid order, a weight, a counter), before any reply
    shows it."""
    rng = random.Random(9800)
    cmds = []
    for compression in (2, 17, 100):
        for dist in rng.sample(sorted(work.DISTRIBUTIONS), 3):
            cmds += work.stream(rng, b"st:%s:%d" % (dist.encode(), compression), compression,
                                dist, max(300, 2 * work.capacity(compression)))
    cmds += edges.merges(rng, b"sm", 250)
    cmds += edges.overflow(rng, b"so", 17, 100)
    assert check_states(bp, redis_server, cmds, tmp_path) > 2000


def test_resp3_matches_model(bp, tmp_path):
    rng = random.Random(9900)
    cmds = []
    for compression in (1, 17, 100):
        for dist in ("normal", "huge", "zeros", "duplicates"):
            cmds += work.stream(rng, b"r3:%s:%d" % (dist.encode(), compression), compression,
                                dist, max(300, 2 * work.capacity(compression)))
    cmds += edges.merges(rng, b"r3m", 200)
    cmds += edges.overflow(rng, b"r3o", 5, 120)
    assert check(bp, cmds, tmp_path, 9900, resp3=True) > 1000
