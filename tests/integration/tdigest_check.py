"""Holds the proxy's TDIGEST replies to the model's: tests/model/tdigest_oracle (the bit-exact C++
model of RedisBloom's t-digest, filters/tdigest/tdigest.h, behind tests/model/tdigest_keyspace.h)
answers a command sequence, the proxy answers the same sequence, and every reply must be the
same bytes.

The oracle is $TDIGEST_ORACLE (ctest sets it), else tests/model/tdigest_oracle next to
$BLOOMPROXY_BIN. On a mismatch the commands up to the first differing reply are kept in the
test's tmp folder, so that `tdigest_oracle < commands.resp` replays them.
"""

import os
import random
import subprocess
from pathlib import Path

import pytest

from bf_vectors import format_command, shorten
from bp_helpers import BLOOMPROXY_BIN, encode_command, exec_block, parse_resp


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


def proxy_replies(conn, cmds, rng, multi):
    """The proxy's reply to each command, sent in pipelines of random depth (1 to 200); with
    `multi`, one pipeline in ten is a MULTI ... EXEC block (each command's reply is then its
    element of EXEC's array, after a +QUEUED)."""
    got, at = [], 0
    while at < len(cmds):
        depth = 1 if rng.random() < 0.4 else rng.randint(2, 200)
        chunk = cmds[at:at + depth]
        if multi and rng.random() < 0.1:
            got += exec_block(conn, chunk)
        else:
            conn.send(b"".join(encode_command(*c) for c in chunk))
            got += [conn.read_reply_raw() for _ in chunk]
        at += len(chunk)
    return got


def check(bp, cmds, tmp_path, seed, resp3=False, multi=True):
    """Sends `cmds` through the proxy and the model; fails on the first replies that differ,
    naming each command and both replies. `multi`: some of them inside MULTI (`cmds` must then
    have no arity error, which Redis gives when it queues a command)."""
    want = oracle_replies(cmds, resp3)
    with bp.raw(timeout=60) as conn:
        if resp3:
            conn.send(encode_command(b"HELLO", b"3"))
            assert conn.read_reply_raw().startswith(b"%")
        got = proxy_replies(conn, cmds, random.Random(seed), multi)
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
