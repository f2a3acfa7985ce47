#!/usr/bin/python3
"""What one BITFIELD bit costs Redis: the ceiling of bloomproxy's BF.* ratios (docs/performance.md).

Starts its own redis-server on a free loopback port, makes a string the size of the benchmarks'
filter (95,850,000 bits: 10 million items at 1%), then sends pipelined BITFIELD commands of
`SET u1 <offset> 1` (or `GET u1 <offset>`) over one connection, with the offsets

  fixed    the same 8 offsets on every command (what bench/round2.sh's floors send: redis-benchmark
           cannot randomise an offset), so every bit is in a cache line Redis just touched
  random   uniformly random over the string, as a Bloom filter's bits are

and 8 or 560 ops per command (one item's bits; a batch of 70 items, as bloomproxy sends under
load). Per case it prints Redis's own time per op (INFO commandstats: the command's execution)
and the wall time per op (reading, parsing and answering included), medians of --rounds.

Usage: bench/bitfield_cost.py [--rounds N] [--ops N]   (N ops per case, default 160000)
Needs redis-server and python3-redis (Debian's /usr/bin/python3).
"""
import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

BITS = 95_850_000
KEY = "cost"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def commands(offsets_of, per, n, op):
    """`n` BITFIELD commands of `per` ops each, encoded."""
    cmds = []
    for _ in range(n):
        args = ["BITFIELD" if op == "SET" else "BITFIELD_RO", KEY]
        for o in offsets_of(per):
            args += ["SET", "u1", o, 1] if op == "SET" else ["GET", "u1", o]
        cmds.append(encode(args))
    return b"".join(cmds)


def run(client, port, payload, n, per):
    """Sends the pipeline, reads the n replies; (execution µs per op, wall µs per op)."""
    client.config_resetstat()
    with socket.create_connection(("127.0.0.1", port)) as s:
        start = time.perf_counter()
        s.sendall(payload)
        got, want = b"", b"*%d\r\n" % per
        while got.count(want) < n:
            chunk = s.recv(1 << 20)
            if not chunk:
                sys.exit("redis-server closed the connection")
            got += chunk
        wall = time.perf_counter() - start
    stats = client.info("commandstats")
    usec = sum(v["usec"] for k, v in stats.items() if k.startswith("cmdstat_bitfield"))
    return usec / (n * per), wall * 1e6 / (n * per)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ops", type=int, default=160_000)
    args = ap.parse_args()
    server = shutil.which("redis-server") or sys.exit("redis-server not found")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bitfield-cost-")
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", workdir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        client.setbit(KEY, BITS - 1, 0)
        rnd = random.Random(1)
        fixed = [BITS // 8 * i + BITS // 16 for i in range(8)]
        offsets = {
            "fixed": lambda per: (fixed * (per // 8 + 1))[:per],
            "random": lambda per: [rnd.randrange(BITS) for _ in range(per)],
        }
        cases = [(op, kind, per) for op in ("SET", "GET") for per in (8, 560)
                 for kind in ("fixed", "random")]
        results = {c: [] for c in cases}
        for _ in range(args.rounds):  # interleaved: every case once per round
            for op, kind, per in cases:
                n = max(1, args.ops // per)
                payload = commands(offsets[kind], per, n, op)
                results[(op, kind, per)].append(run(client, port, payload, n, per))
        print(f"redis-server {client.info('server')['redis_version']}, {os.cpu_count()} CPU(s), "
              f"{args.rounds} round(s), {args.ops} ops per case, a {BITS:,}-bit string")
        print()
        print("| op | offsets | ops per command | execution µs/op | wall µs/op |")
        print("|---|---|---:|---:|---:|")
        for op, kind, per in cases:
            ex = statistics.median(r[0] for r in results[(op, kind, per)])
            wall = statistics.median(r[1] for r in results[(op, kind, per)])
            print(f"| {op} u1 | {kind} | {per} | {ex:.3f} | {wall:.3f} |")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
