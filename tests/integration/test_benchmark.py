"""redis-benchmark through the proxy, pipelined, all without errors."""

import re
import subprocess

from bp_helpers import HOST

TESTS = ["set", "get", "incr", "lpush", "rpop", "sadd", "hset", "spop", "mset"]
# Names redis-benchmark prints for each test in -q mode.
LABELS = {"set": "SET", "get": "GET", "incr": "INCR", "lpush": "LPUSH", "rpop": "RPOP",
          "sadd": "SADD", "hset": "HSET", "spop": "SPOP", "mset": "MSET (10 keys)"}


def test_redis_benchmark_pipelined(bp, redis_instance):
    res = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(bp.port), "-t", ",".join(TESTS),
                          "-n", "100000", "-P", "16", "-q"],
                         capture_output=True, text=True, timeout=150)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "ERR" not in out and "error" not in out.lower(), out
    # In -q mode each finished test ends with "<NAME>: <n> requests per second" (progress lines
    # are overwritten with \r).
    lines = out.replace("\r", "\n").split("\n")
    for t in TESTS:
        pattern = re.compile(r"^%s: [0-9.]+ requests per second" % re.escape(LABELS[t]))
        assert any(pattern.match(line) for line in lines), f"no result line for {t}:\n{out}"
    # The data really went through to redis-server.
    direct = redis_instance.client()
    assert direct.exists("key:__rand_int__") == 1
    assert direct.get("counter:__rand_int__") == b"100000"
    assert direct.llen("mylist") == 0  # 100000 LPUSH then 100000 RPOP
