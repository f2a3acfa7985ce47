"""Helpers of the CMS.* integration tests (test_cms*.py): the recorded RedisBloom vectors in
tests/fixtures/cms/ (the format of the BF vectors: replay each case on fresh keys, compare every
raw reply), the case keys mapped for a cluster or a sharding proxy, a reference model of a
RedisBloom count-min sketch (MurmurHash2 seeded with the row, u32 saturating cells, a wrapping
64-bit count), and a reader of the sketch layout bloomproxy keeps upstream (docs: the CMS key
layout): the name's hash (cms, id, width, depth, part), parts P:cms:<id>:<p> of a 16-byte header
and big-endian u32 cells, and the marker P:cms:m:<name> holding "1" (filters' markers are
P:bf:m:<name>).

Only the Python standard library (plus bp_helpers and bf_vectors) is used.
"""

import re
import socket
import struct
import subprocess
import threading

from bf_vectors import format_command, key_hash_slot, parse_data_key, prefix_belongs_to
from bf_vectors import load_cases as load_bf_format
from bp_helpers import HOST, REPO, Incomplete, parse_resp

FIXTURES = REPO / "tests" / "fixtures" / "cms"
CASES_PATH = FIXTURES / "cms-cases.json"
EXPECTED_PATH = FIXTURES / "cms-expected.json"

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
KEY_MISSING = b"-CMS: key does not exist\r\n"
INCRBY_OVERFLOW = b"-CMS: INCRBY overflow\r\n"
MERGE_OVERFLOW = b"-CMS: MERGE overflow\r\n"
COPY_REFUSED = b"-ERR not supported for this module key\r\n"
CELL_MAX = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------------------------
# Vectors


def load_cases():
    """The cases of cms-cases.json joined with cms-expected.json (bf_vectors.load_cases)."""
    return load_bf_format(CASES_PATH, EXPECTED_PATH)


# Where the vectors' commands have their keys.
ALL_KEYS = {b"DEL", b"EXISTS", b"UNLINK", b"TOUCH"}  # every argument
TWO_KEYS = {b"RENAME", b"RENAMENX", b"COPY"}  # a cluster cannot split these: one slot or CROSSSLOT


def key_positions(args):
    """Indexes of `args` that hold key names. CMS.MERGE: the destination and every argument
    after numkeys up to WEIGHTS (the weights are numbers, never keys)."""
    name = args[0].upper()
    if name in ALL_KEYS:
        return list(range(1, len(args)))
    if name in TWO_KEYS:
        return list(range(1, min(3, len(args))))
    if name == b"CMS.MERGE":
        out = [1] if len(args) > 1 else []
        for i in range(3, len(args)):
            if args[i].upper() == b"WEIGHTS":
                break
            out.append(i)
        return out
    return list(range(1, min(2, len(args))))


def with_keys(case, rename):
    """`case` with every key k (at a key position) replaced by rename(k); items and other
    arguments stay as they are (test_cms_vectors checks that this is sound)."""
    mapping = {k: rename(k) for k in case["keys"]}
    cmds = []
    for args in case["cmds"]:
        out = list(args)
        for i in key_positions(args):
            out[i] = mapping.get(args[i], args[i])
        cmds.append(out)
    return dict(case, keys=[mapping[k] for k in case["keys"]], cmds=cmds)


def tagged(case, tag):
    """Every key of `case` given the hash tag `tag` (bytes with braces): one slot, one server."""
    return with_keys(case, lambda k: tag + k)


def cut_case(case, index, last_reply=None):
    """`case` ending before command `index`, or at it with `last_reply` as its answer."""
    if last_reply is None:
        return dict(case, cmds=case["cmds"][:index], replies=case["replies"][:index])
    return dict(case, cmds=case["cmds"][:index + 1],
                replies=case["replies"][:index] + [last_reply])


def merge_names(args):
    """The distinct key names of a CMS.MERGE that passes arity (>= 4 arguments), else []."""
    if args[0].upper() != b"CMS.MERGE" or len(args) < 4:
        return []
    return sorted({args[i] for i in key_positions(args)})


def as_cluster_answers(case):
    """`case` as a client of bloomproxy in front of a Redis Cluster sees it with its keys as
    recorded: a RENAME/RENAMENX/COPY across slots answers CROSSSLOT and the case ends there; a
    CMS.MERGE across slots ends the case before it (its answer is checked by test_cms.py:
    which of CROSSSLOT and RedisBloom's own errors comes first is not recorded)."""
    for i, args in enumerate(case["cmds"]):
        if args[0].upper() in TWO_KEYS and len(args) >= 3 and \
                key_hash_slot(args[1]) != key_hash_slot(args[2]):
            return cut_case(case, i, CROSSSLOT)
        if len({key_hash_slot(k) for k in merge_names(args)}) > 1:
            return cut_case(case, i)
    return case


# ---------------------------------------------------------------------------------------------
# The same cases read by redis-cli: through the proxy, and from a server that answers the
# recorded bytes; redis-cli's output (--no-raw: types shown) must be the same.


def cli_quote(arg):
    """`arg` (bytes) as one redis-cli argument: double quotes, every byte but [A-Za-z0-9] as
    \\xHH (sdssplitargs' escapes), so binary items and empty strings pass as they are."""
    out = []
    for b in arg:
        ch = chr(b)
        out.append(ch if ch.isascii() and ch.isalnum() else "\\x%02x" % b)
    return '"' + "".join(out) + '"'


def cli_script(cmds):
    return "".join(" ".join(cli_quote(a) for a in args) + "\n" for args in cmds).encode()


def run_cli(port, cmds, timeout=30):
    res = subprocess.run(["redis-cli", "-h", HOST, "-p", str(port), "--no-raw"],
                         input=cli_script(cmds), capture_output=True, timeout=timeout)
    assert res.returncode == 0 and not res.stderr, res
    return res.stdout


class RecordedServer:
    """A loopback server answering each command of `cmds`, in order, with the recorded raw
    reply; commands a client sends on its own get what Redis would give: COMMAND DOCS (redis-cli)
    an empty array, CLIENT SETINFO and QUIT (node-redis) +OK. Records what it received in `got`
    and any command out of order in `problems`."""

    def __init__(self, cmds, replies):
        self.expected = list(zip(cmds, replies))
        self.got = []
        self.problems = []
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _answer(self, args):
        if args and args[0].upper() == b"COMMAND":
            return b"*0\r\n"
        if [a.upper() for a in args[:2]] == [b"CLIENT", b"SETINFO"] or args == [b"QUIT"]:
            return b"+OK\r\n"
        n = len(self.got)
        self.got.append(args)
        if n >= len(self.expected) or self.expected[n][0] != args:
            self.problems.append(f"command #{n} {format_command(args)} not expected")
            return b"-ERR unexpected command\r\n"
        return self.expected[n][1]

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            buf = bytearray()
            with conn:
                while True:
                    data = conn.recv(1 << 16)
                    if not data:
                        break
                    buf += data
                    while True:
                        try:
                            args, end = parse_resp(buf, 0)
                        except Incomplete:
                            break
                        del buf[:end]
                        conn.sendall(self._answer([bytes(a) for a in args]))

    def close(self):
        self.sock.close()


# ---------------------------------------------------------------------------------------------
# A reference model of RedisBloom's count-min sketch (shared/spec/cms-commands.md). The
# vectors check it (test_cms_vectors.test_reference_model_agrees_with_vectors), so the other
# tests can use it for exact expectations.


def murmur2(data, seed):
    """Austin Appleby's 32-bit MurmurHash2 (little-endian blocks), as RedisBloom's CMS uses."""
    m = 0x5bd1e995
    n = len(data)
    h = (seed ^ n) & 0xFFFFFFFF
    nblocks = n // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = data[4 * nblocks:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class MergeOverflow(Exception):
    pass


def checked_sum(terms):
    """The sum of `terms` with every term and every partial sum in int64, else MergeOverflow."""
    total = 0
    for t in terms:
        total += t
        if not (-(1 << 63) <= t < 1 << 63 and -(1 << 63) <= total < 1 << 63):
            raise MergeOverflow()
    return total


class ModelSketch:
    """width*depth u32 cells (row-major) and a count wrapping mod 2^64."""

    def __init__(self, width, depth):
        self.width, self.depth = width, depth
        self.count = 0
        self.cells = [0] * (width * depth)

    def item_cells(self, item):
        return [murmur2(item, row) % self.width + row * self.width for row in range(self.depth)]

    def incrby(self, item, v):
        """Adds v to the item's cells (saturating) and the count (wrapping); the minimum of its
        cells after the update (CELL_MAX: the reply element is the overflow error)."""
        cells = self.item_cells(item)
        for c in cells:
            self.cells[c] = min(self.cells[c] + v, CELL_MAX)
        self.count = (self.count + v) & M64
        return min(self.cells[c] for c in cells)

    def query(self, item):
        return min(self.cells[c] for c in self.item_cells(item))

    def merge_from(self, sources, weights):
        """Replaces the cells and count with the weighted sums; MergeOverflow leaves it as it
        was (RedisBloom checks every cell and the count before writing, each step of a sum in
        int64 with overflow detection)."""
        cells = [checked_sum(s.cells[j] * w for s, w in zip(sources, weights))
                 for j in range(len(self.cells))]
        count = checked_sum(s.count * w for s, w in zip(sources, weights))
        if any(c < 0 or c > CELL_MAX for c in cells) or count < 0:
            raise MergeOverflow()
        self.cells, self.count = cells, count

    def incrby_reply(self, pairs):
        elems = []
        for item, v in pairs:
            low = self.incrby(item, v)
            elems.append(INCRBY_OVERFLOW if low == CELL_MAX else b":%d\r\n" % low)
        return b"*%d\r\n" % len(elems) + b"".join(elems)

    def query_reply(self, items):
        return b"*%d\r\n" % len(items) + b"".join(b":%d\r\n" % self.query(i) for i in items)

    def info_reply(self):
        return (b"*6\r\n+width\r\n:%d\r\n+depth\r\n:%d\r\n+count\r\n:%d\r\n"
                % (self.width, self.depth, signed64(self.count)))


STRICT_INT = re.compile(rb"\A(0|-?[1-9][0-9]*)\Z")


def strict_int(arg):
    """Redis's string2ll: no sign '+', no leading zeros, no spaces; None when not one."""
    if not STRICT_INT.match(arg):
        return None
    v = int(arg)
    return v if -(1 << 63) <= v < 1 << 63 else None


# The value in a model's map of a key that exists but is no sketch the model holds.
FOREIGN = object()


def _model_merge(sketches, args):
    dest = sketches[args[1]]
    n = strict_int(args[2])
    if dest is None or n is None or n <= 0:
        return None
    rest = args[3:]
    if len(rest) == n:
        names, weights = rest, [b"1"] * n
    elif len(rest) == 2 * n + 1 and rest[n].upper() == b"WEIGHTS":
        names, weights = rest[:n], rest[n + 1:]
    else:
        return None
    ws = [strict_int(w) for w in weights]
    sources = [sketches.get(k) for k in names]
    if None in ws or None in sources or FOREIGN in sources:
        return None
    if any((s.width, s.depth) != (dest.width, dest.depth) for s in sources):
        return b"-CMS: width/depth is not equal\r\n"
    try:
        dest.merge_from(sources, ws)
    except MergeOverflow:
        return MERGE_OVERFLOW
    return b"+OK\r\n"


def model_reply(sketches, args):
    """The raw reply the model predicts for one command of a vector case, or None when it does
    not cover it (argument errors, INITBYPROB's float maths, keys it does not know). `sketches`
    maps key -> ModelSketch (or FOREIGN) and is updated."""
    name = args[0].upper()
    if len(args) < 2:
        return None
    sketch = sketches.get(args[1])
    if name == b"CMS.INITBYDIM" and len(args) == 4:
        if sketch is not None:
            return b"-CMS: key already exists\r\n"
        w, d = strict_int(args[2]), strict_int(args[3])
        if w is None or d is None or not (1 <= w and 1 <= d and w * d <= 1 << 22):
            return None
        sketches[args[1]] = ModelSketch(w, d)
        return b"+OK\r\n"
    if sketch is None or sketch is FOREIGN:
        return None
    if name == b"CMS.INCRBY" and len(args) >= 4 and len(args) % 2 == 0:
        pairs = [(args[i], strict_int(args[i + 1])) for i in range(2, len(args), 2)]
        if any(v is None or v < 0 for _, v in pairs):
            return None
        return sketch.incrby_reply(pairs)
    if name == b"CMS.QUERY" and len(args) >= 3:
        return sketch.query_reply(args[2:])
    if name == b"CMS.INFO" and len(args) == 2:
        return sketch.info_reply()
    if name == b"CMS.MERGE" and len(args) >= 4:
        return _model_merge(sketches, args)
    return None


# ---------------------------------------------------------------------------------------------
# The layout upstream


PART_KEY_RE = re.compile(rb"\A(?P<prefix>.*):cms:(?P<id>[0-9a-f]{16}):(?P<part>0|[1-9][0-9]*)\Z",
                         re.S)
PART_HEADER = 16
# The marker of a sketch, and of a filter: <prefix><infix><name>.
CMS_MARKER, CMS_MARKER_VALUE = b":cms:m:", b"1"
BF_MARKER = b":bf:m:"


def parse_part_key(key):
    """(prefix, id, part) of a sketch's part key, or None."""
    m = PART_KEY_RE.match(key)
    if not m:
        return None
    return m.group("prefix"), m.group("id"), int(m.group("part"))


class KeyIndex:
    """The upstream keys that look internal, grouped by prefix once (a sketch in 64-byte parts
    can have 100,000s of keys): parts {prefix: [((id, part), key)]}, filters' data keys
    {prefix: [key]}, markers {(prefix, name): [key]} of sketches (cms) and filters (bf)."""

    def __init__(self, keys):
        self.parts, self.data = {}, {}
        self.markers = {b"cms": {}, b"bf": {}}
        for k in keys:
            parsed = parse_part_key(k)
            if parsed:
                self.parts.setdefault(parsed[0], []).append((parsed[1:], k))
                continue
            parsed = parse_data_key(k)
            if parsed:
                self.data.setdefault(parsed[0], []).append(k)
            for kind, infix in ((b"cms", CMS_MARKER), (b"bf", BF_MARKER)):
                for m in re.finditer(re.escape(infix), k):
                    self.markers[kind].setdefault((k[:m.start()], k[m.end():]), []).append(k)

    def prefixes_of(self, table, name):
        return [p for p in table if prefix_belongs_to(p, name)]

    def markers_of(self, name, kinds=(b"cms", b"bf")):
        return sorted(k for kind in kinds for (p, rest), ks in self.markers[kind].items()
                      if rest == name and prefix_belongs_to(p, name) for k in ks)


def as_index(keys):
    return keys if isinstance(keys, KeyIndex) else KeyIndex(keys)


def part_keys_of(name, keys):
    """The part keys among `keys` (or a KeyIndex) whose prefix belongs to sketch `name`, sorted
    by id and part."""
    name = name.encode() if isinstance(name, str) else name
    index = as_index(keys)
    found = [pk for p in index.prefixes_of(index.parts, name) for pk in index.parts[p]]
    return [k for _, k in sorted(found)]


def internal_keys_of(name, keys):
    """Every internal key among `keys` (or a KeyIndex) of sketch or filter `name`: parts, the
    filters' data keys, the marker."""
    name = name.encode() if isinstance(name, str) else name
    index = as_index(keys)
    data = sorted(k for p in index.prefixes_of(index.data, name) for k in index.data[p])
    return part_keys_of(name, index) + data + index.markers_of(name)


def get_all(client, keys, chunk=10000):
    """GET of every key, pipelined (a sketch in 64-byte parts can have 100,000s of them)."""
    out = []
    for i in range(0, len(keys), chunk):
        pipe = client.pipeline(transaction=False)
        for k in keys[i:i + chunk]:
            pipe.get(k)
        out += pipe.execute()
    return out


def read_sketch(client, name, keys=None):
    """The sketch `name` as bloomproxy keeps it on the server `client` talks to, checked against
    the documented layout: {"width", "depth", "part", "id", "count" (unsigned), "version",
    "cells", "parts" (keys)}. AssertionError on anything out of place."""
    name = name.encode() if isinstance(name, str) else name
    keys = as_index(client.keys("*") if keys is None else keys)
    meta = client.hgetall(name)
    assert meta.get(b"cms") == b"1", f"{name!r}: hash {meta!r} is not a CMS layout v1"
    width, depth, per_part = (int(meta[f]) for f in (b"width", b"depth", b"part"))
    sid = meta[b"id"]
    assert re.fullmatch(rb"[0-9a-f]{16}", sid), f"{name!r}: id {sid!r}"
    total = width * depth
    nparts = -(-total // per_part)
    parts = part_keys_of(name, keys)
    assert [parse_part_key(k)[1:] for k in parts] == [(sid, p) for p in range(nparts)], \
        f"{name!r} ({width}x{depth}, {per_part} cells a part, id {sid!r}): parts {parts[:6]}"
    cells = []
    header = b""
    for p, (key, data) in enumerate(zip(parts, get_all(client, parts))):
        n = min(per_part, total - p * per_part)
        assert len(data) == PART_HEADER + 4 * n, f"{key!r}: {len(data)} bytes for {n} cells"
        if p == 0:
            header = data[:PART_HEADER]
        else:
            assert data[:PART_HEADER] == b"\0" * PART_HEADER, f"{key!r}: header {data[:16]!r}"
        cells += struct.unpack(">%dI" % n, data[PART_HEADER:])
    markers = keys.markers_of(name)
    assert markers == keys.markers_of(name, [b"cms"]) and len(markers) == 1 and \
        client.get(markers[0]) == CMS_MARKER_VALUE, f"{name!r}: markers {markers}"
    count, version = struct.unpack(">QQ", header)
    return {"width": width, "depth": depth, "part": per_part, "id": sid, "count": count,
            "version": version, "cells": list(cells), "parts": parts}


def check_layout(where, names, owner_of, client_of, label=""):
    """Every key in `where` ({key: server}) is one of `names` or an internal key of one, lying on
    the server holding the name (owner_of(name)) and in its cluster slot; a name that does not
    exist has no internal keys left; a sketch's keys match the documented layout (read_sketch).
    Returns {name: its internal keys} of the names that have some."""
    names = [n.encode() if isinstance(n, str) else n for n in names]
    keys = set(where)
    index = KeyIndex(keys)
    out = {}
    for name in names:
        internal = internal_keys_of(name, index)
        if not internal:
            continue
        assert name in keys, f"{label} {name!r} does not exist but its keys remain: {internal[:5]}"
        owner = owner_of(name)
        for k in internal:
            assert key_hash_slot(k) == key_hash_slot(name), \
                f"{label} {k!r} of {name!r} is not in the name's slot"
            assert where[k] == owner, f"{label} {k!r} of {name!r} on {where[k]}, name on {owner}"
        if part_keys_of(name, index):
            client = client_of(owner)
            if client.type(name) == b"hash":
                read_sketch(client, name, index)
        out[name] = internal
    stray = keys - set(names) - {k for ks in out.values() for k in ks}
    assert not stray, f"{label} keys that belong to no name of the case: {sorted(stray)[:8]}"
    return out
