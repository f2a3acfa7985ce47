#!/usr/bin/env python3
"""Writes the TDIGEST.* seeds of the bf_args fuzzer (tests/fuzz/corpus/bf_args/td_*) from the
recorded TDIGEST commands (tests/fixtures/tdigest/tdigest-cases.json and tdigest-expected.json):
for each command name, a few argument lists of each recorded reply kind (an error line and its
text, or a good reply's type byte), the key renamed "k", as bf_args_fuzzer.cc's TDIGEST layout
reads them (tdigest_args_fuzz.h): a first byte with bit 7 set, the command picked by bits 0-3, its
case by bit 4, the separator by bit 5 (NUL, or '\\n' when an argument holds a NUL), then the
arguments after the name.

    python3 tests/fuzz/tdigest_seeds.py  # rewrites every td_* seed; other seeds are left alone
"""

import base64
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "tdigest"
CORPUS = ROOT / "tests" / "fuzz" / "corpus" / "bf_args"
# The order of kTdNames in tdigest_args_fuzz.h.
NAMES = ["TDIGEST.CREATE", "TDIGEST.RESET", "TDIGEST.ADD", "TDIGEST.MERGE", "TDIGEST.MIN",
         "TDIGEST.MAX", "TDIGEST.QUANTILE", "TDIGEST.CDF", "TDIGEST.TRIMMED_MEAN", "TDIGEST.RANK",
         "TDIGEST.REVRANK", "TDIGEST.BYRANK", "TDIGEST.BYREVRANK", "TDIGEST.INFO"]
PER_KIND = 3  # argument lists kept per command and reply kind
MAX_SEED = 512  # longer argument lists (the bulk ADDs) are left out


def arg_bytes(arg):
    return bytes.fromhex(arg["hex"]) if isinstance(arg, dict) else arg.encode()


def reply_kind(reply):
    """An error's line, or the reply's type byte for a good one."""
    return reply.split(b"\r\n", 1)[0] if reply.startswith(b"-") else reply[:1]


def recorded():
    """(name, args after the name with the key as "k", reply kind, lower) of every recorded
    TDIGEST command, in file order."""
    cases = json.loads((FIXTURES / "tdigest-cases.json").read_text())
    expected = {e["name"]: e["replies"]
                for e in json.loads((FIXTURES / "tdigest-expected.json").read_text())}
    for case in cases:
        for cmd, reply in zip(case["cmds"], expected[case["name"]]):
            name = cmd[0].upper() if isinstance(cmd[0], str) else ""
            if name not in NAMES:
                continue
            args = [arg_bytes(a) for a in cmd[1:]]
            if args:
                args[0] = b"k"
            yield name, args, reply_kind(base64.b64decode(reply)), cmd[0] == name.lower()


def seed(name, args, lower):
    if all(b"\0" not in a for a in args):
        separator, flags = b"\0", 0
    elif all(b"\n" not in a for a in args):
        separator, flags = b"\n", 0x20
    else:
        return None
    first = 0x80 | NAMES.index(name) | (0x10 if lower else 0) | flags
    return bytes([first]) + separator.join(args)


def main():
    for old in CORPUS.glob("td_*"):
        old.unlink()
    kept, seen, count = {}, set(), 0
    for name, args, kind, lower in recorded():
        data = seed(name, args, lower)
        if data is None or len(data) > MAX_SEED or data in seen:
            continue
        if kept.get((name, kind), 0) >= PER_KIND:
            continue
        seen.add(data)
        kept[(name, kind)] = kept.get((name, kind), 0) + 1
        count += 1
        label = "ok"
        if kind.startswith(b"-"):
            label = "".join(c if c.isalnum() else "_" for c in kind[1:40].decode(errors="replace"))
        (CORPUS / f"td_{name[8:].lower()}_{label}_{count}").write_bytes(data)
    # No pick (bits 0-3 = 14, 15): the name is the first argument, as sent.
    for label, data in [("raw_name", b"\x8eTDigest.Merge\x00k\x002\x00a\x00b\x00override"),
                        ("unknown_name", b"\x8fTDIGEST.NOPE\x00k\x00x")]:
        (CORPUS / f"td_{label}").write_bytes(data)
        count += 1
    print(f"{count} TDIGEST seeds in {CORPUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
