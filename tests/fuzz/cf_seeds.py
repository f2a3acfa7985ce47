#!/usr/bin/env python3
"""Writes the CF.* seeds of the bf_args fuzzer (tests/fuzz/corpus/bf_args/cf_*) from the recorded
CF commands (tests/fixtures/cf/cf-cases.json and cf-expected.json): for each command name, a few
argument lists of each recorded reply kind (an error line and its text, or a good reply), the key
renamed "k", as bf_args_fuzzer.cc's CF layout reads them (cf_args_fuzz.h): a first byte with bit 6
set, the command picked by bits 0-3, its case by bit 4, the separator by bit 5 (NUL, or '\\n' when
an argument holds a NUL), then the arguments after the name.

    python3 tests/fuzz/cf_seeds.py      # rewrites every cf_* seed; other seeds are left alone
"""

import base64
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "cf"
CORPUS = ROOT / "tests" / "fuzz" / "corpus" / "bf_args"
# The order of kCfNames in cf_args_fuzz.h.
NAMES = ["CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX", "CF.EXISTS",
         "CF.MEXISTS", "CF.COUNT", "CF.DEL", "CF.COMPACT", "CF.SCANDUMP", "CF.LOADCHUNK",
         "CF.INFO", "CF.DEBUG"]
PER_KIND = 3  # argument lists kept per command and reply kind
MAX_ARG = 64  # longer arguments (LOADCHUNK's slot chunks) are left out; headers are 38 bytes


def arg_bytes(arg):
    return bytes.fromhex(arg["hex"]) if isinstance(arg, dict) else arg.encode()


def reply_kind(reply):
    """An error's line, or the reply's type byte for a good one."""
    return reply.split(b"\r\n", 1)[0] if reply.startswith(b"-") else reply[:1]


def recorded():
    """(name, args after the name with the key as "k", reply kind) of every recorded CF
    command, in file order."""
    cases = json.loads((FIXTURES / "cf-cases.json").read_text())
    expected = {e["name"]: e["replies"] for e in json.loads((FIXTURES / "cf-expected.json")
                                                            .read_text())}
    for case in cases:
        for cmd, reply in zip(case["cmds"], expected[case["name"]]):
            name = cmd[0].upper() if isinstance(cmd[0], str) else ""
            if name not in NAMES:
                continue
            args = [arg_bytes(a) for a in cmd[1:]]
            if args:
                args[0] = b"k"
            yield name, args, reply_kind(base64.b64decode(reply)), cmd[0] != name


def seed(name, args, lower):
    if all(b"\0" not in a for a in args):
        separator, flags = b"\0", 0
    elif all(b"\n" not in a for a in args):
        separator, flags = b"\n", 0x20
    else:
        return None
    first = 0x40 | NAMES.index(name) | (0x10 if lower else 0) | flags
    return bytes([first]) + separator.join(args)


def main():
    for old in CORPUS.glob("cf_*"):
        old.unlink()
    kept, seen, count = {}, set(), 0
    for name, args, kind, lower in recorded():
        if any(len(a) > MAX_ARG for a in args) or kept.get((name, kind), 0) >= PER_KIND:
            continue
        data = seed(name, args, lower)
        if data is None or data in seen:
            continue
        seen.add(data)
        kept[(name, kind)] = kept.get((name, kind), 0) + 1
        count += 1
        label = "ok"
        if kind.startswith(b"-"):
            label = "".join(c if c.isalnum() else "_" for c in kind[1:25].decode(errors="replace"))
        (CORPUS / f"cf_{name[3:].lower()}_{label}_{count}").write_bytes(data)
    # No pick (bits 0-3 = 14, 15): the name is the first argument, as sent.
    for label, data in [("raw_name", b"\x4eCf.ReSeRvE\x00k\x00100\x00bucketsize\x004"),
                        ("unknown_name", b"\x4fCF.NOPE\x00k\x00x")]:
        (CORPUS / f"cf_{label}").write_bytes(data)
        count += 1
    print(f"{count} CF seeds in {CORPUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
