"""The proxy's t-digest (the Lua scripts of filters/tdigest/, run by the proxy on a standalone
redis-server) against the bit-exact C++ model of RedisBloom's (filters/tdigest/tdigest.h, which
tests/unit/tdigest_model_test.cc holds to every recorded RedisBloom reply), on seeded random
sequences the recordings do not have (tdigest_workload.py): every compression of
tdigest_workload.COMPRESSIONS, every value distribution, ADD of one and of many values, every
read interleaved, MERGE every way, weights past 2^53 up to the overflow. Each sequence goes
through the proxy (in pipelines of random depth: runs of ADD on one digest are batched there)
and through tests/model/tdigest_oracle, and every reply is compared byte for byte, in RESP2 and,
after HELLO 3, in RESP3.

The oracle is $TDIGEST_ORACLE (ctest sets it), else tests/model/tdigest_oracle next to
$BLOOMPROXY_BIN. On a mismatch the commands are kept in the test's tmp folder, so that
`tdigest_oracle < commands.resp` replays them.
"""

import os
import random
import subprocess
from pathlib import Path

import pytest

import tdigest_workload as work
from bf_vectors import format_command, shorten
from bp_helpers import BLOOMPROXY_BIN, encode_command, parse_resp


def oracle_path():
    path = os.environ.get("TDIGEST_ORACLE") or str(
        Path(BLOOMPROXY_BIN).parent / "tests" / "model" / "tdigest_oracle")
    assert os.path.exists(path), f"no t-digest model program at {path} (build tdigest_oracle)"
    return path


def split_replies(data):
    """The raw RESP replies one after another in `data`."""
    out, pos = [], 0
    while pos < len(data):
        _, end = parse_resp(data, pos)
        out.append(data[pos:end])
        pos = end
    return out


def oracle_replies(cmds, resp3):
    """The model's reply to each command, as RedisBloom's bytes."""
    args = [oracle_path()] + (["--resp3"] if resp3 else [])
    run = subprocess.run(args, input=b"".join(encode_command(*c) for c in cmds),
                         capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    replies = split_replies(run.stdout)
    assert len(replies) == len(cmds)
    return replies


def proxy_replies(conn, cmds, rng):
    """The proxy's reply to each command, sent in pipelines of random depth (1 to 200)."""
    got, at = [], 0
    while at < len(cmds):
        depth = 1 if rng.random() < 0.4 else rng.randint(2, 200)
        chunk = cmds[at:at + depth]
        conn.send(b"".join(encode_command(*c) for c in chunk))
        got += [conn.read_reply_raw() for _ in chunk]
        at += len(chunk)
    return got


def check(bp, cmds, tmp_path, seed, resp3=False):
    """Sends `cmds` through the proxy and the model; fails on the first replies that differ,
    naming each command and both replies."""
    want = oracle_replies(cmds, resp3)
    with bp.raw(timeout=60) as conn:
        if resp3:
            conn.send(encode_command(b"HELLO", b"3"))
            assert conn.read_reply_raw().startswith(b"%")
        got = proxy_replies(conn, cmds, random.Random(seed))
    bad = [i for i, (w, g) in enumerate(zip(want, got)) if w != g]
    if not bad:
        return len(cmds)
    kept = tmp_path / "commands.resp"
    kept.write_bytes(b"".join(encode_command(*c) for c in cmds[:bad[0] + 1]))
    lines = [f"{len(bad)} of {len(cmds)} replies differ ({'RESP3' if resp3 else 'RESP2'}); "
             f"commands up to the first kept in {kept}"]
    for i in bad[:4]:
        lines.append(f"#{i} {format_command(cmds[i], 400)}\n    model: {shorten(want[i], 600)}"
                     f"\n    proxy: {shorten(got[i], 600)}")
    pytest.fail("\n".join(lines))


def streams(rng, compression, prefix):
    """A stream of every distribution, one digest each, of twice its capacity (300 at least)."""
    cmds = []
    for dist in sorted(work.DISTRIBUTIONS):
        key = b"%s:%s:%d" % (prefix, dist.encode(), compression)
        total = max(300, 2 * work.capacity(compression))
        cmds += work.stream(rng, key, compression, dist, total)
    return cmds


@pytest.mark.parametrize("compression", work.COMPRESSIONS)
def test_streams_match_model(bp, tmp_path, compression):
    seed = 7000 + compression
    cmds = streams(random.Random(seed), compression, b"td")
    assert check(bp, cmds, tmp_path, seed) > 500


@pytest.mark.parametrize("seed", range(4))
def test_merges_match_model(bp, tmp_path, seed):
    cmds = work.merges(random.Random(8000 + seed), b"m%d" % seed, 350)
    assert check(bp, cmds, tmp_path, 8000 + seed) > 300


@pytest.mark.parametrize("compression", (1, 2, 5, 17, 100))
def test_weight_overflow_matches_model(bp, tmp_path, compression):
    seed = 9000 + compression
    cmds = work.overflow(random.Random(seed), b"o", compression, 140)
    want = oracle_replies(cmds, False)
    overflows = sum(r == b"-ERR T-Digest: overflow detected\r\n" for r in want)
    assert overflows >= 10, "the sequence must reach the overflow"
    assert check(bp, cmds, tmp_path, seed) > 300


def test_resp3_matches_model(bp, tmp_path):
    rng = random.Random(9900)
    cmds = []
    for compression in (1, 17, 100):
        for dist in ("normal", "huge", "zeros", "duplicates"):
            cmds += work.stream(rng, b"r3:%s:%d" % (dist.encode(), compression), compression,
                                dist, max(300, 2 * work.capacity(compression)))
    cmds += work.merges(rng, b"r3m", 200)
    cmds += work.overflow(rng, b"r3o", 5, 120)
    assert check(bp, cmds, tmp_path, 9900, resp3=True) > 1000
