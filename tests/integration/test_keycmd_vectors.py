"""Key commands on filters and sketches, byte for byte with RedisBloom: the cases of
tests/fixtures/keycmd/ (recorded against Redis with RedisBloom) replayed through bloomproxy in
front of a plain redis-server, each reply compared with the recorded raw RESP2 bytes.

Issue 13 is in progress: the cases below that need what is still to come run once it lands
(PENDING says what each waits for). Every other case must match, byte for byte."""

import base64
import json
from pathlib import Path

import pytest

from bf_vectors import decode_arg, format_command, shorten
from bp_helpers import RawConn, encode_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "keycmd"

PENDING = {}


def load_cases():
    cases = json.loads((FIXTURES / "keycmd-cases.json").read_text())
    expected = {e["name"]: e["replies"] for e in
                json.loads((FIXTURES / "keycmd-expected.json").read_text())}
    out = []
    for case in cases:
        replies = [base64.b64decode(r) for r in expected[case["name"]]]
        cmds = [[decode_arg(a) for a in cmd] for cmd in case["cmds"]]
        assert len(cmds) == len(replies), case["name"]
        out.append({"name": case["name"], "cmds": cmds, "replies": replies})
    return out


CASES = load_cases()
RUN = [c for c in CASES if c["name"] not in PENDING]


def test_vectors_are_complete():
    assert len(CASES) == 13 and sum(len(c["cmds"]) for c in CASES) == 136
    assert set(PENDING) <= {c["name"] for c in CASES}


@pytest.mark.parametrize("case", RUN, ids=[c["name"] for c in RUN])
def test_keycmd_case(case, bp, redis_instance):
    with RawConn(redis_instance.port) as direct:
        direct.send(encode_command("FLUSHALL"))
        assert direct.read_reply_raw() == b"+OK\r\n"
    problems = []
    with bp.raw(timeout=30) as conn:
        for i, (args, expected) in enumerate(zip(case["cmds"], case["replies"])):
            conn.send(encode_command(*args))
            got = conn.read_reply_raw()
            if got != expected:
                problems.append(f"  command #{i}: {format_command(args)}\n"
                                f"    expected: {shorten(expected)}\n    got:      {shorten(got)}")
    assert not problems, f"case {case['name']}:\n" + "\n".join(problems)
