"""Helpers of the TDIGEST.* integration tests (test_tdigest*.py): the recorded RedisBloom vectors
in tests/fixtures/tdigest/ (the format of the BF/CMS vectors: replay each case on fresh keys,
compare every raw reply; RESP3 replies recorded after HELLO 3), Redis's command table for the
MULTI/EXEC replay, the case keys mapped for a cluster or a sharding proxy, and a reader of the
layout bloomproxy keeps a t-digest in upstream:

    name               hash    td "1", id <16 lower-case hex digits>, v <writes since CREATE>
    P:td:<id>:d        string  the digest: C, min, max (doubles), M, U (u32), MW, UW, TC
                               (int64), then M+U nodes (double mean, int64 weight), little-endian
    P:td:m:<name>      string  "1": the marker

(P is the name's data-key prefix, filters/common/key_layout.h.) Only the Python standard library
(plus bp_helpers, bf_vectors, cms_vectors and resp3_replay) is used.
"""

import re
import struct

from bf_vectors import key_hash_slot, prefix_belongs_to
from bf_vectors import load_cases as load_bf_format
from bp_helpers import REPO
from cms_vectors import check_layout as check_other_layout
from cms_vectors import cut_case, strict_int
from resp3_replay import with_resp3_replies

FIXTURES = REPO / "tests" / "fixtures" / "tdigest"
CASES_PATH = FIXTURES / "tdigest-cases.json"
EXPECTED_PATH = FIXTURES / "tdigest-expected.json"
RESP3_PATH = FIXTURES / "tdigest-resp3-expected.json"

CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"

# Redis's command table arity of RedisBloom's t-digest commands (COMMAND INFO; -n: at least n
# arguments, the name included). A command failing it is refused while queued in MULTI; the
# module's own checks (CREATE with 3 or 5 arguments, MERGE numkeys beyond the arguments, a
# COMPRESSION without value) come at EXEC.
TABLE_ARITY = {b"TDIGEST.CREATE": -2, b"TDIGEST.RESET": 2, b"TDIGEST.ADD": -3,
               b"TDIGEST.MERGE": -4, b"TDIGEST.MIN": 2, b"TDIGEST.MAX": 2,
               b"TDIGEST.QUANTILE": -3, b"TDIGEST.CDF": -3, b"TDIGEST.TRIMMED_MEAN": 4,
               b"TDIGEST.RANK": -3, b"TDIGEST.REVRANK": -3, b"TDIGEST.BYRANK": -3,
               b"TDIGEST.BYREVRANK": -3, b"TDIGEST.INFO": 2}

# ---------------------------------------------------------------------------------------------
# Vectors


def load_cases():
    """The cases of tdigest-cases.json joined with tdigest-expected.json (RESP2)."""
    return load_bf_format(CASES_PATH, EXPECTED_PATH)


def load_resp3_cases(cases):
    """The same cases with the replies recorded after HELLO 3."""
    return with_resp3_replies(cases, RESP3_PATH)


# ---------------------------------------------------------------------------------------------
# Keys of a command, and the case keys mapped for a cluster or a sharding proxy

ALL_KEYS = {b"DEL", b"EXISTS", b"UNLINK", b"TOUCH"}  # every argument (split per slot by the proxy)
TWO_KEYS = {b"RENAME", b"RENAMENX", b"COPY"}  # one slot, or CROSSSLOT


def merge_source_positions(args):
    """Indexes of a TDIGEST.MERGE's source keys: the numkeys arguments after numkeys, when
    numkeys is a positive integer that does not run past the arguments (RedisBloom's key spec;
    any name there is a key, a keyword too), else none."""
    n = strict_int(args[2]) if len(args) > 2 else None
    if n is None or n <= 0 or 3 + n > len(args):
        return []
    return list(range(3, 3 + n))


def key_positions(args):
    """Indexes of `args` that hold key names: every argument of DEL/EXISTS/UNLINK/TOUCH, the two
    of RENAME/RENAMENX/COPY, OBJECT's third, MERGE's destination and sources, else the first
    argument after the name."""
    name = args[0].upper()
    if name in ALL_KEYS:
        return list(range(1, len(args)))
    if name in TWO_KEYS:
        return list(range(1, min(3, len(args))))
    if name == b"OBJECT":
        return [2] if len(args) > 2 else []
    if name == b"TDIGEST.MERGE":
        return ([1] if len(args) > 1 else []) + merge_source_positions(args)
    return list(range(1, min(2, len(args))))


def with_keys(case, rename):
    """`case` with rename(a) for every argument a at a key position, and for every other argument
    that spells a case key (those come only in commands that fail before reading it: a MERGE
    whose numkeys is not usable, an arity error); values and keywords stay as they are
    (test_tdigest_vectors checks that this is sound). A keyword in a MERGE's source positions is
    a source name, so renaming it keeps the reply."""
    keys = set(case["keys"])
    cmds = []
    for args in case["cmds"]:
        positions = set(key_positions(args))
        cmds.append([rename(a) if i in positions or (i > 0 and a in keys) else a
                     for i, a in enumerate(args)])
    return dict(case, keys=[rename(k) for k in case["keys"]], cmds=cmds)


def tagged(case, tag):
    """Every key of `case` given the hash tag `tag` (bytes with braces): one slot, one server."""
    return with_keys(case, lambda k: tag + k)


def spans_slots(args):
    """Whether a MERGE or a two-key command names keys in more than one slot."""
    name = args[0].upper()
    if name != b"TDIGEST.MERGE" and name not in TWO_KEYS:
        return False
    return len({key_hash_slot(args[i]) for i in key_positions(args)}) > 1


def as_cluster_answers(case):
    """`case` as a client of bloomproxy in front of a Redis Cluster sees it with its keys as
    recorded: a RENAME/RENAMENX/COPY across slots answers CROSSSLOT (as Redis Cluster itself
    would) and the case ends there; a MERGE across slots ends the case before it (RedisBloom's
    answer there was recorded on one server, where its argument errors come first)."""
    for i, args in enumerate(case["cmds"]):
        if spans_slots(args):
            if args[0].upper() in TWO_KEYS:
                return cut_case(case, i, CROSSSLOT)
            return cut_case(case, i)
    return case


# ---------------------------------------------------------------------------------------------
# The layout upstream

DATA_KEY_RE = re.compile(rb"\A(?P<prefix>.*):td:(?P<id>[0-9a-f]{16}):d\Z", re.S)
MARKER = b":td:m:"
HEADER = struct.Struct("<dddIIqqq")
NODE = struct.Struct("<dq")
INT64_MAX = (1 << 63) - 1


def td_keys_of(name, keys):
    """The data keys and markers among `keys` that belong to t-digest `name`."""
    out = []
    for k in keys:
        m = DATA_KEY_RE.match(k)
        if m and prefix_belongs_to(m.group("prefix"), name):
            out.append(k)
            continue
        for m in re.finditer(re.escape(MARKER), k):
            if k[m.end():] == name and prefix_belongs_to(k[:m.start()], name):
                out.append(k)
    return sorted(out)


def parse_digest(data):
    """The data string of a t-digest -> {"C", "min", "max", "M", "U", "MW", "UW", "TC",
    "nodes": [(mean, weight)]}, checked: its length, C a positive integer, every weight >= 1."""
    assert len(data) >= HEADER.size, f"digest of {len(data)} bytes"
    c, lo, hi, merged, unmerged, mw, uw, tc = HEADER.unpack_from(data, 0)
    n = merged + unmerged
    assert len(data) == HEADER.size + NODE.size * n, \
        f"digest of {len(data)} bytes for M={merged} U={unmerged}"
    assert c >= 1 and c == int(c) and n <= 6 * int(c) + 10, (c, merged, unmerged)
    nodes = [NODE.unpack_from(data, HEADER.size + NODE.size * i) for i in range(n)]
    assert all(1 <= w for _, w in nodes), [w for _, w in nodes if w < 1][:5]
    assert 0 <= mw <= INT64_MAX and 0 <= uw and 0 <= tc, (mw, uw, tc)
    if uw < 1 << 53:
        assert uw == sum(w for _, w in nodes[merged:]), (uw, nodes[merged:][:5])
    return {"C": int(c), "min": lo, "max": hi, "M": merged, "U": unmerged, "MW": mw, "UW": uw,
            "TC": tc, "nodes": nodes}


def read_digest(client, name, keys):
    """The t-digest `name` as bloomproxy keeps it on the server `client` talks to, checked
    against the documented layout (one data key of the hash's id, one marker holding "1", the
    same TTL on all three): parse_digest's dict plus "fields" (the hash). AssertionError on
    anything out of place."""
    meta = client.hgetall(name)
    assert meta.get(b"td") == b"1" and set(meta) == {b"td", b"id", b"v"}, \
        f"{name!r}: hash {meta!r} is not a t-digest layout v1"
    assert re.fullmatch(rb"[0-9a-f]{16}", meta[b"id"]), meta
    assert re.fullmatch(rb"0|[1-9][0-9]*", meta[b"v"]), meta
    data_keys = [k for k in keys if DATA_KEY_RE.match(k)]
    assert [DATA_KEY_RE.match(k).group("id") for k in data_keys] == [meta[b"id"]], \
        f"{name!r} (id {meta[b'id']!r}): data keys {data_keys}"
    markers = [k for k in keys if not DATA_KEY_RE.match(k)]
    assert len(markers) == 1 and client.get(markers[0]) == b"1", f"{name!r}: markers {markers}"
    ttls = [client.pttl(k) > 0 for k in [name] + data_keys + markers]
    assert len(set(ttls)) == 1, f"{name!r}: TTL set on some of its keys only: {ttls}"
    found = parse_digest(client.get(data_keys[0]))
    found["fields"] = meta
    return found


def check_layout(where, names, owner_of, client_of, label=""):
    """Every key in `where` ({key: server}) is one of `names` or an internal key of one, on the
    server holding the name (owner_of(name)) and in its slot; a name that does not exist has no
    internal keys left; a t-digest's keys match the documented layout (read_digest). Filters'
    and sketches' keys (the cases' other types) are checked by cms_vectors.check_layout.
    Returns {name: read_digest's dict} of the t-digests found."""
    names = [n.encode() if isinstance(n, str) else n for n in names]
    rest = dict(where)
    digests = {}
    for name in names:
        internal = td_keys_of(name, rest)
        if not internal:
            continue
        assert name in rest, f"{label} {name!r} does not exist but its keys remain: {internal[:5]}"
        owner = owner_of(name)
        for k in internal:
            assert key_hash_slot(k) == key_hash_slot(name), \
                f"{label} {k!r} of {name!r} is not in the name's slot"
            assert rest[k] == owner, f"{label} {k!r} of {name!r} on {rest[k]}, name on {owner}"
        client = client_of(owner)
        assert client.type(name) == b"hash", f"{label} {name!r} has t-digest keys: {internal}"
        digests[name] = read_digest(client, name, internal)
        for k in internal:
            del rest[k]
    check_other_layout(rest, names, owner_of, client_of, label)
    return digests


INFO_FIELDS = ((b"Compression", "C"), (b"Merged nodes", "M"), (b"Unmerged nodes", "U"),
               (b"Merged weight", "MW"), (b"Unmerged weight", "UW"),
               (b"Total compressions", "TC"))


def info_matches(info, digest):
    """Whether a parsed TDIGEST.INFO ({field: int}) shows the stored digest."""
    return all(info.get(field) == digest[key] for field, key in INFO_FIELDS)
