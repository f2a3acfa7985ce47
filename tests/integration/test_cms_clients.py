"""CMS.* through the client libraries applications use, unchanged, against bloomproxy:

- redis-py 4.3's RedisBloom API (`r.cms()`): initbydim, initbyprob, incrby, query, merge (with
  and without weights), info, and the errors it raises;
- node-redis v4 with @redis/bloom (tests/integration/node/cms_client.js, run with Node.js; its
  packages are installed by scripts/deps.sh with `npm ci`): the same calls, printed as JSON.

Expected values come from cms_vectors.ModelSketch.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import redis

from cms_vectors import CELL_MAX, ModelSketch

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = shutil.which("node")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def incr(model, pairs):
    """The model's INCRBY reply as a client library shows it: a list of ints, None for the
    overflow error element."""
    out = []
    for item, v in pairs:
        low = model.incrby(item.encode() if isinstance(item, str) else item, v)
        out.append(None if low == CELL_MAX else low)
    return out


def query(model, items):
    return [model.query(i.encode() if isinstance(i, str) else i) for i in items]


# ---------------------------------------------------------------------------------------------
# redis-py


def test_redis_py_cms_api(bp):
    r = bp.client()
    cms = r.cms()
    a, b, m = ModelSketch(100, 5), ModelSketch(100, 5), ModelSketch(100, 5)
    assert cms.initbydim("rp:a", 100, 5) is True
    with pytest.raises(redis.ResponseError, match=r"^CMS: key already exists$"):
        cms.initbydim("rp:a", 100, 5)
    assert cms.initbyprob("rp:p", 0.001, 0.01) is True
    info = cms.info("rp:p")
    assert (info.width, info.depth, info.count) == (2000, 7, 0)

    pairs = [("x", 3), ("y", 4), ("x", 5), (b"\x00\xffbin", 6), ("", 2)]
    assert cms.incrby("rp:a", [p[0] for p in pairs], [p[1] for p in pairs]) == incr(a, pairs)
    probes = ["x", "y", b"\x00\xffbin", "", "never"]
    assert cms.query("rp:a", *probes) == query(a, probes)

    assert cms.initbydim("rp:b", 100, 5) is True and cms.initbydim("rp:m", 100, 5) is True
    pairs_b = [("x", 10), ("w", 20)]
    assert cms.incrby("rp:b", ["x", "w"], [10, 20]) == incr(b, pairs_b)
    assert cms.merge("rp:m", 2, ["rp:a", "rp:b"]) is True
    m.merge_from([a, b], [1, 1])
    probes += ["w"]
    assert cms.query("rp:m", *probes) == query(m, probes)
    info = cms.info("rp:m")
    assert (info.width, info.depth, info.count) == (100, 5, m.count) == (100, 5, 50)
    assert cms.merge("rp:m", 2, ["rp:a", "rp:b"], weights=[2, 3]) is True
    m.merge_from([a, b], [2, 3])
    assert cms.query("rp:m", *probes) == query(m, probes)
    assert cms.info("rp:m").count == m.count

    # An element of INCRBY's array can be an error: redis-py puts the exception in the list.
    got = cms.incrby("rp:a", ["big", "x"], [1 << 32, 1])
    want = incr(a, [("big", 1 << 32), ("x", 1)])
    assert want[0] is None and isinstance(got[0], redis.ResponseError), got
    assert str(got[0]) == "CMS: INCRBY overflow" and got[1:] == want[1:]
    assert cms.info("rp:a").count == a.count

    with pytest.raises(redis.ResponseError, match=r"^CMS: key does not exist$"):
        cms.query("rp:missing", "x")
    with pytest.raises(redis.ResponseError, match=r"^CMS: width/depth is not equal$"):
        cms.merge("rp:p", 1, ["rp:a"])
    r.set("rp:plain", "v")
    with pytest.raises(redis.ResponseError, match=r"^WRONGTYPE "):
        cms.incrby("rp:plain", ["x"], [1])
    assert r.type("rp:a") == b"CMSk-TYPE"


# ---------------------------------------------------------------------------------------------
# node-redis


def node_expected():
    """What cms_client.js must print, step by step."""
    a, b, m = ModelSketch(100, 5), ModelSketch(100, 5), ModelSketch(100, 5)
    ok = "OK"
    out = {"initByDim": ok, "initByDimAgain": "CMS: key already exists", "initByProb": ok,
           "infoProb": {"width": 2000, "depth": 7, "count": 0}}
    out["incrByMany"] = incr(a, [("x", 3), ("y", 4), ("x", 5)])
    out["incrByOne"] = incr(a, [("z", 7)])
    out["query"] = query(a, ["x", "y", "z", "never"])
    out["queryOne"] = query(a, ["x"])
    out["initB"] = out["initM"] = ok
    out["incrByB"] = incr(b, [("x", 10), ("w", 20)])
    out["merge"] = ok
    m.merge_from([a, b], [1, 1])
    out["queryMerged"] = query(m, ["x", "y", "z", "w"])
    out["infoMerged"] = {"width": 100, "depth": 5, "count": m.count}
    out["mergeWeights"] = ok
    m.merge_from([a, b], [2, 3])
    out["queryWeighted"] = query(m, ["x", "y", "z", "w"])
    out["infoWeighted"] = {"width": 100, "depth": 5, "count": m.count}
    out["incrByOverflow"] = incr(a, [("big", 1 << 32), ("x", 1)])
    out["infoA"] = {"width": 100, "depth": 5, "count": a.count}
    out["queryMissing"] = "CMS: key does not exist"
    out["mergeMismatch"] = "CMS: width/depth is not equal"
    out["setPlain"] = ok
    out["incrByPlain"] = WRONGTYPE
    out["type"] = "CMSk-TYPE"
    errors = {"initByDimAgain", "queryMissing", "mergeMismatch", "incrByPlain"}
    # As cms_client.js prints them: {"ok": reply} or {"error": message}; an overflow element of
    # an array reply is {"error": message} in place.
    shown = {}
    for step, value in out.items():
        if step in errors:
            shown[step] = {"error": value}
        elif isinstance(value, list):
            shown[step] = {"ok": [{"error": "CMS: INCRBY overflow"} if v is None else v
                                  for v in value]}
        else:
            shown[step] = {"ok": value}
    return shown


@pytest.mark.skipif(NODE is None, reason="Node.js (node) is not installed; scripts/deps.sh "
                                         "installs it with the node-redis packages")
def test_node_redis_bloom_cms(bp):
    assert (NODE_DIR / "node_modules" / "@redis" / "bloom").is_dir(), \
        "node-redis is not installed: run `npm ci --prefix tests/integration/node` " \
        "(scripts/deps.sh does)"
    res = subprocess.run([NODE, "cms_client.js", str(bp.port), "nd"], cwd=NODE_DIR,
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    got = json.loads(res.stdout)
    want = node_expected()
    assert list(got) == list(want), f"steps: {list(got)}"
    wrong = {step: (got[step], want[step]) for step in want if got[step] != want[step]}
    assert not wrong, "steps whose result differs (got, expected):\n" + \
        "\n".join(f"  {s}: {g} != {w}" for s, (g, w) in wrong.items())
