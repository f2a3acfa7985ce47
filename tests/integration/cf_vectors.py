"""Helpers of the CF.* integration tests (test_cf*.py): the recorded RedisBloom vectors in
tests/fixtures/cf/ (the format of the BF vectors: replay each case on fresh keys, compare every raw
reply), the case keys mapped for a cluster or a sharding proxy, and a reader of the layout
bloomproxy keeps a cuckoo filter in upstream (docs/cuckoo-filters.md):

    name                  hash    cf "1", id, nb, bs, mi, ex, nf, sh, ni, nd
    P:cf:<id>:<i>.<s>     string  sub-filter i's slots, bytes [s*sh, (s+1)*sh)
    P:cf:m:<name>         string  "1": the marker

Only the Python standard library (plus bp_helpers, bf_vectors, cms_vectors and vector_replay) is
used.
"""

import re

from bf_vectors import key_hash_slot, prefix_belongs_to
from bf_vectors import load_cases as load_bf_format
from bp_helpers import REPO
from cms_vectors import check_layout as check_other_layout
from cms_vectors import cut_case, get_all
from vector_replay import check_with_name, is_marker_of

FIXTURES = REPO / "tests" / "fixtures" / "cf"
CASES_PATH = FIXTURES / "cf-cases.json"
EXPECTED_PATH = FIXTURES / "cf-expected.json"

CF_COMMANDS = ("cf.reserve", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.exists",
               "cf.mexists", "cf.count", "cf.del", "cf.compact", "cf.scandump", "cf.loadchunk",
               "cf.info", "cf.debug")
CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
TWO_KEYS = {b"RENAME", b"RENAMENX", b"COPY"}
FIELDS = (b"cf", b"id", b"nb", b"bs", b"mi", b"ex", b"nf", b"sh", b"ni", b"nd")
DATA_KEY_RE = re.compile(rb"\A(?P<prefix>.*):cf:(?P<id>[0-9a-f]{16}):(?P<sub>0|[1-9]\d*)\."
                         rb"(?P<key>0|[1-9]\d*)\Z", re.S)
MARKER = b":cf:m:"


def load_cases():
    """The cases of cf-cases.json joined with cf-expected.json (bf_vectors.load_cases)."""
    return load_bf_format(CASES_PATH, EXPECTED_PATH)


# ---------------------------------------------------------------------------------------------
# Case keys on a cluster or behind a sharding proxy


def names_a_key(args):
    """Whether a command of the vectors has a case key somewhere other than its key positions:
    COMMAND GETKEYS (the key is an argument of the command asked about, and its reply)."""
    return args[0].upper() == b"COMMAND"


def with_keys(case, rename):
    """`case` with every argument (after the command's name) that is one of its keys replaced by
    rename(key): the CF vectors' items never spell a key (test_cf_vectors checks it), so every
    such argument is a key (OBJECT ENCODING's, COPY's and RENAME's second one too)."""
    mapping = {k: rename(k) for k in case["keys"]}
    cmds = [[a if i == 0 else mapping.get(a, a) for i, a in enumerate(args)]
            for args in case["cmds"]]
    return dict(case, keys=[mapping[k] for k in case["keys"]], cmds=cmds)


def tagged(case, tag):
    """Every key of `case` under the hash tag `tag` (bytes with braces): one slot, one server.
    The case ends before its first COMMAND GETKEYS, whose reply names a key (checked in
    standalone mode)."""
    for i, args in enumerate(case["cmds"]):
        if names_a_key(args):
            case = cut_case(case, i)
            break
    return with_keys(case, lambda k: tag + k)


def as_cluster_answers(case):
    """`case` as a client of bloomproxy in front of a Redis Cluster sees it with its keys as
    recorded: a RENAME/RENAMENX/COPY across slots answers CROSSSLOT and the case ends there."""
    for i, args in enumerate(case["cmds"]):
        if args[0].upper() in TWO_KEYS and len(args) >= 3 and \
                key_hash_slot(args[1]) != key_hash_slot(args[2]):
            return cut_case(case, i, CROSSSLOT)
    return case


# ---------------------------------------------------------------------------------------------
# The layout upstream


def parse_data_key(key):
    """(prefix, id, sub-filter, key index) of a cuckoo filter's data key, or None."""
    m = DATA_KEY_RE.match(key)
    if not m:
        return None
    return m.group("prefix"), m.group("id"), int(m.group("sub")), int(m.group("key"))


def cf_keys_of(name, keys):
    """The data keys and markers among `keys` that belong to cuckoo filter `name`."""
    out = []
    for k in keys:
        parsed = parse_data_key(k)
        if parsed and prefix_belongs_to(parsed[0], name):
            out.append(k)
        elif is_marker_of(k, MARKER, name):
            out.append(k)
    return sorted(out)


def read_filter(client, name, keys):
    """The cuckoo filter `name` as bloomproxy keeps it on the server `client` talks to, checked
    against the documented layout: {"fields", "subfilters": [bytes]}. AssertionError on anything
    out of place."""
    meta = dict(zip(FIELDS, client.hmget(name, FIELDS)))
    assert meta[b"cf"] == b"1", f"{name!r}: fields {meta!r} are not a CF layout v1"
    nb, bs, ex, nf, sh = (int(meta[f]) for f in (b"nb", b"bs", b"ex", b"nf", b"sh"))
    assert re.fullmatch(rb"[0-9a-f]{16}", meta[b"id"]) and sh % bs == 0 and nf >= 1, meta
    for f in (b"ni", b"nd"):
        assert re.fullmatch(rb"[0-9a-f]{16}", meta[f]), meta
    expected = []
    subfilters = []
    n = nb
    for i in range(nf):
        size = n * bs
        shards = [k for k in keys if (parse_data_key(k) or (0, 0, -1))[1:3] == (meta[b"id"], i)]
        shards.sort(key=lambda k: parse_data_key(k)[3])
        count = -(-size // sh)
        assert [parse_data_key(k)[3] for k in shards] == list(range(count)), \
            f"{name!r} sub-filter {i}: data keys {shards[:5]} for {size} bytes in keys of {sh}"
        data = get_all(client, shards)
        for s, chunk in enumerate(data):
            assert len(chunk) == min(sh, size - s * sh), f"{shards[s]!r}: {len(chunk)} bytes"
        subfilters.append(b"".join(data))
        expected += shards
        n *= ex
    markers = [k for k in cf_keys_of(name, keys) if parse_data_key(k) is None]
    assert len(markers) == 1 and client.get(markers[0]) == b"1", f"{name!r}: markers {markers}"
    data_keys = [k for k in cf_keys_of(name, keys) if parse_data_key(k)]
    assert sorted(data_keys) == sorted(expected), \
        f"{name!r}: data keys {sorted(data_keys)[:6]}, expected {sorted(expected)[:6]}"
    return {"fields": meta, "subfilters": subfilters}


def check_layout(where, names, owner_of, client_of, label="", shard_bytes=None):
    """Every key in `where` ({key: server}) is one of `names` or an internal key of one, on the
    server holding the name (owner_of(name)) and in its slot; a name that does not exist has no
    internal keys left; a cuckoo filter's keys match the documented layout (read_filter), each at
    most `shard_bytes` long when given. Bloom filters' and sketches' keys (the cross-family case)
    are checked by cms_vectors.check_layout."""
    names = [n.encode() if isinstance(n, str) else n for n in names]
    rest = dict(where)
    for name in names:
        internal = cf_keys_of(name, rest)
        if not internal:
            continue
        owner = check_with_name(name, internal, rest, owner_of, label)
        client = client_of(owner)
        if client.type(name) == b"hash" and client.hget(name, b"cf") == b"1":
            found = read_filter(client, name, internal)
            if shard_bytes is not None:
                sh = int(found["fields"][b"sh"])
                assert sh <= shard_bytes or sh == int(found["fields"][b"bs"]), found["fields"]
        for k in internal:
            del rest[k]
    check_other_layout(rest, names, owner_of, client_of, label)
