"""Commands the proxy answers itself: HELLO, CLIENT SETNAME/GETNAME/ID/SETINFO/INFO/LIST, PING,
ECHO, QUIT, RESET, SELECT (errors), INFO (upstream sections + # Proxy)."""

import time

from bp_helpers import (Err, RawConn, compare_with_redis, encode_command as cmd, parse_resp,
                        wait_until)


def upstream_version(redis_instance):
    return redis_instance.client().info("server")["redis_version"].encode()


def hello_bytes(version, client_id):
    return (b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$%d\r\n%s\r\n"
            b"$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:%d\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
            b"$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*1\r\n"
            % (len(version), version, client_id)) + BF_MODULE_RESP2


# The module whose commands the proxy answers (tests/integration/test_module_face.py), as
# HELLO lists it; the upstream's own modules (none for a plain redis-server) are not listed.
BF_MODULE_RESP2 = (b"*8\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:999999\r\n$4\r\npath\r\n"
                   b"$10\r\nbloomproxy\r\n$4\r\nargs\r\n*0\r\n")
BF_MODULE_RESP3 = b"%4\r\n" + BF_MODULE_RESP2[len(b"*8\r\n"):]


def test_hello_2_reply_is_redis_7s(bp, redis_instance):
    version = upstream_version(redis_instance)
    with bp.raw() as c:
        client_id = c.command("CLIENT", "ID")
        assert isinstance(client_id, int) and client_id > 0
        c.send(cmd("HELLO"))
        assert c.read_reply_raw() == hello_bytes(version, client_id)
        c.send(cmd("HELLO", "2"))
        assert c.read_reply_raw() == hello_bytes(version, client_id)
        # Still a RESP2 connection that works.
        assert c.command("SET", "hk", "v") == b"OK"
        assert c.command("GET", "hk") == b"v"


def test_hello_3_like_redis(bp, redis_instance):
    """HELLO 3 answers Redis's map (its id the proxy's client id) and the connection speaks RESP3
    from then on; HELLO 2 goes back."""
    payload = (cmd("HELLO", "3") + cmd("SET", "k", "v") + cmd("GET", "nosuch") +
               cmd("HSET", "h", "f", "1") + cmd("HGETALL", "h") + cmd("HELLO", "2") +
               cmd("GET", "nosuch") + cmd("HGETALL", "h"))
    replies = {}
    for name, port in (("proxy", bp.port), ("redis", redis_instance.port)):
        with RawConn(port) as c:
            c.send(cmd("FLUSHALL") + cmd("CLIENT", "ID"))
            c.read_reply_raw()
            client_id = c.read_reply_raw()
            c.send(payload)
            got = [c.read_reply_raw() for _ in range(8)]
        for i in (0, 5):
            # Each server's own client id.
            assert b"$2\r\nid\r\n" + client_id in got[i]
            got[i] = got[i].replace(b"$2\r\nid\r\n" + client_id, b"$2\r\nid\r\n:ID\r\n")
            if name == "proxy":
                # Redis's reply but for the module "bf" in "modules".
                module = BF_MODULE_RESP3 if i == 0 else BF_MODULE_RESP2
                assert got[i].endswith(b"$7\r\nmodules\r\n*1\r\n" + module), got[i]
                got[i] = got[i][:-len(b"*1\r\n" + module)] + b"*0\r\n"
        replies[name] = got
    assert replies["proxy"] == replies["redis"]
    assert replies["proxy"][0].startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
    assert replies["proxy"][2] == b"_\r\n" and replies["proxy"][6] == b"$-1\r\n"
    assert replies["proxy"][4] == b"%1\r\n$1\r\nf\r\n$1\r\n1\r\n"


def test_hello_bad_versions_like_redis(bp, redis_instance):
    for args in (("HELLO", "1"), ("HELLO", "4"), ("HELLO", "abc")):
        payload = cmd(*args) + cmd("PING")
        via_proxy = compare_with_redis(bp.port, redis_instance, payload, 2)
        assert via_proxy[0].startswith(b"-"), args
        assert via_proxy[1] == b"+PONG\r\n"


def test_hello_setname(bp, redis_instance):
    version = upstream_version(redis_instance)
    with bp.raw() as c:
        c.send(cmd("HELLO", "2", "SETNAME", "conn-a"))
        reply = c.read_reply_raw()
        client_id = c.command("CLIENT", "ID")
        assert reply == hello_bytes(version, client_id)
        assert c.command("CLIENT", "GETNAME") == b"conn-a"


def test_client_id_getname_setname(bp, redis_instance):
    with bp.raw() as a, bp.raw() as b:
        id_a = a.command("CLIENT", "ID")
        id_b = b.command("CLIENT", "ID")
        assert isinstance(id_a, int) and isinstance(id_b, int)
        assert id_a != id_b
        assert id_b > id_a  # Redis: ids increase monotonically, never reused
        with bp.raw() as c:
            assert c.command("CLIENT", "ID") > id_b
        a.send(cmd("CLIENT", "GETNAME"))
        assert a.read_reply_raw() == b"$-1\r\n"
        a.send(cmd("CLIENT", "SETNAME", "alpha"))
        assert a.read_reply_raw() == b"+OK\r\n"
        a.send(cmd("CLIENT", "GETNAME"))
        assert a.read_reply_raw() == b"$5\r\nalpha\r\n"
        b.send(cmd("CLIENT", "GETNAME"))
        assert b.read_reply_raw() == b"$-1\r\n"  # names are per client
        a.send(cmd("CLIENT", "SETNAME", ""))
        assert a.read_reply_raw() == b"+OK\r\n"
        a.send(cmd("CLIENT", "GETNAME"))
        assert a.read_reply_raw() == b"$-1\r\n"


def test_client_setname_errors_like_redis(bp, redis_instance):
    payload = (cmd("CLIENT", "SETNAME", "has space") + cmd("CLIENT", "SETNAME", "new\nline")
               + cmd("CLIENT", "SETNAME") + cmd("CLIENT", "GETNAME"))
    replies = compare_with_redis(bp.port, redis_instance, payload, 4)
    assert replies[0] == (b"-ERR Client names cannot contain spaces, newlines or special "
                          b"characters.\r\n")
    assert replies[3] == b"$-1\r\n"


def test_client_setinfo(bp):
    with bp.raw() as c:
        c.send(cmd("CLIENT", "SETINFO", "LIB-NAME", "mylib") +
               cmd("CLIENT", "SETINFO", "LIB-VER", "1.2.3") + cmd("PING"))
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.read_reply_raw() == b"+PONG\r\n"


def parse_client_line(line):
    fields = {}
    for part in line.split(" "):
        k, _, v = part.partition("=")
        fields[k] = v
    return fields


def client_list(conn):
    reply = conn.command("CLIENT", "LIST")
    assert isinstance(reply, bytes) and not isinstance(reply, Err), reply
    text = reply.decode()
    assert text.endswith("\n")
    return [parse_client_line(line) for line in text.split("\n") if line]


def test_client_list_and_info_show_proxy_clients(bp):
    with bp.raw() as a, bp.raw() as b:
        id_a = a.command("CLIENT", "ID")
        id_b = b.command("CLIENT", "ID")
        assert a.command("CLIENT", "SETNAME", "alpha") == b"OK"
        # Earlier connections (the fixture's readiness probe) may take a moment to go.
        wait_until(lambda: len(client_list(a)) == 2, 5, what="CLIENT LIST with 2 clients")
        clients = {int(c["id"]): c for c in client_list(b)}
        assert set(clients) == {id_a, id_b}
        host, port = a.sock.getsockname()[:2]
        assert clients[id_a]["addr"] == f"{host}:{port}"
        assert clients[id_a]["name"] == "alpha"
        assert clients[id_b]["name"] == ""
        host, port = b.sock.getsockname()[:2]
        assert clients[id_b]["addr"] == f"{host}:{port}"
        info = a.command("CLIENT", "INFO").decode()
        assert info.endswith("\n") and info.count("\n") == 1
        fields = parse_client_line(info.strip())
        assert fields["id"] == str(id_a) and fields["name"] == "alpha"
    with bp.raw() as c:
        wait_until(lambda: len(client_list(c)) == 1, 5, what="closed clients leave CLIENT LIST")


def test_client_list_shows_db(bp):
    with bp.raw() as a, bp.raw() as b:
        id_a = a.command("CLIENT", "ID")
        assert a.command("SELECT", "3") == b"OK"
        clients = {int(c["id"]): c for c in client_list(b)}
        assert clients[id_a]["db"] == "3"
        assert clients[b.command("CLIENT", "ID")]["db"] == "0"


def test_ping_echo_reset_quit_arity_like_redis(bp, redis_instance):
    payload = (cmd("PING") + cmd("PING", "hi there") + cmd("PING", "a", "b") + cmd("ECHO", "x")
               + cmd("ECHO", "") + cmd("ECHO") + cmd("ECHO", "a", "b") + cmd("ping")
               + cmd("echo", "\x00\r\n") + cmd("RESET", "x") + cmd("QUIT", "x"))
    replies = compare_with_redis(bp.port, redis_instance, payload, 11)
    assert replies[:2] == [b"+PONG\r\n", b"$8\r\nhi there\r\n"]
    assert replies[2] == b"-ERR wrong number of arguments for 'ping' command\r\n"
    assert replies[3:6] == [b"$1\r\nx\r\n", b"$0\r\n\r\n",
                            b"-ERR wrong number of arguments for 'echo' command\r\n"]
    assert replies[8] == b"$3\r\n\x00\r\n\r\n"


def test_select_errors_like_redis(bp, redis_instance):
    payload = (cmd("SELECT", "16") + cmd("SELECT", "-1") + cmd("SELECT", "abc") + cmd("SELECT")
               + cmd("SELECT", "15") + cmd("SET", "k", "15") + cmd("SELECT", "0")
               + cmd("GET", "k"))
    replies = compare_with_redis(bp.port, redis_instance, payload, 8)
    assert replies[0] == b"-ERR DB index is out of range\r\n"
    assert replies[2] == b"-ERR value is not an integer or out of range\r\n"
    assert replies[4:] == [b"+OK\r\n", b"+OK\r\n", b"+OK\r\n", b"$-1\r\n"]


def test_quit_replies_ok_then_closes(bp, redis_instance):
    with bp.raw() as c:
        c.send(cmd("PING") + cmd("QUIT") + cmd("SET", "after-quit", "1"))
        assert c.read_until_eof(5) == b"+PONG\r\n+OK\r\n"
    with bp.raw() as c:
        c.send(b"QUIT\r\n")
        assert c.read_until_eof(5) == b"+OK\r\n"
    time.sleep(0.2)
    assert redis_instance.client().get("after-quit") is None
    with bp.raw() as c:  # the proxy still serves
        assert c.command("PING") == b"PONG"


def test_reset(bp, redis_instance):
    redis_instance.client(db=3).set("k", "in-db3")
    with bp.raw() as c:
        assert c.command("CLIENT", "SETNAME", "named") == b"OK"
        assert c.command("SELECT", "3") == b"OK"
        assert c.command("GET", "k") == b"in-db3"
        c.send(cmd("RESET"))
        assert c.read_reply_raw() == b"+RESET\r\n"
        assert c.command("GET", "k") is None            # back in db 0
        assert c.command("CLIENT", "GETNAME") is None   # name cleared
        # RESET leaves a transaction.
        assert c.command("MULTI") == b"OK"
        assert c.command("SET", "m", "1") == b"QUEUED"
        c.send(cmd("RESET"))
        assert c.read_reply_raw() == b"+RESET\r\n"
        assert c.command("GET", "m") is None
        c.send(cmd("EXEC"))
        assert c.read_reply_raw() == b"-ERR EXEC without MULTI\r\n"
        # RESET leaves subscribed mode.
        c.send(cmd("SUBSCRIBE", "ch"))
        assert c.read_reply() == [b"subscribe", b"ch", 1]
        c.send(cmd("RESET"))
        assert c.read_reply_raw() == b"+RESET\r\n"
        assert c.command("SET", "after", "reset") == b"OK"
        wait_until(lambda: redis_instance.client().pubsub_numsub("ch") == [(b"ch", 0)], 2,
                   what="the upstream subscription to end after RESET")


def info_sections(text):
    sections = {}
    current = None
    for line in text.split("\r\n"):
        if line.startswith("# "):
            current = line[2:].strip()
            sections[current] = {}
        elif line and current is not None and ":" in line:
            k, _, v = line.partition(":")
            sections[current][k] = v
    return sections


def test_info_has_upstream_sections_and_proxy_section(bp, redis_instance):
    with bp.raw() as a, bp.raw() as b:
        a.send(cmd("INFO"))
        raw = a.read_reply_raw()
        assert raw.startswith(b"$") and raw.endswith(b"\r\n")
        text = parse_resp(raw)[0].decode()
        sections = info_sections(text)
        for name in ("Server", "Clients", "Memory", "Persistence", "Stats", "Replication",
                     "CPU", "Keyspace", "Proxy"):
            assert name in sections, f"INFO lacks section # {name}: {sorted(sections)}"
        assert sections["Server"]["redis_version"] == upstream_version(redis_instance).decode()
        proxy = sections["Proxy"]
        for field in ("proxy_version", "connected_clients", "upstream_connections",
                      "total_commands_processed"):
            assert field in proxy, f"# Proxy lacks {field}: {proxy}"
        assert proxy["proxy_version"].strip() != ""
        assert int(proxy["upstream_connections"]) >= 1

        def proxy_section():
            return info_sections(a.command("INFO").decode())["Proxy"]

        wait_until(lambda: int(proxy_section()["connected_clients"]) == 2, 5,
                   what="# Proxy connected_clients == 2")
        before = int(proxy_section()["total_commands_processed"])
        for i in range(50):
            b.send(cmd("SET", f"k{i}", "v"))
        for i in range(50):
            assert b.read_reply_raw() == b"+OK\r\n"
        after = int(proxy_section()["total_commands_processed"])
        assert after >= before + 50, (before, after)
        with bp.raw() as c:
            c.command("PING")
            assert int(proxy_section()["connected_clients"]) == 3
    # Keyspace comes from the upstream.
    assert info_sections(_info_text(bp))["Keyspace"]["db0"].startswith("keys=50,")


def _info_text(bp):
    with bp.raw() as c:
        return c.command("INFO").decode()


def test_info_section_argument_is_forwarded(bp, redis_instance):
    with bp.raw() as c:
        text = c.command("INFO", "keyspace").decode()
    assert "# Keyspace" in text
    assert "# Memory" not in text


def test_latency_histogram_counts_commands_answered_here(bp, redis_instance):
    # As Redis's unit/latency-monitor checks it: CLIENT ID and CLIENT LIST (answered by the
    # proxy) are listed under "client", one call each; CONFIG RESETSTAT clears them.
    with bp.raw() as c:
        assert c.command("CONFIG", "RESETSTAT") == b"OK"
        c.command("CLIENT", "ID")
        c.command("CLIENT", "LIST")
        c.command("SET", "k", "v")

        def histogram(*names):
            reply = c.command("LATENCY", "HISTOGRAM", *names)
            return {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}
        got = histogram("client")
        assert sorted(got) == [b"client|id", b"client|list"], got
        for entry in got.values():
            assert entry[:3] == [b"calls", 1, b"histogram_usec"] and entry[3][1] == 1, entry
        assert sorted(histogram("client|id", "set")) == [b"client|id", b"set"]
        assert {b"client|id", b"client|list", b"set"} <= set(histogram())
        assert c.command("CONFIG", "RESETSTAT") == b"OK"
        assert histogram("client") == {}
        # RESP3: maps, as Redis answers.
        c.send(cmd("HELLO", "3"))
        c.read_reply_raw()
        c.command("CLIENT", "ID")
        c.send(cmd("LATENCY", "HISTOGRAM", "client|id"))
        raw = c.read_reply_raw()
        assert raw.startswith(b"%1\r\n$9\r\nclient|id\r\n%2\r\n$5\r\ncalls\r\n:1\r\n"), raw
