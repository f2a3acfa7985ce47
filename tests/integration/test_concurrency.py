"""Many clients at once: every client receives its own replies, in order, never another's."""

import threading

from bp_helpers import RawConn, encode_command as cmd


def run_threads(target, n):
    errors = []

    def wrapper(tid):
        try:
            target(tid)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"thread {tid}: {exc!r}")

    threads = [threading.Thread(target=wrapper, args=(t,)) for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "threads still running after 120 s"
    assert not errors, "\n".join(errors[:20])


def test_20_clients_each_see_only_their_own_replies(bp, redis_instance):
    iterations = 2000

    def worker(tid):
        r = bp.client()
        key, ctr = f"conc:{tid}:key", f"conc:{tid}:ctr"
        for i in range(iterations):
            value = f"t{tid}-i{i}-" + "x" * (tid % 7)
            assert r.set(key, value) is True
            got = r.get(key)
            assert got == value.encode(), f"GET {key} #{i}: got {got!r}, expected {value!r}"
            n = r.incr(ctr)
            assert n == i + 1, f"INCR {ctr} #{i}: got {n!r}, expected {i + 1}"
        r.close()

    run_threads(worker, 20)
    direct = redis_instance.client()
    for tid in range(20):
        assert direct.get(f"conc:{tid}:ctr") == str(iterations).encode()


def test_pipelining_clients_in_parallel(bp):
    """Clients sending batches of 200 pipelined commands at the same time."""
    batches, batch = 25, 200

    def worker(tid):
        with RawConn(bp.port, timeout=30) as c:
            for b in range(batches):
                payload = b"".join(cmd("SET", f"p:{tid}:{i}", f"{tid}:{b}:{i}")
                                   + cmd("GET", f"p:{tid}:{i}") for i in range(batch))
                c.send(payload)
                for i in range(batch):
                    assert c.read_reply_raw() == b"+OK\r\n"
                    v = f"{tid}:{b}:{i}".encode()
                    got = c.read_reply_raw()
                    assert got == b"$%d\r\n%s\r\n" % (len(v), v), (b, i, got)

    run_threads(worker, 8)


def test_transactions_and_plain_commands_concurrently(bp, redis_instance):
    """Pinned (MULTI/EXEC) clients and multiplexed clients interleaved."""
    rounds = 300

    def tx_worker(tid):
        r = bp.client()
        for i in range(rounds):
            pipe = r.pipeline(transaction=True)
            pipe.incr(f"tx:{tid}")
            pipe.set(f"txv:{tid}", f"{tid}-{i}")
            pipe.get(f"txv:{tid}")
            assert pipe.execute() == [i + 1, True, f"{tid}-{i}".encode()]
        r.close()

    def plain_worker(tid):
        r = bp.client()
        for i in range(rounds * 2):
            assert r.set(f"pl:{tid}", i) is True
            assert r.get(f"pl:{tid}") == str(i).encode()
        r.close()

    run_threads(lambda t: (tx_worker if t % 2 else plain_worker)(t), 8)
    direct = redis_instance.client()
    for tid in range(1, 8, 2):
        assert direct.get(f"tx:{tid}") == str(rounds).encode()


def _upstream_connections_running(direct, cmds):
    return [c for c in direct.client_list() if c.get("cmd") in cmds]


def test_ordinary_commands_are_multiplexed(proxy, redis_instance):
    """With --upstream-connections 1, the ordinary commands of 12 concurrent clients all reach
    redis-server over a single connection, and every client still gets its own replies."""
    p = proxy("--upstream-connections", "1")
    direct = redis_instance.client()
    stop = threading.Event()
    seen = []

    def sampler():
        while not stop.is_set():
            seen.append(len(_upstream_connections_running(direct, {"set", "get", "incr"})))
            stop.wait(0.05)

    s = threading.Thread(target=sampler)
    s.start()
    try:
        def worker(tid):
            r = p.client()
            for i in range(400):
                assert r.set(f"m:{tid}", f"{tid}.{i}") is True
                assert r.get(f"m:{tid}") == f"{tid}.{i}".encode()
                assert r.incr(f"mc:{tid}") == i + 1
            r.close()

        run_threads(worker, 12)
    finally:
        stop.set()
        s.join(5)
    assert seen and max(seen) <= 1, f"upstream connections running client commands: {seen}"


def test_client_leaving_with_replies_pending_does_not_disturb_others(bp):
    """Clients that send a pipeline and disconnect at once: their replies must be dropped, not
    delivered to (or desynchronise) the clients still connected."""
    with RawConn(bp.port, timeout=10) as steady:
        for round_ in range(20):
            leaver = RawConn(bp.port)
            leaver.send(b"".join(cmd("SET", f"l{round_}:{i}", "x" * 100) + cmd("GET", "l0:0")
                                 for i in range(300)))
            leaver.close()
            steady.send(cmd("SET", "steady", str(round_)) + cmd("GET", "steady")
                        + cmd("ECHO", f"e{round_}"))
            assert steady.read_reply_raw() == b"+OK\r\n"
            assert steady.read_reply() == str(round_).encode()
            assert steady.read_reply() == f"e{round_}".encode()


def test_slow_reader_does_not_stall_other_clients(bp, redis_instance):
    """A client that pipelines big replies (60 MB) and reads none of them while another client
    makes 200 round trips: every one of those is answered although the slow client has read
    nothing (a proxy that held the other client's replies behind the slow one's would leave it
    waiting until the slow client reads, and its read would time out), and the slow client then
    gets all of its replies intact. No clock: the proxy's speed (an ASan build copying 60 MB) is
    bench/'s business, not this test's."""
    import time
    value = bytes(range(256)) * 4096  # 1 MB
    redis_instance.client().set("big", value)
    slow = RawConn(bp.port, timeout=30)
    n = 60
    slow.send(cmd("GET", "big") * n + cmd("PING"))
    time.sleep(0.3)
    with RawConn(bp.port, timeout=10) as other:
        for i in range(200):
            assert other.command("SET", "o", str(i)) == b"OK"
            assert other.command("GET", "o") == str(i).encode()
    for k in range(n):
        assert slow.read_reply() == value, k
    assert slow.read_reply() == b"PONG"
    slow.close()


def test_hundreds_of_connections(bp):
    conns = [RawConn(bp.port, timeout=10) for _ in range(300)]
    for i, c in enumerate(conns):
        c.send(cmd("SET", f"c{i}", str(i)) + cmd("GET", f"c{i}"))
    for i, c in enumerate(conns):
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.read_reply() == str(i).encode()
    for c in conns:
        c.close()
    with RawConn(bp.port) as c:
        assert c.command("DBSIZE") == 300
