"""CLIENT KILL / CLIENT UNBLOCK with the ids and addresses the proxy shows its clients (CLIENT ID,
CLIENT LIST), and the proxy's recovery when its own upstream connections are killed."""

import time

from bp_helpers import RawConn, encode_command as cmd, wait_until


def test_client_kill_id_of_a_proxy_client(bp):
    with bp.raw() as victim, bp.raw() as admin:
        victim_id = victim.command("CLIENT", "ID")
        assert admin.command("CLIENT", "KILL", "ID", str(victim_id)) == 1
        assert victim.is_closed(2), "the killed client is still connected"
        assert admin.command("CLIENT", "KILL", "ID", str(victim_id)) == 0
        assert admin.command("PING") == b"PONG"


def test_client_kill_addr_of_a_proxy_client(bp):
    with bp.raw() as victim, bp.raw() as admin:
        host, port = victim.sock.getsockname()[:2]
        admin.send(cmd("CLIENT", "KILL", f"{host}:{port}"))
        assert admin.read_reply_raw() == b"+OK\r\n"
        assert victim.is_closed(2), "the killed client is still connected"


def test_client_unblock_a_blocked_proxy_client(bp):
    with bp.raw(timeout=10) as blocked, bp.raw() as admin:
        blocked_id = blocked.command("CLIENT", "ID")
        blocked.send(cmd("BLPOP", "never", "5"))
        time.sleep(0.3)
        t0 = time.monotonic()
        assert admin.command("CLIENT", "UNBLOCK", str(blocked_id)) == 1
        assert blocked.read_reply_raw() == b"*-1\r\n"
        assert time.monotonic() - t0 < 1
        blocked.send(cmd("BLPOP", "never", "5"))
        time.sleep(0.3)
        admin.send(cmd("CLIENT", "UNBLOCK", str(blocked_id), "ERROR"))
        assert admin.read_reply_raw() == b":1\r\n"
        assert blocked.read_reply_raw() == (b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")


def test_proxy_recovers_when_its_upstream_connections_are_killed(bp, redis_instance):
    with RawConn(bp.port, timeout=10) as c:
        assert c.command("SET", "k", "1") == b"OK"
        sub = RawConn(bp.port, timeout=10)
        sub.send(cmd("SUBSCRIBE", "ch"))
        assert sub.read_reply() == [b"subscribe", b"ch", 1]
        # Kill every upstream connection of the proxy from redis-server's side.
        direct = redis_instance.client()
        assert direct.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes") >= 1
        assert direct.execute_command("CLIENT", "KILL", "TYPE", "pubsub") >= 1

        def works():
            raw = c.command("GET", "k")
            assert raw == b"1" or raw.startswith(b"upstream unavailable"), raw
            return raw == b"1"

        wait_until(works, 5, interval=0.05, what="service after the upstream connections died")
        raw = None
        try:
            sub.sock.settimeout(3)
            raw = sub.read_reply_raw()
        except (EOFError, ConnectionResetError):
            pass
        assert raw is None or raw.startswith(b"-ERR upstream unavailable"), raw
        sub.close()


def test_client_list_flags_b_while_blocked(bp):
    # Redis's letters in its order; b while a blocking command waits, as Redis shows it.
    with bp.raw(timeout=10) as blocked, bp.raw() as admin:
        blocked_id = blocked.command("CLIENT", "ID")
        assert blocked.command("CLIENT", "TRACKING", "ON", "BCAST") == b"OK"

        def flags():
            line = admin.command("CLIENT", "LIST", "ID", str(blocked_id)).decode()
            return line.split(" flags=")[1].split(" ")[0]
        assert flags() == "t"
        blocked.send(cmd("BLPOP", "list", "0"))
        wait_until(lambda: flags() == "bt", 5, what="flags=bt")
        assert admin.command("RPUSH", "list", "x") == 1
        assert blocked.read_reply() == [b"list", b"x"]
        assert flags() == "t"


def test_slowlog_names_the_client_for_its_own_connection(bp, redis_instance):
    # A command on the client's own upstream connection (a blocking one here) is logged with
    # the client's name, as Redis logs it; a later client on that connection has its own.
    with RawConn(redis_instance.port) as direct, bp.raw(timeout=10) as c:
        assert direct.command("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
        assert direct.command("SLOWLOG", "RESET") == b"OK"
        # (A BLPOP that times out is not logged; one that finds an element is.)
        assert direct.command("RPUSH", "l", "1", "2", "3") == 3
        assert c.command("CLIENT", "SETNAME", "named-one") == b"OK"
        assert c.command("BLPOP", "l", "0") == [b"l", b"1"]
        assert c.command("CLIENT", "SETNAME", "renamed") == b"OK"
        assert c.command("BLPOP", "l", "0") == [b"l", b"2"]
        with bp.raw(timeout=10) as other:
            assert other.command("BLPOP", "l", "0") == [b"l", b"3"]
        entries = [e for e in direct.command("SLOWLOG", "GET", "100")
                   if e[3][:1] in ([b"BLPOP"], [b"blpop"])]
        assert [e[5] for e in reversed(entries)] == [b"named-one", b"renamed", b""], entries
        direct.command("CONFIG", "SET", "slowlog-log-slower-than", "10000")
