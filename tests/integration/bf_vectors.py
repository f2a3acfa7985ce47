"""Helpers of the BF.* integration tests (test_bf_*.py): the recorded RedisBloom vectors in
tests/fixtures/bf/, RedisBloom's sizing formulas, the dump header layout, Redis Cluster key
slots and a look at how bloomproxy lays a filter out in the upstream.

Only the Python standard library (plus bp_helpers) is used.
"""

import base64
import json
import math
import re
import struct

from bp_helpers import REPO, Err, encode_command, parse_resp

FIXTURES = REPO / "tests" / "fixtures" / "bf"
CASES_PATH = FIXTURES / "bf-cases.json"
EXPECTED_PATH = FIXTURES / "bf-expected.json"

BF_COMMANDS = ("bf.reserve", "bf.add", "bf.madd", "bf.insert", "bf.exists", "bf.mexists",
               "bf.info", "bf.card", "bf.debug", "bf.scandump", "bf.loadchunk")

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
MAX_DUMP_CHUNK = 16 * 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Vectors


def decode_arg(arg):
    """A case argument: a string (UTF-8) or {"hex": ...} for binary bytes."""
    if isinstance(arg, str):
        return arg.encode("utf-8")
    if isinstance(arg, dict) and set(arg) == {"hex"}:
        return bytes.fromhex(arg["hex"])
    raise ValueError(f"unexpected argument in the BF vectors: {arg!r}")


def load_cases(cases_path=CASES_PATH, expected_path=EXPECTED_PATH):
    """The cases of a recorded set (bf-cases.json joined with bf-expected.json by default; the
    CMS and CF sets have the same format), in file order:
    [{"name", "keys": [bytes], "cmds": [[bytes]], "replies": [bytes]}]."""
    cases = json.loads(cases_path.read_text())
    expected = json.loads(expected_path.read_text())
    by_name = {e["name"]: e for e in expected}
    assert len(by_name) == len(expected), f"duplicate case names in {expected_path.name}"
    out = []
    for case in cases:
        name = case["name"]
        assert name in by_name, f"case {name!r} has no expected replies"
        replies = [base64.b64decode(r) for r in by_name[name]["replies"]]
        cmds = [[decode_arg(a) for a in cmd] for cmd in case["cmds"]]
        assert len(replies) == len(cmds), \
            f"case {name!r}: {len(cmds)} commands but {len(replies)} expected replies"
        out.append({"name": name, "keys": [decode_arg(k) for k in case["keys"]],
                    "cmds": cmds, "replies": replies})
    assert len({c["name"] for c in out}) == len(out), f"duplicate case names in {cases_path.name}"
    return out


def shorten(data, limit=300):
    """repr of bytes, cut to `limit` bytes with the total length noted."""
    if data is None:
        return "None"
    if len(data) <= limit:
        return repr(data)
    return f"{data[:limit]!r}... ({len(data)} bytes in all)"


def format_command(args, limit=160):
    parts = []
    for a in args:
        text = a.decode("utf-8", "backslashreplace") if isinstance(a, bytes) else str(a)
        parts.append(text if text and " " not in text and text.isprintable() else repr(text))
    line = " ".join(parts)
    if len(line) > limit:
        line = line[:limit] + f" ... ({len(args)} args)"
    return line


def replay_case(conn, case, max_report=3):
    """Deletes the case's keys through `conn` (a RawConn to the proxy), then sends each command
    alone and reads exactly one raw reply. Returns a failure message ('' when all replies are
    byte-identical to the recorded ones)."""
    if case["keys"]:
        conn.send(encode_command("DEL", *case["keys"]))
        conn.read_reply_raw()
    problems = []
    mismatches = 0
    for i, (args, expected) in enumerate(zip(case["cmds"], case["replies"])):
        conn.send(encode_command(*args))
        got = conn.read_reply_raw()
        if got != expected:
            mismatches += 1
            if len(problems) < max_report:
                problems.append(f"  command #{i}: {format_command(args)}\n"
                                f"    expected: {shorten(expected)}\n"
                                f"    got:      {shorten(got)}")
    if not mismatches:
        return ""
    return (f"case {case['name']}: {mismatches} of {len(case['cmds'])} replies differ "
            f"(first {len(problems)} shown)\n" + "\n".join(problems))


# ---------------------------------------------------------------------------------------------
# RedisBloom maths (docs/bf-compatibility.md, "Sizing")

LN2_SQUARED = 0.480453013918201
LN2 = 0.693147180559945


def link_geometry(capacity, error):
    """(bytes, bits, k, bpe) of one sub-filter of `capacity` items at its own `error`."""
    bpe = -(math.log(error) / LN2_SQUARED)
    bits0 = int(capacity * bpe)
    if bits0 == 0:
        bits0 = 1
    nbytes = -(-bits0 // 64) * 8
    return nbytes, nbytes * 8, int(math.ceil(LN2 * bpe)), bpe


def chain_links(error, capacity, expansion=2, nonscaling=False, n=1):
    """[(capacity, error, bytes)] of the first `n` sub-filters of a chain."""
    if nonscaling:
        nbytes = link_geometry(capacity, error)[0]
        return [(capacity, error, nbytes)]
    out = []
    for i in range(n):
        cap = capacity * expansion ** i
        err = error * 0.5 ** (i + 1)
        out.append((cap, err, link_geometry(cap, err)[0]))
    return out


def info_size(links):
    """BF.INFO Size of a chain with these sub-filters."""
    return 32 + 64 * len(links) + sum(b for _, _, b in links)


def filters_needed(total_items, capacity, expansion):
    """Sub-filters a sequential run of `total_items` successful adds ends with."""
    n, room = 1, capacity
    while room < total_items:
        room += capacity * expansion ** n
        n += 1
    return n


def info_reply(capacity, size, filters, items, expansion):
    """Raw bytes of a full BF.INFO reply (expansion None = non-scaling)."""
    exp = b"$-1\r\n" if expansion is None else b":%d\r\n" % expansion
    return (b"*10\r\n+Capacity\r\n:%d\r\n+Size\r\n:%d\r\n+Number of filters\r\n:%d\r\n"
            b"+Number of items inserted\r\n:%d\r\n+Expansion rate\r\n%s"
            % (capacity, size, filters, items, exp))


def parse_info(reply):
    """A parsed full BF.INFO reply (list) -> {name: value}."""
    assert isinstance(reply, list) and len(reply) == 10, f"not a BF.INFO reply: {reply!r}"
    return {bytes(reply[i]).decode(): reply[i + 1] for i in range(0, 10, 2)}


HEADER_FIXED = struct.Struct("<QIII")
HEADER_LINK = struct.Struct("<QQQddIQB")


def parse_dump_header(data):
    """A SCANDUMP header -> {"total", "options", "expansion", "links": [{...}]}."""
    total, n, options, expansion = HEADER_FIXED.unpack_from(data, 0)
    assert len(data) == HEADER_FIXED.size + n * HEADER_LINK.size, \
        f"header of {len(data)} bytes for {n} links"
    links = []
    for i in range(n):
        nbytes, bits, items, error, bpe, k, capacity, n2 = HEADER_LINK.unpack_from(
            data, HEADER_FIXED.size + i * HEADER_LINK.size)
        links.append({"bytes": nbytes, "bits": bits, "items": items, "error": error,
                      "bpe": bpe, "k": k, "capacity": capacity, "n2": n2})
    return {"total": total, "options": options, "expansion": expansion, "links": links}


def scandump_all(conn, key, max_chunks=10000):
    """Every SCANDUMP reply of `key` through RawConn `conn`, raw, from iterator 0 until the
    [0, ""] terminator (included). Returns [(iterator sent, raw reply, parsed [it, data])]."""
    out = []
    it = 0
    for _ in range(max_chunks):
        conn.send(encode_command("BF.SCANDUMP", key, str(it)))
        raw = conn.read_reply_raw()
        parsed = parse_resp(raw)[0]
        out.append((it, raw, parsed))
        assert not isinstance(parsed, Err), f"SCANDUMP {key!r} {it}: {raw!r}"
        assert isinstance(parsed, list) and len(parsed) == 2, f"SCANDUMP reply {raw[:100]!r}"
        if parsed[0] == 0:
            return out
        it = parsed[0]
    raise AssertionError(f"SCANDUMP of {key!r} did not end within {max_chunks} chunks")


def run_commands(conn, commands):
    """Sends each command alone on RawConn `conn`; returns the list of raw replies."""
    out = []
    for args in commands:
        conn.send(encode_command(*args))
        out.append(conn.read_reply_raw())
    return out


# ---------------------------------------------------------------------------------------------
# Redis Cluster key slots (cluster.c keyHashSlot, CRC16/XMODEM)

def _crc16_table():
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC16_TABLE = _crc16_table()


def crc16(data):
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16_TABLE[((crc >> 8) ^ b) & 0xFF]
    return crc


def key_hash_slot(key):
    """Redis Cluster slot of `key` (bytes or str), hash tags included."""
    if isinstance(key, str):
        key = key.encode()
    start = key.find(b"{")
    if start != -1:
        end = key.find(b"}", start + 1)
        if end != -1 and end != start + 1:
            key = key[start + 1:end]
    return crc16(key) & 16383


# ---------------------------------------------------------------------------------------------
# The upstream layout: <prefix>:bf:<id>:<link>.<shard> (bits) and <prefix>:bf:<id>:<link>:n

DATA_KEY_RE = re.compile(rb"\A(?P<prefix>.*):bf:(?P<id>[^:]+):(?P<link>\d+)"
                         rb"(?:\.(?P<shard>\d+)|(?P<count>:n))\Z", re.S)


def parse_data_key(key):
    """(prefix, id, link, shard or None for the counter) of a data key, or None."""
    m = DATA_KEY_RE.match(key)
    if not m:
        return None
    shard = m.group("shard")
    return (m.group("prefix"), m.group("id"), int(m.group("link")),
            None if shard is None else int(shard))


def has_hash_tag(name):
    start = name.find(b"{")
    if start == -1:
        return False
    end = name.find(b"}", start + 1)
    return end != -1 and end != start + 1


def prefix_belongs_to(prefix, name):
    """True if `prefix` is a data-key prefix bloomproxy may use for filter `name`: the name
    itself when it has a hash tag, `{name}`, or `{T}name` with a brace-free tag T in the
    name's slot."""
    if isinstance(name, str):
        name = name.encode()
    if has_hash_tag(name) and prefix == name:
        return True
    if prefix == b"{" + name + b"}":
        return True
    if prefix.endswith(b"}" + name) and prefix.startswith(b"{"):
        tag = prefix[1:len(prefix) - len(name) - 1]
        # The tag is chosen so the data keys share the name's slot; without that condition an
        # empty name would claim every "{T}" prefix.
        return (len(tag) > 0 and b"{" not in tag and b"}" not in tag
                and key_hash_slot(tag) == key_hash_slot(name))
    return False


def marker_keys_of(client, name, keys=None):
    """The marker key(s) upstream of filter `name`: <prefix>:bf:m:<name>, which tells TYPE and
    the key commands that the name holds a filter without reading its hash."""
    if isinstance(name, str):
        name = name.encode()
    keys = upstream_keys(client) if keys is None else keys
    out = []
    for k in keys:
        for m in re.finditer(rb":bf:m:", k):
            prefix, rest = k[:m.start()], k[m.end():]
            if rest == name and prefix_belongs_to(prefix, name):
                out.append(k)
    return sorted(out)


def upstream_keys(client):
    """All keys of db 0 of the upstream (redis-py client to the redis-server itself)."""
    return set(client.keys("*"))


def data_keys_of(client, name, keys=None):
    """The data keys (bits and counters) upstream that belong to filter `name`."""
    keys = upstream_keys(client) if keys is None else keys
    out = []
    for k in keys:
        parsed = parse_data_key(k)
        if parsed and prefix_belongs_to(parsed[0], name):
            out.append(k)
    return sorted(out)


def bf_data_keys(client, keys=None):
    """Every key upstream that looks like a bloomproxy data key."""
    keys = upstream_keys(client) if keys is None else keys
    return sorted(k for k in keys if parse_data_key(k))


def link_bytes_from_shards(client, name, shard_size):
    """{(id, link): bytes} rebuilt from the shard strings of filter `name`, assuming shard s of a
    link holds bytes [s * shard_size, (s + 1) * shard_size) (shorter strings = trailing zeros)."""
    out = {}
    for k in data_keys_of(client, name):
        _, fid, link, shard = parse_data_key(k)
        if shard is None:
            continue
        data = client.get(k)
        buf = out.setdefault((fid, link), bytearray())
        start = shard * shard_size
        if len(buf) < start + len(data):
            buf.extend(b"\0" * (start + len(data) - len(buf)))
        buf[start:start + len(data)] = data
    return {k: bytes(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# A reference model of a RedisBloom scalable filter (docs/bf-compatibility.md: hashing, bit
# positions, scaling, counting, dump format). test_bf_vectors.py checks it against the recorded
# vectors, so the other tests can use it for exact expectations.

_M64 = 0xFFFFFFFFFFFFFFFF
_MURMUR_M = 0xc6a4a7935bd1e995


def murmur64a(data, seed):
    """Austin Appleby's MurmurHash64A (64-bit MurmurHash2, little-endian blocks)."""
    m, r = _MURMUR_M, 47
    n = len(data)
    h = (seed ^ (n * m)) & _M64
    nblocks = n // 8
    for i in range(nblocks):
        k = int.from_bytes(data[8 * i:8 * i + 8], "little")
        k = (k * m) & _M64
        k ^= k >> r
        k = (k * m) & _M64
        h ^= k
        h = (h * m) & _M64
    tail = data[nblocks * 8:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & _M64
    h ^= h >> r
    h = (h * m) & _M64
    h ^= h >> r
    return h


def item_hash(item):
    a = murmur64a(item, _MURMUR_M)
    return a, murmur64a(item, a)


class NonScalingFull(Exception):
    pass


class ModelLink:
    def __init__(self, capacity, error):
        self.capacity = capacity
        self.error = error
        self.nbytes, self.bits, self.k, self.bpe = link_geometry(capacity, error)
        self.items = 0
        self.array = bytearray(self.nbytes)

    def positions(self, h):
        a, b = h
        return [((a + i * b) & _M64) % self.bits for i in range(self.k)]

    def has(self, h):
        return all(self.array[p >> 3] & (1 << (p & 7)) for p in self.positions(h))

    def set(self, h):
        for p in self.positions(h):
            self.array[p >> 3] |= 1 << (p & 7)


class ModelFilter:
    """RedisBloom's SBChain: add/exists/info/scandump with its exact bits."""

    def __init__(self, error=0.01, capacity=100, expansion=2, nonscaling=False):
        if expansion == 0:
            nonscaling = True
        self.error, self.capacity = error, capacity
        self.expansion, self.nonscaling = expansion, nonscaling
        self.links = [ModelLink(capacity, error if nonscaling else error * 0.5)]
        self.total = 0

    def exists(self, item):
        h = item_hash(item)
        return int(any(link.has(h) for link in reversed(self.links)))

    def add(self, item):
        """1 or 0; raises NonScalingFull."""
        h = item_hash(item)
        if any(link.has(h) for link in reversed(self.links)):
            return 0
        last = self.links[-1]
        if last.items >= last.capacity:
            if self.nonscaling:
                raise NonScalingFull()
            i = len(self.links)
            self.links.append(ModelLink(self.capacity * self.expansion ** i,
                                        self.error * 0.5 ** (i + 1)))
            last = self.links[-1]
        last.set(h)
        last.items += 1
        self.total += 1
        return 1

    def madd_reply(self, items):
        """Raw RESP bytes of BF.MADD/BF.INSERT's array for `items`."""
        out = []
        for it in items:
            try:
                out.append(b":%d\r\n" % self.add(it))
            except NonScalingFull:
                out.append(b"-ERR non scaling filter is full\r\n")
                break
        return b"*%d\r\n" % len(out) + b"".join(out)

    def info(self):
        cap = sum(link.capacity for link in self.links)
        size = 32 + 64 * len(self.links) + sum(link.nbytes for link in self.links)
        return {"Capacity": cap, "Size": size, "Number of filters": len(self.links),
                "Number of items inserted": self.total,
                "Expansion rate": None if self.nonscaling else self.expansion}

    def info_reply(self):
        i = self.info()
        return info_reply(i["Capacity"], i["Size"], i["Number of filters"],
                          i["Number of items inserted"], i["Expansion rate"])

    def header(self):
        opts = 13 if self.nonscaling else 5
        out = HEADER_FIXED.pack(self.total, len(self.links), opts, self.expansion)
        for link in self.links:
            out += HEADER_LINK.pack(link.nbytes, link.bits, link.items, link.error, link.bpe,
                                    link.k, link.capacity, 0)
        return out

    def scandump(self, it):
        """(next iterator, data) of BF.SCANDUMP key it."""
        if it == 0:
            return 1, self.header()
        pos = it - 1
        for link in self.links:
            if pos < link.nbytes:
                data = bytes(link.array[pos:pos + MAX_DUMP_CHUNK])
                return it + len(data), data
            pos -= link.nbytes
        return 0, b""

    def scandump_replies(self):
        """Raw replies of the whole SCANDUMP loop (iterator 0 to the [0, ""] terminator)."""
        out, it = [], 0
        while True:
            nxt, data = self.scandump(it)
            out.append(b"*2\r\n:%d\r\n$%d\r\n%s\r\n" % (nxt, len(data), data))
            if nxt == 0:
                return out
            it = nxt


def model_reply(filters, args):
    """The raw reply the model predicts for one command of a vector case, or None when the model
    does not cover it (argument errors, key-level commands, other types). `filters` maps key ->
    ModelFilter and is updated."""
    name = args[0].upper()
    key = args[1] if len(args) > 1 else None
    f = filters.get(key)
    if name == b"BF.RESERVE" and len(args) >= 4:
        try:
            error, capacity = float(args[2]), int(args[3])
        except ValueError:
            return None
        opts = [a.upper() for a in args[4:]]
        if not (0 < error < 1 and 1 <= capacity <= 1 << 30):
            return None
        if opts not in ([], [b"NONSCALING"]) and not (len(opts) == 2 and opts[0] == b"EXPANSION"):
            return None
        try:
            exp = int(opts[1]) if len(opts) == 2 else 2
        except ValueError:
            return None
        if not 0 <= exp <= 32768:
            return None
        if f is not None:
            return b"-ERR item exists\r\n"
        filters[key] = ModelFilter(min(error, 0.25), capacity, exp, opts == [b"NONSCALING"])
        return b"+OK\r\n"
    if name == b"BF.ADD" and len(args) == 3:
        if f is None:
            f = filters[key] = ModelFilter()
        try:
            return b":%d\r\n" % f.add(args[2])
        except NonScalingFull:
            return b"-ERR non scaling filter is full\r\n"
    if name == b"BF.MADD" and len(args) >= 3:
        if f is None:
            f = filters[key] = ModelFilter()
        return f.madd_reply(args[2:])
    if name == b"BF.INSERT":
        words = [a.upper() for a in args[2:]]
        if b"ITEMS" not in words:
            return None
        cut = words.index(b"ITEMS")
        opts, items = words[:cut], args[2 + cut + 1:]
        if not items:
            return None
        params = {"error": 0.01, "capacity": 100, "expansion": 2, "nonscaling": False}
        i = 0
        try:
            while i < len(opts):
                if opts[i] == b"CAPACITY":
                    params["capacity"] = int(opts[i + 1])
                    i += 2
                elif opts[i] == b"ERROR":
                    params["error"] = float(opts[i + 1])
                    i += 2
                elif opts[i] == b"EXPANSION":
                    params["expansion"] = int(opts[i + 1])
                    i += 2
                elif opts[i] == b"NONSCALING":
                    params["nonscaling"] = True
                    i += 1
                elif opts[i] == b"NOCREATE":
                    if f is None:
                        return b"-ERR not found\r\n"
                    i += 1
                else:
                    return None
        except (ValueError, IndexError):
            return None
        if not (0 < params["error"] < 1 and params["capacity"] >= 1):
            return None
        if f is None:
            f = filters[key] = ModelFilter(params["error"], params["capacity"],
                                           params["expansion"], params["nonscaling"])
        return f.madd_reply(items)
    if name == b"BF.EXISTS" and len(args) == 3:
        return b":%d\r\n" % (f.exists(args[2]) if f else 0)
    if name == b"BF.MEXISTS" and len(args) >= 3:
        items = args[2:]
        return b"*%d\r\n" % len(items) + b"".join(
            b":%d\r\n" % (f.exists(it) if f else 0) for it in items)
    if name == b"BF.CARD" and len(args) == 2:
        return b":%d\r\n" % (f.total if f else 0)
    if name == b"BF.INFO" and f is not None:
        if len(args) == 2:
            return f.info_reply()
        if len(args) == 3:
            fields = {b"CAPACITY": "Capacity", b"SIZE": "Size", b"FILTERS": "Number of filters",
                      b"ITEMS": "Number of items inserted", b"EXPANSION": "Expansion rate"}
            field = fields.get(args[2].upper())
            if field is None:
                return None
            v = f.info()[field]
            return b"*1\r\n" + (b"$-1\r\n" if v is None else b":%d\r\n" % v)
    if name == b"BF.SCANDUMP" and len(args) == 3 and f is not None:
        nxt, data = f.scandump(int(args[2]))
        return b"*2\r\n:%d\r\n$%d\r\n%s\r\n" % (nxt, len(data), data)
    return None
