"""The cuckoo-filter model (cf_model.py) against RedisBloom's recorded vectors, then bloomproxy
against the model: seeded random CF.* sequences whose every raw reply, and every few commands
the whole CF.SCANDUMP, must be the model's byte for byte (slot layout, kicks and their undo,
growth, deletion and compaction), with one data key per sub-filter and with sub-filters split
over data keys of at most 64 bytes.
"""

import base64
import json

from bf_vectors import decode_arg, format_command, shorten
from bp_helpers import REPO
from cf_model import model_reply

FIXTURES = REPO / "tests" / "fixtures" / "cf"


def load_cf_cases():
    """[(name, [command], [raw reply])] of cf-cases.json with cf-expected.json (RESP2)."""
    expected = {e["name"]: e["replies"] for e in json.loads(
        (FIXTURES / "cf-expected.json").read_text())}
    out = []
    for case in json.loads((FIXTURES / "cf-cases.json").read_text()):
        cmds = [[decode_arg(a) for a in cmd] for cmd in case["cmds"]]
        replies = [base64.b64decode(r) for r in expected[case["name"]]]
        assert len(cmds) == len(replies), case["name"]
        out.append((case["name"], cmds, replies))
    return out


def test_model_agrees_with_vectors():
    """Every recorded reply the model covers, case by case from fresh keys, until a command
    outside the model (the state after it is unknown to the model)."""
    compared, problems = 0, []
    for name, cmds, replies in load_cf_cases():
        filters = {}
        for i, (args, expected) in enumerate(zip(cmds, replies)):
            got = model_reply(filters, args)
            if got is None:
                break
            compared += 1
            if got != expected and len(problems) < 10:
                problems.append(f"{name} #{i}: {format_command(args)}\n"
                                f"    recorded: {shorten(expected)}\n    model:    {shorten(got)}")
    assert not problems, "the model differs from RedisBloom:\n" + "\n".join(problems)
    assert compared >= 3000, f"only {compared} recorded replies compared"
