"""Listeners: TCP on --bind/--port, and the unix socket (--unixsocket), alone or together."""

import os
import stat
import subprocess

import redis

from bp_helpers import HOST, RawConn, encode_command as cmd


def test_unix_socket_and_tcp(proxy, tmp_path, redis_instance):
    path = str(tmp_path / "bp.sock")
    p = proxy(unixsocket=path)
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    ru = redis.Redis(unix_socket_path=path, socket_timeout=10)
    rt = redis.Redis(host=HOST, port=p.port, socket_timeout=10)
    assert ru.set("via-unix", "1") is True
    assert rt.get("via-unix") == b"1"
    assert rt.set("via-tcp", "2") is True
    assert ru.get("via-tcp") == b"2"
    assert redis_instance.client().get("via-unix") == b"1"
    # Pipelines, transactions and raw bytes over the unix socket.
    pipe = ru.pipeline(transaction=True)
    for i in range(100):
        pipe.incr("u:ctr")
    assert pipe.execute() == list(range(1, 101))
    with RawConn(unix=path) as c:
        c.send(cmd("ECHO", "\x00bin\r\n") + b"PING\r\n")
        assert c.read_reply_raw() == b"$6\r\n\x00bin\r\n\r\n"
        assert c.read_reply_raw() == b"+PONG\r\n"
    res = subprocess.run(["redis-cli", "-s", path, "GET", "via-tcp"], capture_output=True,
                         timeout=30)
    assert res.stdout == b"2\n"


def test_unix_socket_only(proxy, tmp_path, redis_instance):
    path = str(tmp_path / "only.sock")
    p = proxy(unixsocket=path, tcp=False)  # --port 0: no TCP listener
    assert p.port == 0
    r = redis.Redis(unix_socket_path=path, socket_timeout=10)
    assert r.set("k", "v") is True
    assert redis_instance.client().get("k") == b"v"
    with RawConn(unix=path) as c:
        assert c.command("CLIENT", "ID") > 0


def test_unix_socket_removed_on_shutdown(proxy, tmp_path):
    path = str(tmp_path / "gone.sock")
    p = proxy(unixsocket=path)
    assert os.path.exists(path)
    assert p.terminate_and_wait() == 0
    assert not os.path.exists(path)


def test_bind_address_is_respected(proxy):
    p = proxy()
    with RawConn(p.port, host=HOST) as c:
        assert c.command("PING") == b"PONG"
    # Bound to 127.0.0.1 only: another loopback address (127.0.0.2) is refused.
    try:
        c = RawConn(p.port, host="127.0.0.2", timeout=2)
    except ConnectionRefusedError:
        return
    c.close()
    raise AssertionError("bloomproxy accepted a connection on 127.0.0.2 though bound to 127.0.0.1")


def test_unixsocketperm(proxy, tmp_path):
    path = str(tmp_path / "perm.sock")
    proxy("--unixsocketperm", "700", unixsocket=path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_upstream_over_unix_socket(proxy, redis_factory, tmp_path):
    sock = str(tmp_path / "redis.sock")
    upstream = redis_factory(extra_args=["--unixsocket", sock, "--unixsocketperm", "700"])
    p = proxy(upstream=f"unix:{sock}")
    with RawConn(p.port) as c:
        assert c.command("SET", "via-unix-upstream", "1") == b"OK"
        c.send(cmd("MULTI") + cmd("INCR", "n") + cmd("EXEC"))
        assert [c.read_reply_raw() for _ in range(3)] == [b"+OK\r\n", b"+QUEUED\r\n",
                                                          b"*1\r\n:1\r\n"]
    assert upstream.client().get("via-unix-upstream") == b"1"
