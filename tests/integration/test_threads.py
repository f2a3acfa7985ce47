"""--threads N: several event loops accept on one port (SO_REUSEPORT). Every connection is served
by one of them; client ids stay unique; plain and BF.* commands from many connections behave as
with one loop; SIGTERM stops every loop and the process exits 0."""

import signal
import threading

from bp_helpers import RawConn


def test_threads_serve_many_connections(proxy):
    p = proxy("--threads", "2")
    conns = [RawConn(p.port, timeout=10) for _ in range(40)]
    try:
        ids = [c.command("CLIENT", "ID") for c in conns]
        assert len(set(ids)) == len(ids), f"client ids repeat across loops: {sorted(ids)}"
        assert conns[0].command("BF.RESERVE", "thr:bf", "0.01", "10000") == b"OK"
        errors = []

        def work(i, c):
            try:
                for j in range(200):
                    key = f"thr:{i}:{j}"
                    assert c.command("SET", key, str(j)) == b"OK"
                    assert c.command("GET", key) == str(j).encode()
                    assert c.command("BF.ADD", "thr:bf", key) in (0, 1)
                    assert c.command("BF.EXISTS", "thr:bf", key) == 1
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(f"connection {i}: {exc!r}")

        threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(conns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[:5]
        # Every add went to the same filter, whichever loop served it.
        card = conns[0].command("BF.CARD", "thr:bf")
        # (a distinct item may be a false positive: at 8,000 of 10,000 items, a few dozen at most)
        assert 40 * 200 - 80 <= card <= 40 * 200, card
    finally:
        for c in conns:
            c.close()
    assert p.terminate_and_wait(signal.SIGTERM, timeout=10) == 0
