"""auth-mode upstream: AUTH and HELLO AUTH are checked by the upstream against its own ACL users,
and a logged-in client's commands run as that user there (its key patterns and command rules
apply), on connections shared by the clients of the same user. RESET returns to the default
user. Replies are compared with the same sequence sent to a redis-server directly."""

import pytest

from bp_helpers import RawConn, encode_command as cmd, replies_of

WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


def make_users(server):
    c = server.client()
    c.execute_command("ACL", "SETUSER", "bob", "on", ">123", "+@all", "~x*")
    c.execute_command("ACL", "SETUSER", "carol", "on", ">456", "+get", "+set", "+acl|whoami",
                      "~*")
    # Key commands on names that could be filters (DEL, HSET, ...) run in a script that also
    # names the name's internal keys (docs/compatibility.md): a user needs EVAL and access to
    # every key for them.
    c.execute_command("ACL", "SETUSER", "dora", "on", ">789", "+@all", "~*")


def test_login_checked_by_the_upstream_replies_as_redis(proxy, redis_instance, redis_factory):
    make_users(redis_instance)
    reference = redis_factory()
    make_users(reference)
    p = proxy("--auth-mode", "upstream")
    payload = b"".join([
        cmd("AUTH", "bob", "nope"), cmd("ACL", "WHOAMI"), cmd("AUTH", "bob", "123"),
        cmd("ACL", "WHOAMI"), cmd("SET", "x1", "v"), cmd("SET", "y1", "v"), cmd("GET", "x1"),
        cmd("AUTH", "carol", "456"), cmd("ACL", "WHOAMI"), cmd("INCR", "x1"), cmd("GET", "x1"),
        cmd("AUTH", "onlypassword"), cmd("HELLO", "2", "AUTH", "bob", "bad"),
        cmd("HELLO", "2", "AUTH", "bob", "123", "SETNAME", "n1"), cmd("CLIENT", "GETNAME"),
        cmd("ACL", "WHOAMI"), cmd("RESET"), cmd("ACL", "WHOAMI"), cmd("CLIENT", "GETNAME"),
    ])
    n = 19
    via_proxy = replies_of(p.port, payload, n)
    direct = replies_of(reference.port, payload, n)
    # HELLO's id is each server's own client id.
    hello = 13
    assert via_proxy[hello].startswith(b"*14\r\n$6\r\nserver\r\n")
    via_proxy[hello] = direct[hello] = b"(hello)"
    assert via_proxy == direct
    assert via_proxy[0] == WRONGPASS
    assert via_proxy[5].startswith(b"-NOPERM")
    assert via_proxy[9].startswith(b"-NOPERM")
    assert via_proxy[15] == b"$3\r\nbob\r\n" and via_proxy[17] == b"$7\r\ndefault\r\n"


def test_each_client_keeps_its_own_user(proxy, redis_instance):
    make_users(redis_instance)
    p = proxy("--auth-mode", "upstream", "--upstream-connections", "1")
    with RawConn(p.port) as bob, RawConn(p.port) as carol, RawConn(p.port) as anon:
        assert bob.command("AUTH", "bob", "123") == b"OK"
        assert carol.command("AUTH", "carol", "456") == b"OK"
        # Interleaved pipelines: each command runs as its own client's user.
        for _ in range(20):
            bob.send(cmd("ACL", "WHOAMI") + cmd("SET", "x2", "b"))
            carol.send(cmd("ACL", "WHOAMI") + cmd("INCR", "x2"))
            anon.send(cmd("ACL", "WHOAMI"))
            assert bob.read_reply_raw() == b"$3\r\nbob\r\n"
            assert bob.read_reply_raw() == b"+OK\r\n"
            assert carol.read_reply_raw() == b"$5\r\ncarol\r\n"
            assert carol.read_reply_raw().startswith(b"-NOPERM")
            assert anon.read_reply_raw() == b"$7\r\ndefault\r\n"
        info = bob.command("CLIENT", "INFO").decode()
        assert " user=bob " in info
    # Clients of one user share its connections: two bob clients, bob's one shared connection
    # (plus none of their own once idle).
    with RawConn(p.port) as b1, RawConn(p.port) as b2:
        assert b1.command("AUTH", "bob", "123") == b"OK"
        assert b2.command("AUTH", "bob", "123") == b"OK"
        assert b1.command("SET", "x3", "1") == b"OK"
        assert b2.command("GET", "x3") == b"1"
        names = [line for line in redis_instance.client().execute_command(
            "CLIENT", "LIST").decode().splitlines() if " user=bob " in line]
        assert len(names) == 1, names


def test_hello3_auth_upstream(proxy, redis_instance):
    make_users(redis_instance)
    p = proxy("--auth-mode", "upstream")
    with RawConn(p.port) as c:
        c.send(cmd("HELLO", "3", "AUTH", "dora", "wrong"))
        assert c.read_reply_raw() == WRONGPASS
        c.send(cmd("HELLO", "3", "AUTH", "dora", "789"))
        reply = c.read_reply_raw()
        assert reply.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
        assert b"$5\r\nproto\r\n:3\r\n" in reply
        c.send(cmd("ACL", "WHOAMI") + cmd("HSET", "xh", "a", "1") + cmd("HGETALL", "xh") +
               cmd("GET", "nosuchx"))
        assert [c.read_reply_raw() for _ in range(4)] == [
            b"$4\r\ndora\r\n", b":1\r\n", b"%1\r\n$1\r\na\r\n$1\r\n1\r\n", b"_\r\n"]


@pytest.mark.parametrize("mode", ["proxy", "upstream"])
def test_proxy_users_exist_only_in_proxy_mode(proxy, redis_instance, mode):
    make_users(redis_instance)
    p = proxy("--auth-mode", mode, "--user", "dave:789")
    with RawConn(p.port) as c:
        c.send(cmd("AUTH", "dave", "789"))
        got = c.read_reply_raw()
        assert got == (b"+OK\r\n" if mode == "proxy" else WRONGPASS)
        c.send(cmd("AUTH", "bob", "123"))
        got = c.read_reply_raw()
        assert got == (WRONGPASS if mode == "proxy" else b"+OK\r\n")
