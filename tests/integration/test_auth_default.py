"""auth-mode auto (the default): a proxy started with no options is transparent to AUTH. With no
requirepass and no users of its own, AUTH and HELLO AUTH are checked by the upstream against
its ACL users; before a login, when the upstream needs a password the proxy's own login does
not give, clients are answered as Redis answers them (-NOAUTH, Redis's request limits). A reload
switches the mode for the AUTHs that follow; logged-in clients keep their login. Behind a
sharding proxy AUTH stays the proxy's. Replies are compared with a redis-server's."""

import signal

from bp_helpers import RawConn, encode_command as cmd, replies_of, wait_until

PASS = "toppw"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
NOAUTH = b"-NOAUTH Authentication required.\r\n"


def make_server(redis_factory):
    server = redis_factory(password=PASS)
    c = server.client()
    c.execute_command("ACL", "SETUSER", "bob", "on", ">123", "+@all", "~*")
    c.execute_command("ACL", "SETUSER", "carol", "on", ">456", "+eval", "+get", "+acl|whoami",
                      "~*")
    return server


def both(p, server, payload, n):
    """The replies to `payload` via the proxy and from a second, identical redis-server."""
    return replies_of(p.port, payload, n), replies_of(server.port, payload, n)


def test_logins_match_redis(proxy, redis_factory):
    upstream, reference = make_server(redis_factory), make_server(redis_factory)
    p = proxy(upstream=upstream.address)
    payload = b"".join([
        cmd("GET", "k"), cmd("BF.ADD", "bf", "x"), cmd("CMS.QUERY", "c", "x"),
        cmd("CF.EXISTS", "cf", "x"), cmd("AUTH", "bob", "nope"), cmd("AUTH", "wrong"),
        cmd("AUTH", "bob", "123"), cmd("ACL", "WHOAMI"), cmd("SET", "k", "v"),
        cmd("AUTH", "carol", "456"), cmd("ACL", "WHOAMI"),
        # Script ACL check: carol may EVAL but not SET.
        cmd("EVAL", "return redis.call('set','k','w')", "0"),
        cmd("EVAL", "return redis.pcall('get','k')", "0"),
        cmd("RESET"), cmd("ACL", "WHOAMI"), cmd("AUTH", PASS), cmd("ACL", "WHOAMI"),
    ])
    n = 17
    via_proxy, direct = both(p, reference, payload, n)
    # The reference has no RedisBloom: a server with the module answers its commands -NOAUTH.
    assert via_proxy[:4] == [NOAUTH] * 4
    direct[1:4] = via_proxy[1:4]
    assert via_proxy == direct
    assert via_proxy[4:6] == [WRONGPASS, WRONGPASS]
    assert via_proxy[7] == b"$3\r\nbob\r\n" and via_proxy[10] == b"$5\r\ncarol\r\n"
    assert via_proxy[11].startswith(b"-ERR The user executing the script can't run this command")
    assert via_proxy[13:15] == [b"+RESET\r\n", NOAUTH]
    assert via_proxy[16] == b"$7\r\ndefault\r\n"


def test_hello_auth_matches_redis(proxy, redis_factory):
    upstream, reference = make_server(redis_factory), make_server(redis_factory)
    p = proxy(upstream=upstream.address)
    payload = b"".join([
        cmd("HELLO", "3"), cmd("HELLO", "3", "AUTH", "bob", "bad"),
        cmd("HELLO", "2", "AUTH", "bob", "123", "SETNAME", "n1"), cmd("ACL", "WHOAMI"),
        cmd("CLIENT", "GETNAME"),
    ])
    via_proxy, direct = both(p, reference, payload, 5)
    assert via_proxy[2].startswith(b"*14\r\n$6\r\nserver\r\n")
    via_proxy[2] = direct[2] = b"(hello: its own id)"
    assert via_proxy == direct
    assert via_proxy[0].startswith(b"-NOAUTH HELLO must be called")
    assert via_proxy[1] == WRONGPASS and via_proxy[3] == b"$3\r\nbob\r\n"
    with RawConn(p.port) as c:
        c.send(cmd("HELLO", "3", "AUTH", "carol", "456"))
        assert c.read_reply_raw().startswith(b"%7\r\n$6\r\nserver\r\n")
        assert c.command("ACL", "WHOAMI") == b"carol"


def test_unauthenticated_oversized_request_closes_only_its_client(proxy, redis_factory):
    upstream, reference = make_server(redis_factory), make_server(redis_factory)
    p = proxy("--upstream-connections", "1", upstream=upstream.address)
    big_count = cmd("DEL", *[f"k{i}" for i in range(11)])
    big_bulk = cmd("GET", "x" * 16385)
    for payload in (big_count, big_bulk):
        via_proxy, direct = both(p, reference, payload, 1)
        assert via_proxy == direct
        assert via_proxy[0].startswith(b"-ERR Protocol error: unauthenticated")
    # Other clients not logged in share the upstream connection: it is still there.
    with RawConn(p.port) as other:
        assert other.command("AUTH", "bob", "123") == b"OK"
        assert other.command("ACL", "WHOAMI") == b"bob"
        # Logged in, the ordinary limits apply.
        assert other.command("SET", "big", "x" * 20000) == b"OK"
    assert p.alive()


def test_proxy_login_still_used_before_auth(proxy, redis_factory):
    upstream = make_server(redis_factory)
    # A sidecar: the proxy logs in with the upstream's password, its clients need none.
    p = proxy("--upstream-password", PASS, upstream=upstream.address)
    with RawConn(p.port) as c:
        assert c.command("ACL", "WHOAMI") == b"default"
        assert c.command("SET", "k", "v") == b"OK"
        assert c.command("AUTH", "carol", "456") == b"OK"
        assert c.command("ACL", "WHOAMI") == b"carol"


def sighup(p, before):
    p.process.send_signal(signal.SIGHUP)
    wait_until(lambda: p.log().count("configuration reloaded") > before, 10, what="reload")


def test_reload_switches_modes_both_ways(proxy, redis_factory, tmp_path):
    upstream = make_server(redis_factory)
    conf = tmp_path / "bp.conf"
    conf.write_text("upstream-password %s\n" % PASS)
    p = proxy("--config", str(conf), upstream=upstream.address)
    with RawConn(p.port) as bob:
        assert bob.command("AUTH", "bob", "123") == b"OK"
        conf.write_text("upstream-password %s\nrequirepass proxypw\n" % PASS)
        sighup(p, 0)
        # Now the proxy checks AUTH: the upstream's users are unknown to it...
        with RawConn(p.port) as c:
            c.send(cmd("AUTH", "bob", "123") + cmd("GET", "k"))
            assert [c.read_reply_raw() for _ in range(2)] == [WRONGPASS, NOAUTH]
            assert c.command("AUTH", "proxypw") == b"OK"
        # ...but bob keeps his login, and his connection.
        assert bob.command("ACL", "WHOAMI") == b"bob"
        conf.write_text("upstream-password %s\n" % PASS)
        sighup(p, 1)
        assert bob.command("ACL", "WHOAMI") == b"bob"
        with RawConn(p.port) as c:
            assert c.command("AUTH", "carol", "456") == b"OK"
            assert c.command("ACL", "WHOAMI") == b"carol"
        conf.write_text("upstream-password %s\nauth-mode proxy\n" % PASS)
        sighup(p, 2)
        with RawConn(p.port) as c:
            c.send(cmd("AUTH", "carol", "456"))
            assert c.read_reply_raw() == WRONGPASS
        assert bob.command("ACL", "WHOAMI") == b"bob"


def test_sharding_proxy_keeps_auth_in_the_proxy(sharding_proxy, redis_instance):
    p = sharding_proxy()
    with p.raw() as c:
        c.send(cmd("AUTH", "foo") + cmd("AUTH", "bob", "x") + cmd("SET", "k", "v"))
        got = [c.read_reply_raw() for _ in range(3)]
    direct = replies_of(redis_instance.port, cmd("AUTH", "foo") + cmd("AUTH", "bob", "x"), 2)
    assert got == direct + [b"+OK\r\n"]
    assert got[0].startswith(b"-ERR AUTH <password> called without any password")
