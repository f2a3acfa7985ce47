"""The Python Top-K model (topk_model.py) against RedisBloom's recorded TOPK vectors
(tests/fixtures/topk/), RESP2 and RESP3: every recorded reply of a TOPK command the model answers
(everything but argument errors and keys it does not track) must be the model's byte for byte.
Every recorded reply is deterministic (decay 1, or no step against a foreign fingerprint, see
the spec's "Randomness"), so the model runs with a random source that fails when drawn. The
quality test (test_topk_quality.py) then uses the same model, with Python's random numbers, as
RedisBloom's algorithm.

Then bloomproxy against the model on seeded random TOPK.* sequences whose replies are
deterministic too: decay 1 on narrow sketches (collisions, takeovers, heap counts going down,
expulsions at equal counts, COUNT's heapMin filter), and decay < 1 on items that share no bucket.
"""

import base64
import json
import random

import pytest

from bf_vectors import format_command, load_cases, shorten
from bp_helpers import REPO, encode_command
from topk_model import TopK, NoRandom, bucket_index, fingerprint, topk_reply

FIXTURES = REPO / "tests" / "fixtures" / "topk"

# Commands that cannot change a Top-K key the model tracks (or fail on one).
NO_EFFECT = {b"EXISTS", b"TYPE", b"TTL", b"EXPIRE", b"PERSIST", b"GET", b"HGET", b"OBJECT",
             b"COPY", b"BF.EXISTS", b"BF.MEXISTS", b"CMS.QUERY", b"CMS.INFO", b"CMS.INCRBY"}
# Commands that create a key of another type when they succeed.
CREATE_OTHER = {b"SET", b"LPUSH", b"SADD", b"HSET", b"BF.ADD", b"BF.RESERVE", b"CMS.INITBYDIM"}


def resp3_replies():
    return {c["name"]: [base64.b64decode(r) for r in c["replies"]] for c in json.loads(
        (FIXTURES / "topk-resp3-expected.json").read_text())}


def replay(resp3):
    """(compared, uncovered, problems) over all cases, each from a fresh key set."""
    cases = load_cases(FIXTURES / "topk-cases.json", FIXTURES / "topk-expected.json")
    assert len(cases) == 21
    r3 = resp3_replies() if resp3 else None
    compared, uncovered, problems = 0, [], []
    for case in cases:
        replies = r3[case["name"]] if resp3 else case["replies"]
        assert len(replies) == len(case["cmds"]), case["name"]
        sketches, others = {}, set()
        for i, (args, expected) in enumerate(zip(case["cmds"], replies)):
            name = args[0].upper()
            if not name.startswith(b"TOPK."):
                key_command(sketches, others, name, args, expected)
                continue
            if name == b"TOPK.RESERVE" and args[1:2] and args[1] in others:
                continue  # "key already exists": the model keeps no other types
            try:
                got = topk_reply(sketches, args, resp3)
            except NoRandom as exc:
                problems.append(f"{case['name']} #{i}: {format_command(args)}: {exc}")
                continue
            if got is None:
                if not expected.startswith(b"-"):
                    uncovered.append(f"{case['name']} #{i}: {format_command(args)[:80]}")
                continue
            compared += 1
            if got != expected and len(problems) < 10:
                problems.append(f"{case['name']} #{i}: {format_command(args)[:200]}\n"
                                f"    recorded: {shorten(expected)}\n    model:    {shorten(got)}")
    return compared, uncovered, problems


def key_command(sketches, others, name, args, expected):
    """What a plain command does to the model's keys: `sketches` ({key: TopK}) and `others` (the
    names of keys of other types)."""
    if name in (b"DEL", b"UNLINK"):
        for k in args[1:]:
            sketches.pop(k, None)
            others.discard(k)
    elif name in (b"RENAME", b"RENAMENX"):
        if expected in (b"+OK\r\n", b":1\r\n"):
            src, dst = args[1], args[2]
            sketches.pop(dst, None)
            others.discard(dst)
            if src in sketches:
                sketches[dst] = sketches.pop(src)
            else:
                others.discard(src)
                others.add(dst)
    elif name in CREATE_OTHER:
        if not expected.startswith(b"-"):
            sketches.pop(args[1], None)  # SET replaces a sketch
            others.add(args[1])
    else:
        assert name in NO_EFFECT, f"unexpected command in the TOPK vectors: {name!r}"


def test_model_agrees_with_vectors_resp2():
    compared, uncovered, problems = replay(False)
    assert not problems, "the model differs from RedisBloom:\n" + "\n".join(problems)
    assert not uncovered, "recorded replies the model does not answer:\n" + "\n".join(uncovered)
    assert compared >= 450, f"only {compared} recorded replies compared"


def test_model_agrees_with_vectors_resp3():
    compared, uncovered, problems = replay(True)
    assert not problems, "the model differs from RedisBloom (RESP3):\n" + "\n".join(problems)
    assert not uncovered, "recorded replies the model does not answer:\n" + "\n".join(uncovered)
    assert compared >= 450, f"only {compared} recorded replies compared"


def test_model_hash_values():
    """The spec's MurmurHash2 examples (fp("") = 1250256608, MurmurHash2("", seed 0) = 0), and a
    row start that wraps mod 2^32 (row 2 of width 2^31 starts at bucket 0)."""
    assert fingerprint(b"") == 1250256608
    assert bucket_index(b"", 7, 0) == 0
    assert bucket_index(b"x", 1 << 31, 2) < 1 << 31
    assert bucket_index(b"x", 1 << 31, 1) >= 1 << 31


def test_model_decay_statistics():
    """decay < 1 with Python's random: one foreign bucket of count c falls by one per step with
    probability decay^c. 20000 single steps against count 1 at decay 0.9 take it over ~90 %."""
    takeovers = 0
    for seed in range(2000):
        s = TopK(1, 1, 1, 0.9, seed=seed)
        s.add(b"a")
        s.add(b"b")
        takeovers += s.count(b"b") == 1
    assert 0.87 < takeovers / 2000 < 0.93, takeovers


# ---------------------------------------------------------------------------------------------
# bloomproxy against the model where RedisBloom's replies do not depend on random numbers


def random_workload(rng, key, items, calls):
    """`calls` seeded TOPK commands on `key`: ADD of 1-30 items, INCRBY of 1-10 pairs (increments
    0, small, or up to 100000), QUERY, COUNT, LIST with and without WITHCOUNT."""
    out = []
    for _ in range(calls):
        r = rng.random()
        pick = lambda n: [rng.choice(items) for _ in range(n)]  # noqa: E731
        if r < 0.45:
            out.append([b"TOPK.ADD", key] + pick(rng.randint(1, 30)))
        elif r < 0.75:
            args = [b"TOPK.INCRBY", key]
            for it in pick(rng.randint(1, 10)):
                n = rng.choice([0, 1, 2, 3, 5, 8, 13, 40, 100, 1000, 100000])
                args += [it, str(n).encode()]
            out.append(args)
        elif r < 0.85:
            out.append([b"TOPK.QUERY", key] + pick(rng.randint(1, 8)))
        elif r < 0.93:
            out.append([b"TOPK.COUNT", key] + pick(rng.randint(1, 8)))
        else:
            out.append([b"TOPK.LIST", key] + ([b"WITHCOUNT"] if rng.random() < 0.6 else []))
    return out


# (k, width, depth, items, decay): narrow decay-1 sketches (collisions, takeovers, stale heap
# counts: all exact), and decay < 1 on items that share no bucket (checked).
DIFF_CASES = [(1, 3, 2, 12, b"1"), (5, 4, 3, 40, b"1"), (10, 16, 4, 200, b"1"),
              (7, 1, 1, 9, b"1.0"), (50, 40, 5, 300, b"1"), (8, 2000, 4, 60, b"0.9"),
              (3, 500, 7, 25, b"0.5")]


@pytest.mark.parametrize("case", range(len(DIFF_CASES)))
def test_proxy_matches_model_where_deterministic(bp, case):
    """Seeded random TOPK.* sequences, one command at a time and then pipelined, through the
    proxy and the model: every raw reply byte for byte (binary items with NULs and the empty item
    among them)."""
    k, width, depth, n_items, decay = DIFF_CASES[case]
    rng = random.Random(4242 + case)
    items = [b"", b"a\0b", b"a\0c", b"\0x"] + [b"it:%d" % i for i in range(n_items)]
    if decay not in (b"1", b"1.0"):
        cols = [set() for _ in range(depth)]
        lonely = []
        for it in items:
            where = [bucket_index(it, width, r) for r in range(depth)]
            if not any(c in cols[r] for r, c in enumerate(where)):
                lonely.append(it)
                for r, c in enumerate(where):
                    cols[r].add(c)
        items = lonely
    key = b"diff:%d" % case
    sketches = {}
    problems = []
    with bp.raw(timeout=30) as conn:
        reserve = [b"TOPK.RESERVE", key, b"%d" % k, b"%d" % width, b"%d" % depth, decay]
        assert conn.command(*reserve) == b"OK"
        topk_reply(sketches, reserve)
        cmds = random_workload(rng, key, items, 300)
        for i, args in enumerate(cmds[:150]):
            want = topk_reply(sketches, args)
            conn.send(encode_command(*args))
            got = conn.read_reply_raw()
            if got != want and len(problems) < 5:
                problems.append(f"#{i} {format_command(args)[:150]}\n    proxy: {shorten(got)}"
                                f"\n    model: {shorten(want)}")
        rest = cmds[150:]
        conn.send(b"".join(encode_command(*args) for args in rest))
        for i, args in enumerate(rest):
            got = conn.read_reply_raw()
            want = topk_reply(sketches, args)
            if got != want and len(problems) < 5:
                problems.append(f"pipelined #{i} {format_command(args)[:150]}\n    proxy: "
                                f"{shorten(got)}\n    model: {shorten(want)}")
    assert not problems, "the proxy differs from the model:\n" + "\n".join(problems)
