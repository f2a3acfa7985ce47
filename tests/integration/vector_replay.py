"""What the vector-replay tests of the CF.*, CMS.*, TOPK.* and TDIGEST.* families share
(test_{cf,cms,topk,tdigest}_vectors.py and their {cf,cms,topk,tdigest}_vectors.py): where a
family's recordings lie, where a command has its keys, a case mapped for a cluster (keys as
recorded, or all under one hash tag), the checks that the cases spread over the cluster's
masters and nutcracker's servers, a name's marker told from other keys, the check that a name's
internal keys lie with it, and why RESP3 is not replayed behind nutcracker.

Only the Python standard library (plus bp_helpers and bf_vectors) is used.
"""

import re

from bf_vectors import key_hash_slot, prefix_belongs_to
from bp_helpers import REPO

CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
KEY_MODES = ("plain", "tagged")
# Where the vectors' key commands have their keys.
ALL_KEYS = {b"DEL", b"EXISTS", b"UNLINK", b"TOUCH"}  # every argument
TWO_KEYS = {b"RENAME", b"RENAMENX", b"COPY"}  # a cluster cannot split these: one slot or CROSSSLOT

# Why the RESP3 vectors are not replayed behind nutcracker (a skip reason).
NO_RESP3_BEHIND_NUTCRACKER = ("RESP3 behind nutcracker: bloomproxy refuses HELLO 3 with "
                              "upstream-kind sharding-proxy (test_resp3.py::test_hello_3_behind_"
                              "a_sharding_proxy_is_refused), so no RESP3 replay is possible "
                              "there; the RESP3 replies are replayed standalone and on the "
                              "cluster")


def fixture_paths(family):
    """(folder, cases, RESP2 replies, RESP3 replies) of tests/fixtures/<family>/."""
    folder = REPO / "tests" / "fixtures" / family
    return (folder, folder / f"{family}-cases.json", folder / f"{family}-expected.json",
            folder / f"{family}-resp3-expected.json")


def key_positions(args, family_keys=lambda args: None):
    """Indexes of `args` that hold key names: every argument of DEL/EXISTS/UNLINK/TOUCH, the two
    of RENAME/RENAMENX/COPY, OBJECT's third, family_keys(args) when not None (a family's
    command with several keys), else the first argument after the name."""
    name = args[0].upper()
    if name in ALL_KEYS:
        return list(range(1, len(args)))
    if name in TWO_KEYS:
        return list(range(1, min(3, len(args))))
    if name == b"OBJECT":
        return [2] if len(args) > 2 else []
    own = family_keys(args)
    if own is not None:
        return own
    return list(range(1, min(2, len(args))))


def case_for_cluster(cases, index, mode, tagged, as_cluster_answers):
    """Case `index` for a cluster: keys as recorded ("plain", as_cluster_answers cuts it where
    slots differ) or all under the tag {t<index>} ("tagged": one slot per case, the cases spread
    over the masters)."""
    if mode == "tagged":
        return tagged(cases[index], b"{t%d}" % index)
    return as_cluster_answers(cases[index])


def assert_cluster_cases_spread(redis_cluster, count, cluster_case):
    """In either key mode, the keys of the `count` cases (cluster_case(mode, i)) reach every
    master."""
    masters = {m.port for m in redis_cluster.masters()}
    for mode in KEY_MODES:
        served = {redis_cluster.node_for_key(k).port
                  for i in range(count) for k in cluster_case(mode, i)["keys"]}
        assert served == masters, mode


def assert_sharding_cases_spread(twemproxy, count, sharding_case, server_index):
    """The tagged keys of the `count` cases (sharding_case("tagged", i)) reach both of
    nutcracker's servers (server_index(twemproxy, key))."""
    served = {server_index(twemproxy, k)
              for i in range(count) for k in sharding_case("tagged", i)["keys"]}
    assert served == {0, 1}


def is_marker_of(key, marker, name):
    """Whether `key` is the marker P<marker><name> of `name` (`marker` such as b":td:m:", P a
    prefix that belongs to the name)."""
    return any(key[m.end():] == name and prefix_belongs_to(key[:m.start()], name)
               for m in re.finditer(re.escape(marker), key))


def check_with_name(name, internal, where, owner_of, label=""):
    """`name`, whose internal keys are `internal`, exists in `where` ({key: server}), and each of
    those keys lies in the name's slot, on the server holding the name (owner_of(name), which
    this returns)."""
    assert name in where, f"{label} {name!r} does not exist but its keys remain: {internal[:5]}"
    owner = owner_of(name)
    for k in internal:
        assert key_hash_slot(k) == key_hash_slot(name), \
            f"{label} {k!r} of {name!r} is not in the name's slot"
        assert where[k] == owner, f"{label} {k!r} of {name!r} on {where[k]}, name on {owner}"
    return owner
