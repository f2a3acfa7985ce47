"""BF.* byte-exactness: every case of tests/fixtures/bf/bf-cases.json (recorded against Redis with
RedisBloom) replayed through bloomproxy in front of a plain redis-server must give the recorded
raw RESP2 replies, byte for byte. Each case runs twice: with the default shard size and with
--bf-max-shard-bytes 64 (every sub-filter split over many keys), which must not change a byte.
The same cases replayed after HELLO 3 must give RedisBloom's RESP3 replies
(bf-resp3-expected.json, recorded after HELLO 3), in both shard modes too.
"""

import pytest

from bf_vectors import (FIXTURES, bf_data_keys, data_keys_of, format_command, key_hash_slot,
                        load_cases, model_reply, parse_data_key, prefix_belongs_to, replay_case,
                        shorten, upstream_keys)
from resp3_replay import Resp3Conn, with_resp3_replies

CASES = load_cases()
RESP3_CASES = with_resp3_replies(CASES, FIXTURES / "bf-resp3-expected.json")
SHARD_BYTES = 64

MODES = {
    "default": (),
    "sharded64": ("--bf-max-shard-bytes", str(SHARD_BYTES)),
}


def test_vectors_are_complete():
    names = [c["name"] for c in CASES]
    assert len(names) >= 14, names
    assert sum(len(c["cmds"]) for c in CASES) >= 300


def test_reference_model_agrees_with_vectors():
    """The Python model of a RedisBloom filter (bf_vectors.ModelFilter) that other BF tests use
    for exact expectations predicts every recorded reply it covers. No proxy involved."""
    compared = 0
    for case in CASES:
        filters = {}
        for args, expected in zip(case["cmds"], case["replies"]):
            if args[0].upper() in (b"SET", b"DEL", b"UNLINK", b"RENAME", b"BF.LOADCHUNK"):
                break  # key-level changes are outside the model: stop this case here
            got = model_reply(filters, args)
            if got is None:
                continue
            compared += 1
            assert got == expected, (f"model vs vector in {case['name']}: "
                                     f"{format_command(args)}\n  vector: {shorten(expected)}\n"
                                     f"  model:  {shorten(got)}")
    assert compared >= 200


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector_case(case, mode, proxy, redis_instance):
    p = proxy(*MODES[mode])
    with p.raw(timeout=30) as conn:
        problem = replay_case(conn, case)
    assert not problem, f"[{mode}] {problem}"

    # Whatever the case left behind upstream is laid out as documented: every data key belongs
    # to one of the case's keys and lies in that name's cluster slot, with 64-byte shards no key
    # is bigger, and a name that no longer exists (deleted, renamed away, never created because
    # the command failed) has no data keys left.
    direct = redis_instance.client()
    keys = upstream_keys(direct)
    for k in bf_data_keys(direct, keys):
        prefix = parse_data_key(k)[0]
        owners = [n for n in case["keys"] if prefix_belongs_to(prefix, n)]
        assert owners, f"[{mode}] data key {k!r} belongs to none of the case's keys {case['keys']}"
        assert key_hash_slot(k) == key_hash_slot(owners[0]), \
            f"[{mode}] data key {k!r} is not in the slot of {owners[0]!r}"
        if mode == "sharded64":
            assert direct.strlen(k) <= SHARD_BYTES, \
                f"[{mode}] data key {k!r} holds {direct.strlen(k)} bytes > {SHARD_BYTES}"
    for name in case["keys"]:
        if name not in keys:
            left = data_keys_of(direct, name, keys)
            assert not left, f"[{mode}] {name!r} does not exist but its data keys remain: {left[:5]}"


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", RESP3_CASES, ids=[c["name"] for c in RESP3_CASES])
def test_vector_case_resp3(case, mode, proxy):
    """The case after HELLO 3 on the connection: RedisBloom's RESP3 replies, byte for byte."""
    p = proxy(*MODES[mode])
    with Resp3Conn(p.port, timeout=30) as conn:
        conn.hello(3)
        problem = replay_case(conn, case)
    assert not problem, f"[{mode}, RESP3] {problem}"
