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
import struct
import subprocess
from pathlib import Path

import pytest

from bf_vectors import format_command, shorten
from bp_helpers import BLOOMPROXY_BIN, RawConn, encode_command, exec_block, parse_resp


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


HEADER = struct.Struct("<dddIIqqq")


def describe_state(data):
    """A digest's data-key bytes as text: its header fields and node count."""
    if data is None:
        return "no digest"
    c, mn, mx, m, u, mw, uw, tc = HEADER.unpack_from(data)
    return f"C={c!r} min={mn!r} max={mx!r} M={m} U={u} MW={mw} UW={uw} TC={tc}"


def first_node_difference(want, got):
    """The first node (index, model's (mean, weight), proxy's) where two data strings differ."""
    for i in range(max(len(want), len(got)) // 16):
        a = want[56 + 16 * i:72 + 16 * i]
        b = got[56 + 16 * i:72 + 16 * i]
        if a != b:
            unpack = lambda s: struct.unpack("<dq", s) if len(s) == 16 else None  # noqa: E731
            return i, unpack(a), unpack(b)
    return None


def upstream_state(redis, name):
    """The data string of digest `name` (a name without braces: its keys are "{name}:td:...")
    read on the upstream itself, or None."""
    assert b"{" not in name and b"}" not in name and name
    digest_id = redis.command("HGET", name, "id")
    if digest_id is None:
        return None
    return redis.command("GET", b"{" + name + b"}:td:" + digest_id + b":d")


def check_states(bp, redis_address, cmds, tmp_path):
    """Sends `cmds` one at a time; after each, the reply and the state of the digest it names
    (its first key: the destination of a MERGE) must be the model's, the state byte for byte as
    the data key on the upstream holds it (so that a difference shows where it is made, before
    any reply shows it)."""
    with_states = []
    for c in cmds:
        with_states += [c, [b"ORACLE.STATE", c[1]]]
    want = oracle_replies(with_states, False)
    host, port = redis_address
    with bp.raw(timeout=60) as conn, RawConn(port, host=host, timeout=60) as redis:
        for i, c in enumerate(cmds):
            conn.send(encode_command(*c))
            got = conn.read_reply_raw()
            state = upstream_state(redis, c[1])
            model_state = parse_resp(want[2 * i + 1])[0]
            if got == want[2 * i] and state == model_state:
                continue
            kept = tmp_path / "commands.resp"
            kept.write_bytes(b"".join(encode_command(*c) for c in cmds[:i + 1]))
            pytest.fail(f"#{i} {format_command(c, 400)} (commands up to it kept in {kept})\n"
                        f"    model: {shorten(want[2 * i], 600)}\n"
                        f"    proxy: {shorten(got, 600)}\n"
                        f"    model state: {describe_state(model_state)}\n"
                        f"    proxy state: {describe_state(state)}\n"
                        f"    first node that differs (index, model, proxy): "
                        f"{first_node_difference(model_state or b'', state or b'')}")
    return len(cmds)
