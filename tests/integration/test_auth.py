"""Client authentication (--requirepass, BLOOMPROXY_REQUIREPASS, AUTH, HELLO AUTH) and upstream
authentication (--upstream-password/--upstream-user and their environment variables)."""

import subprocess

import pytest
import redis

from bp_helpers import (BLOOMPROXY_BIN, HOST, RawConn, compare_with_redis, encode_command as cmd,
                        replies_of)

PASS = "s3cret"
# The upstream's password: long enough that no random temporary path (which INFO and the log
# show) can contain it.
UPSTREAM_PW = "upstream-secret-7d1e"
NOAUTH = b"-NOAUTH Authentication required.\r\n"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


@pytest.fixture
def reference_redis(redis_factory):
    """A redis-server with the same password, the reference for exact replies."""
    return redis_factory(password=PASS)


def test_noauth_wrongpass_then_ok(proxy, redis_instance):
    p = proxy("--requirepass", PASS)
    with RawConn(p.port) as c:
        c.send(cmd("GET", "k"))
        assert c.read_reply_raw() == NOAUTH
        c.send(cmd("SET", "k", "v"))
        assert c.read_reply_raw() == NOAUTH
        c.send(cmd("AUTH", "wrong"))
        assert c.read_reply_raw() == WRONGPASS
        c.send(cmd("GET", "k"))
        assert c.read_reply_raw() == NOAUTH
        c.send(cmd("AUTH", PASS))
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.command("SET", "k", "v") == b"OK"
        assert c.command("GET", "k") == b"v"
    assert redis_instance.client().get("k") == b"v"
    with RawConn(p.port) as c:
        c.send(cmd("AUTH", "default", PASS))
        assert c.read_reply_raw() == b"+OK\r\n"
        assert c.command("GET", "k") == b"v"
    with RawConn(p.port) as c:
        c.send(cmd("AUTH", "default", "wrong") + cmd("AUTH", "nosuchuser", PASS) + cmd("GET", "k"))
        assert [c.read_reply_raw() for _ in range(3)] == [WRONGPASS, WRONGPASS, NOAUTH]


def test_unauthenticated_replies_match_redis(proxy, reference_redis):
    p = proxy("--requirepass", PASS)
    payload = b"".join([
        cmd("GET", "k"), cmd("PING"), cmd("ECHO", "x"), cmd("CLIENT", "ID"),
        cmd("CLIENT", "SETNAME", "n"), cmd("SELECT", "1"), cmd("MULTI"), cmd("SUBSCRIBE", "c"),
        cmd("INFO"), cmd("BLPOP", "l", "1"), cmd("WATCH", "k"), cmd("COMMAND", "COUNT"),
        cmd("NOSUCHCOMMAND"), cmd("AUTH", "wrong"), cmd("AUTH", "default", "wrong"),
        cmd("HELLO", "2", "AUTH", "default", "wrong"), cmd("AUTH", PASS), cmd("GET", "k"),
        cmd("ECHO", "authed"),
    ])
    n = 19
    via_proxy = replies_of(p.port, payload, n)
    direct = replies_of(reference_redis.port, payload, n)
    assert via_proxy == direct
    assert via_proxy[:12] == [NOAUTH] * 12
    # Redis 7.0 reports an unknown command as such even before AUTH.
    assert via_proxy[12] == b"-ERR unknown command 'NOSUCHCOMMAND', with args beginning with: \r\n"
    assert via_proxy[13:18] == [WRONGPASS] * 3 + [b"+OK\r\n", b"$-1\r\n"]


def test_unauthenticated_subcommand_errors_match_redis(proxy, reference_redis):
    # Redis checks that a (sub)command exists and has the right arity before it checks
    # authentication.
    p = proxy("--requirepass", PASS)
    payload = (cmd("CLIENT", "NOSUCH") + cmd("CLIENT", "ID", "x") + cmd("GET")
               + cmd("CLIENT", "ID"))
    via_proxy = replies_of(p.port, payload, 4)
    assert via_proxy == replies_of(reference_redis.port, payload, 4)
    assert via_proxy[3] == NOAUTH


def test_hello_without_auth_when_password_required_matches_redis(proxy, reference_redis):
    p = proxy("--requirepass", PASS)
    payload = cmd("HELLO", "2") + cmd("HELLO")
    assert replies_of(p.port, payload, 2) == replies_of(reference_redis.port, payload, 2)


def test_hello_2_auth(proxy, redis_instance):
    p = proxy("--requirepass", PASS)
    version = redis_instance.client().info("server")["redis_version"].encode()
    with RawConn(p.port) as c:
        c.send(cmd("HELLO", "2", "AUTH", "default", "wrong"))
        assert c.read_reply_raw() == WRONGPASS
        c.send(cmd("GET", "k"))
        assert c.read_reply_raw() == NOAUTH
        c.send(cmd("HELLO", "2", "AUTH", "default", PASS, "SETNAME", "hello-client"))
        reply = c.read_reply()
        assert reply[:6] == [b"server", b"redis", b"version", version, b"proto", 2]
        assert reply[6] == b"id" and isinstance(reply[7], int)
        assert reply[8:] == [b"mode", b"standalone", b"role", b"master", b"modules",
                             [[b"name", b"bf", b"ver", 999999, b"path", b"bloomproxy", b"args",
                               []]]]
        assert c.command("CLIENT", "ID") == reply[7]
        assert c.command("CLIENT", "GETNAME") == b"hello-client"
        assert c.command("SET", "hk", "1") == b"OK"


def test_authentication_is_per_client(proxy):
    p = proxy("--requirepass", PASS)
    with RawConn(p.port) as a, RawConn(p.port) as b:
        assert a.command("AUTH", PASS) == b"OK"
        assert a.command("SET", "x", "1") == b"OK"
        b.send(cmd("GET", "x"))
        assert b.read_reply_raw() == NOAUTH
        assert a.command("GET", "x") == b"1"


def test_requirepass_from_environment(proxy):
    p = proxy(env={"BLOOMPROXY_REQUIREPASS": "envpass"})
    with RawConn(p.port) as c:
        c.send(cmd("GET", "k"))
        assert c.read_reply_raw() == NOAUTH
        c.send(cmd("AUTH", PASS))
        assert c.read_reply_raw() == WRONGPASS
        assert c.command("AUTH", "envpass") == b"OK"
        assert c.command("PING") == b"PONG"


def test_clients_with_password(proxy):
    p = proxy("--requirepass", PASS)
    r = redis.Redis(host=HOST, port=p.port, password=PASS, socket_timeout=10)
    assert r.set("py", "1") is True
    assert r.get("py") == b"1"
    # redis-py 4.3 raises WRONGPASS as a plain ResponseError, NOAUTH as AuthenticationError.
    with pytest.raises(redis.ResponseError, match="^WRONGPASS invalid username-password pair"):
        redis.Redis(host=HOST, port=p.port, password="bad", socket_timeout=10).get("py")
    with pytest.raises(redis.AuthenticationError, match="Authentication required"):
        redis.Redis(host=HOST, port=p.port, socket_timeout=10).get("py")
    res = subprocess.run(["redis-cli", "-h", HOST, "-p", str(p.port), "-a", PASS,
                          "--no-auth-warning", "GET", "py"], capture_output=True, timeout=30)
    assert res.stdout == b"1\n", res
    res = subprocess.run(["redis-cli", "-h", HOST, "-p", str(p.port), "GET", "py"],
                         capture_output=True, timeout=30)
    assert b"NOAUTH Authentication required." in res.stdout + res.stderr


def test_auth_without_configured_password_matches_redis(bp, redis_instance):
    payload = cmd("AUTH", "foo") + cmd("AUTH", "default", "anything") + cmd(
        "AUTH", "nosuchuser", "x") + cmd("AUTH") + cmd("GET", "k")
    via_proxy = replies_of(bp.port, payload, 5)
    assert via_proxy == replies_of(redis_instance.port, payload, 5)
    assert via_proxy[0] == (b"-ERR AUTH <password> called without any password configured for "
                            b"the default user. Are you sure your configuration is correct?\r\n")


@pytest.fixture
def upstream_with_password(redis_factory):
    return redis_factory(password=UPSTREAM_PW)


def _exercise_all_connection_kinds(p, direct):
    """Shared, pinned (MULTI, WATCH, SELECT), blocking and pub/sub paths all work."""
    with RawConn(p.port) as c, RawConn(p.port) as pub:
        assert c.command("SET", "ua", "1") == b"OK"
        assert c.command("GET", "ua") == b"1"
        c.send(cmd("MULTI") + cmd("INCR", "ua") + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n",
                                                          b"*1\r\n:2\r\n"]
        assert c.command("RPUSH", "uq", "x") == 1
        assert c.command("BLPOP", "uq", "1") == [b"uq", b"x"]
        assert c.command("SELECT", "2") == b"OK"
        assert c.command("SET", "ua2", "db2") == b"OK"
        assert c.command("SELECT", "0") == b"OK"
        c.send(cmd("SUBSCRIBE", "uch"))
        assert c.read_reply() == [b"subscribe", b"uch", 1]
        assert pub.command("PUBLISH", "uch", "hi") == 1
        assert c.read_reply() == [b"message", b"uch", b"hi"]
    assert direct.get("ua") == b"2"


def test_upstream_password_flag(proxy, upstream_with_password):
    p = proxy("--upstream-password", UPSTREAM_PW, upstream=upstream_with_password.address)
    _exercise_all_connection_kinds(p, upstream_with_password.client())


def test_upstream_password_from_environment(proxy, upstream_with_password):
    p = proxy(upstream=upstream_with_password.address,
              env={"BLOOMPROXY_UPSTREAM_PASSWORD": UPSTREAM_PW})
    _exercise_all_connection_kinds(p, upstream_with_password.client())


def test_upstream_user_and_password(proxy, redis_factory):
    upstream = redis_factory(extra_args=["--user", "alice", "on", ">alicepw", "~*", "&*",
                                         "+@all"], password="defaultpw")
    p = proxy("--upstream-user", "alice", "--upstream-password", "alicepw",
              upstream=upstream.address)
    with RawConn(p.port) as c:
        assert c.command("ACL", "WHOAMI") == b"alice"
    _exercise_all_connection_kinds(p, upstream.client())
    p2 = proxy(upstream=upstream.address, env={"BLOOMPROXY_UPSTREAM_USER": "alice",
                                               "BLOOMPROXY_UPSTREAM_PASSWORD": "alicepw"})
    with RawConn(p2.port) as c:
        assert c.command("ACL", "WHOAMI") == b"alice"
        assert c.command("GET", "ua") == b"2"


def test_proxy_and_upstream_passwords_together(proxy, upstream_with_password):
    p = proxy("--requirepass", PASS, "--upstream-password", UPSTREAM_PW,
              upstream=upstream_with_password.address)
    with RawConn(p.port) as c:
        c.send(cmd("GET", "k"))
        assert c.read_reply_raw() == NOAUTH
        c.send(cmd("AUTH", UPSTREAM_PW))  # the upstream's password is not the proxy's
        assert c.read_reply_raw() == WRONGPASS
        assert c.command("AUTH", PASS) == b"OK"
        assert c.command("SET", "k", "v") == b"OK"
    assert upstream_with_password.client().get("k") == b"v"


def test_upstream_password_from_file(proxy, upstream_with_password, tmp_path):
    secret = tmp_path / "upstream.pw"
    secret.write_text(UPSTREAM_PW + "\n")
    p = proxy("--upstream-password-file", str(secret), upstream=upstream_with_password.address)
    _exercise_all_connection_kinds(p, upstream_with_password.client())
    # The password appears in neither the proxy's INFO nor its log.
    with RawConn(p.port) as c:
        info = c.command("INFO")
        client_list = c.command("CLIENT", "LIST")
    assert UPSTREAM_PW.encode() not in info and UPSTREAM_PW.encode() not in client_list
    assert UPSTREAM_PW not in "\n".join(line for line in p.log().splitlines()
                                 if not line.startswith("$ "))


def test_failed_auth_is_logged_without_the_password(proxy):
    p = proxy("--requirepass", "right-secret")
    with RawConn(p.port) as c:
        c.send(cmd("AUTH", "wrong-secret-xyz"))
        assert c.read_reply_raw() == \
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    # The fixture writes the command line ("$ bloomproxy ...") first; the rest is the proxy's.
    log = "\n".join(line for line in p.log().splitlines() if not line.startswith("$ "))
    assert "AUTH failed for user 'default'" in log
    assert "wrong-secret-xyz" not in log and "right-secret" not in log


def test_denied_commands_do_not_exist_for_clients(proxy, redis_instance):
    p = proxy("--deny-command", "FLUSHALL", "--deny-command", "config")
    payload = cmd("SET", "keep", "1") + cmd("FLUSHALL") + cmd("config", "get", "maxmemory") + \
        cmd("GET", "keep")
    replies = replies_of(p.port, payload, 4)
    assert replies == [b"+OK\r\n",
                       b"-ERR unknown command 'FLUSHALL', with args beginning with: \r\n",
                       b"-ERR unknown command 'config', with args beginning with: 'get' "
                       b"'maxmemory' \r\n",
                       b"$1\r\n1\r\n"]
    # Nothing reached the upstream: the key is still there.
    assert redis_instance.client().get("keep") == b"1"


ACL_USERS = {
    # name: rules, written the same way in the proxy's config and in Redis's ACL SETUSER.
    "alice": ["+@all", "-flushall", "-config|set"],
    "bob": ["nocommands", "+get", "+set", "+client|getname", "+multi", "+exec"],
    "dave": ["+@all", "-@dangerous", "-@write", "+set", "-config", "+config|get"],
    "erin": ["nocommands", "+@read", "+@connection", "-@slow", "+@transaction"],
}


@pytest.fixture
def acl_proxy(proxy, tmp_path):
    conf = tmp_path / "acl.conf"
    conf.write_text("".join(f"user {name} pw {' '.join(rules)}\n"
                            for name, rules in ACL_USERS.items()) + "user carol pw\n")
    return proxy("--config", str(conf))


@pytest.fixture
def acl_redis(redis_factory):
    """A redis-server with the same users, the reference for exact replies."""
    server = redis_factory()
    r = server.client()
    for name, rules in list(ACL_USERS.items()) + [("carol", ["+@all"])]:
        r.execute_command("ACL", "SETUSER", name, "on", ">pw", "~*", "&*", *rules)
    return server


def test_user_command_rules_match_redis_acls(acl_proxy, acl_redis, redis_instance):
    payload = b"".join([
        cmd("AUTH", "alice", "pw"), cmd("SET", "a", "1"), cmd("FLUSHALL"),
        cmd("CONFIG", "SET", "maxmemory", "0"), cmd("CONFIG", "GET", "maxmemory"),
        cmd("config", "NOSUCH"), cmd("MULTI"), cmd("FLUSHALL"), cmd("SET", "a", "2"),
        cmd("EXEC"), cmd("GET", "a"),
        cmd("AUTH", "bob", "pw"), cmd("GET", "a"), cmd("PING"), cmd("CLIENT", "GETNAME"),
        cmd("CLIENT", "ID"), cmd("GET"), cmd("DEL", "a", "b"), cmd("NOSUCH", "x"),
        cmd("MULTI"), cmd("SET", "a", "3"), cmd("INCR", "a"), cmd("EXEC"), cmd("GET", "a"),
        cmd("AUTH", "carol", "pw"), cmd("INCR", "n"), cmd("RESET"), cmd("PING"),
    ])
    replies = compare_with_redis(acl_proxy.port, acl_redis, payload, 28)

    def noperm(name):
        return b"-NOPERM this user has no permissions to run the '" + name + b"' command\r\n"

    assert replies[2] == noperm(b"flushall")
    assert replies[3] == noperm(b"config|set")
    assert replies[7] == noperm(b"flushall")
    assert replies[9] == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert replies[10] == b"$1\r\n1\r\n"  # the transaction did not run
    assert [replies[13], replies[15]] == [noperm(b"ping"), noperm(b"client|id")]
    assert replies[16] == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert replies[17] == noperm(b"del")
    assert replies[21] == noperm(b"incr")
    assert replies[23] == b"$1\r\n1\r\n"
    # Nothing refused reached the upstream.
    assert redis_instance.client().get("a") == b"1"


def test_category_rules_match_redis_acls(acl_proxy, acl_redis):
    # Every command below, run by users whose rules are categories, answers as Redis 7.0 does
    # for the same ACL users (allowed ones run; refused ones get the same NOPERM).
    probes = [
        ("SET", "a", "1"), ("GET", "a"), ("MGET", "a", "b"), ("INCR", "n"), ("DEL", "n"),
        ("KEYS", "*"), ("FLUSHDB",), ("CONFIG", "GET", "maxmemory"),
        ("CONFIG", "RESETSTAT"), ("PING",), ("ECHO", "x"),
        ("CLIENT", "GETNAME"), ("CLIENT", "KILL", "ID", "999999"), ("STRLEN", "a"),
        ("EXISTS", "a"), ("TYPE", "a"), ("SCAN", "0"), ("LPUSH", "l", "x"), ("LRANGE", "l", "0", "-1"),
        ("SADD", "s", "x"), ("SMEMBERS", "s"), ("PUBLISH", "c", "m"), ("EVAL", "return 1", "0"),
        ("MULTI",), ("GET", "a"), ("EXEC",), ("WATCH", "a"), ("UNWATCH",), ("SHUTDOWN", "ABORT"),
    ]
    payload = b""
    n = 0
    for user in ("dave", "erin"):
        payload += cmd("AUTH", user, "pw")
        payload += b"".join(cmd(*c) for c in probes)
        n += 1 + len(probes)
    replies = compare_with_redis(acl_proxy.port, acl_redis, payload, n)
    refused = [r for r in replies if r.startswith(b"-NOPERM")]
    assert len(refused) >= 10, replies  # the rules do refuse things
    assert len(refused) < n - 10, replies  # and allow others


def test_user_command_rules_cover_bf_commands(proxy, tmp_path):
    conf = tmp_path / "acl.conf"
    conf.write_text("user writer pw -@all +bf.add +bf.reserve\n"
                    "user reader pw +@all -bf.add -bf.madd -bf.insert -bf.reserve\n"
                    "user bloomreader pw nocommands +@bloom -@write\n")
    p = proxy("--config", str(conf))
    with RawConn(p.port) as w, RawConn(p.port) as r:
        assert w.command("AUTH", "writer", "pw") == b"OK"
        assert r.command("AUTH", "reader", "pw") == b"OK"
        assert w.command("BF.ADD", "f", "x") == 1
        w.send(cmd("BF.EXISTS", "f", "x"))
        assert w.read_reply_raw() == \
            b"-NOPERM this user has no permissions to run the 'bf.exists' command\r\n"
        assert r.command("BF.EXISTS", "f", "x") == 1
        r.send(cmd("bf.ADD", "f", "y"))
        assert r.read_reply_raw() == \
            b"-NOPERM this user has no permissions to run the 'bf.add' command\r\n"
        assert r.command("BF.EXISTS", "f", "y") == 0
    with RawConn(p.port) as b:
        # BF.* are in @bloom, and in @write or @read as their COMMAND entries say.
        assert b.command("AUTH", "bloomreader", "pw") == b"OK"
        assert b.command("BF.EXISTS", "f", "x") == 1
        assert b.command("BF.CARD", "f") == 1
        b.send(cmd("BF.ADD", "f", "z") + cmd("GET", "k"))
        assert b.read_reply_raw() == \
            b"-NOPERM this user has no permissions to run the 'bf.add' command\r\n"
        assert b.read_reply_raw() == \
            b"-NOPERM this user has no permissions to run the 'get' command\r\n"


def test_bad_user_rules_are_configuration_errors(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("user a pw +nosuchcommand\nuser b pw -config|nosuch\nuser c pw +@nosuch\n"
                    "user d pw ~keys*\nuser e pw +json.get -@dangerous\n")
    res = subprocess.run([BLOOMPROXY_BIN, "--config", str(conf), "--upstream", "127.0.0.1:1",
                          "--test-conf"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert "user 'a': rule '+nosuchcommand': unknown command 'nosuchcommand'" in res.stderr
    assert "user 'b': rule '-config|nosuch': unknown subcommand 'nosuch' of 'config'" in res.stderr
    assert "user 'c': rule '+@nosuch': unknown category 'nosuch'" in res.stderr
    assert "bad.conf:4: user: unsupported rule '~keys*'" in res.stderr
    assert "user 'e'" not in res.stderr  # module commands are taken on trust
    assert "4 errors in the configuration" in res.stderr


def test_denied_command_in_a_transaction_aborts_it_like_redis(proxy, redis_factory):
    # deny-command answers as redis.conf's `rename-command NAME ""` does, in MULTI too.
    reference = redis_factory(extra_args=["--rename-command", "FLUSHALL", ""])
    p = proxy("--deny-command", "flushall")
    payload = cmd("SET", "a", "1") + cmd("MULTI") + cmd("SET", "a", "2") + cmd("FLUSHALL") + \
        cmd("EXEC") + cmd("GET", "a")
    replies = compare_with_redis(p.port, reference, payload, 6)
    assert replies[4] == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert replies[5] == b"$1\r\n1\r\n"
