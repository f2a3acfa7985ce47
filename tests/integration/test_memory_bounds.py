"""Hostile clients all at once leave the proxy's memory bounded and other clients served: a 2 GB
bulk header, a 511 MB bulk that never arrives, a client that asks for 400 MB of replies and
reads none, and 10,000 idle connections."""

import resource
import socket

import pytest

from bp_helpers import (SMALL_QUARANTINE, RawConn, ask_without_reading, encode_command as cmd,
                        rss_kb, wait_until)

IDLE = 10_000


def connected_clients(port):
    """The proxy's own count (INFO's "# Proxy" section; "# Clients" is the upstream's)."""
    with RawConn(port) as c:
        info = c.command("INFO", "proxy").decode()
    return int(info.split("# Proxy")[1].split("connected_clients:")[1].split()[0])


def test_hostile_clients_leave_memory_bounded(proxy, redis_instance):
    # This process holds the 10,000 idle sockets; the proxy raises its own limit as Redis does.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard >= IDLE + 200, f"the hard limit on open files ({hard}) is too low for this test"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, IDLE + 200), hard))
    p = proxy("--maxclients", str(IDLE + 100), "--client-output-pause", "8mb",
              env=SMALL_QUARANTINE)
    redis_instance.client().set("big", b"v" * 200_000)
    held = []
    try:
        with RawConn(p.port) as warm:
            assert warm.command("PING") == b"PONG"
        baseline = rss_kb(p.process.pid)

        # A 2 GB bulk header: Redis's error, then the connection is closed.
        with RawConn(p.port) as c:
            c.send(b"*1\r\n$2147483648\r\n")
            assert c.read_until_eof(5) == b"-ERR Protocol error: invalid bulk length\r\n"

        # A 511 MB bulk (within proto-max-bulk-len) of which 1 MB arrives: nothing is reserved
        # for the rest.
        partial = socket.create_connection(("127.0.0.1", p.port))
        held.append(partial)
        partial.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$535822336\r\n" + b"x" * (1 << 20))

        # A client that asks for 400 MB of replies and reads none.
        held.append(ask_without_reading(p.port, cmd("GET", "big"), 2_000))

        # 10,000 idle connections.
        for _ in range(IDLE):
            held.append(socket.create_connection(("127.0.0.1", p.port)))
        wait_until(lambda: connected_clients(p.port) >= IDLE + 2 + 1, 30,
                   what="the idle connections accepted")

        # Others are served meanwhile, plain and BF commands alike.
        with RawConn(p.port, timeout=10) as other:
            assert other.command("SET", "k2", "v") == b"OK"
            assert other.command("GET", "k2") == b"v"
            assert other.command("BF.ADD", "bf", "item") == 1
            assert other.command("BF.EXISTS", "bf", "item") == 1

        grown_kb = rss_kb(p.process.pid) - baseline
        # Measured: 37 MB (Release), 45 MB (ASan) for everything above; 400 MB of replies, a
        # 511 MB bulk or 2 GB would each be far more. Allowed: 8 KB per idle connection (the
        # issue's bound is 10 KB) plus 48 MB for the rest.
        assert grown_kb < IDLE * 8 + 48 * 1024, f"RSS grew by {grown_kb} KB"
        assert p.process.poll() is None
    finally:
        for s in held:
            s.close()


def test_a_quiet_proxy_gives_freed_memory_back(proxy):
    """After a burst of work the proxy turns quiet, and gives back to the system the memory the
    burst freed (glibc keeps it otherwise): its heap returns near where it started, with its
    clients still connected."""
    p = proxy()
    with open(f"/proc/{p.process.pid}/maps") as f:
        if "libasan" in f.read():
            pytest.skip("a sanitizer build: its allocator is the sanitizer's, not glibc's, and "
                        "keeps freed memory in quarantine")

    def heap():
        return rss_kb(p.process.pid, "RssAnon")

    conns = [RawConn(p.port, timeout=30) for _ in range(20)]
    try:
        assert conns[0].command("BF.RESERVE", "f", "0.01", "10000000") == b"OK"
        baseline = heap()
        # Bursts of pipelined BF.MADD of 200 items on 20 connections: batches, plans and
        # buffers of several MB, freed in between, with small allocations that outlive them.
        for burst in range(4):
            for i, c in enumerate(conns):
                items = [f"b{burst}c{i}j{j}x{n}" for j in range(20) for n in range(200)]
                c.send(b"".join(cmd("BF.MADD", "f", *items[k:k + 200])
                                for k in range(0, len(items), 200)))
            for c in conns:
                for _ in range(20):
                    c.read_reply_raw()
            for i, c in enumerate(conns):
                assert c.command("SET", f"small{burst}:{i}", "v" * 100) == b"OK"
        busy = heap()
        assert busy > baseline + 4096, f"the burst did not grow the heap ({baseline} -> {busy} KB)"
        # Quiet: within a few cron periods (one second each) the heap is given back.
        wait_until(lambda: heap() < baseline + (busy - baseline) // 3, 10,
                   what=f"the heap given back (baseline {baseline} KB, after the burst {busy} KB)")
        assert all(c.command("PING") == b"PONG" for c in conns)
    finally:
        for c in conns:
            c.close()
