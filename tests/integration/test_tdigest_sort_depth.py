"""A compression that sorts many buffered nodes in the worst order for the t-digest's quicksort
(RedisBloom's, which the proxy's scripts must reproduce: Lomuto around the middle node). The sort
then recurses once per node: RedisBloom's C recursion takes it (it answers in a fraction of a
second), and so must the proxy, with the same replies as the model (tdigest_check.py).

16,400 nodes (compression 2800: 16,809 slots) is past the depth at which a fresh Lua state of
Redis (5.1) stops a script with "stack overflow": its call stack doubles from 16,384 entries
past LUAI_MAXCALLS (20,000); 16,300 nodes still sort. (After that error the state keeps 20,000
entries, so the same sort then passes: only the first compressing read fails, and only on a
fresh server, which every test has. Past 20,000 nodes every one fails.) The sort compares about
n^2 / 2 times, some 20 s of Lua on the upstream: this file has a test to itself, and reads
once.
"""

import tdigest_edges as edges
from tdigest_check import check

COMPRESSION = 2800
NODES = 16400


def test_worst_order_sort_matches_model(bp, tmp_path):
    key = b"deep"
    values = [b"%d" % v for v in edges.deepest_sort_order(NODES)]
    cmds = [[b"TDIGEST.CREATE", key, b"COMPRESSION", b"%d" % COMPRESSION]]
    cmds += [[b"TDIGEST.ADD", key] + values[at:at + 4100] for at in range(0, NODES, 4100)]
    cmds += [[b"TDIGEST.QUANTILE", key, b"0", b"0.001", b"0.5", b"1"], [b"TDIGEST.INFO", key]]
    assert check(bp, cmds, tmp_path, 1, multi=False) == len(cmds)
