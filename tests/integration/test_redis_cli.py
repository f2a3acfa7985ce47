"""redis-cli through the proxy: commands as arguments, from stdin, --pipe with raw inline and
multibulk data, -n (SELECT), -r (repeat), -x (value from stdin), --scan. Where the exact output
format is redis-cli's business, the output through the proxy must equal the output of the same
invocation against redis-server directly."""

import subprocess

from bp_helpers import HOST


def cli(port, *args, input=None, timeout=30):
    return subprocess.run(["redis-cli", "-h", HOST, "-p", str(port), *args], input=input,
                          capture_output=True, timeout=timeout)


def test_cli_argument_commands_match_direct_redis(bp, redis_instance):
    commands = [
        ["SET", "cli:k", "a b"],
        ["GET", "cli:k"],
        ["APPEND", "cli:k", " c"],
        ["GET", "cli:k"],
        ["LPUSH", "cli:l", "x", "y", "z"],
        ["LRANGE", "cli:l", "0", "-1"],
        ["HSET", "cli:h", "f1", "v1", "f2", "v2"],
        ["HGETALL", "cli:h"],
        ["LPUSH", "cli:k", "oops"],        # WRONGTYPE error
        ["NOSUCHCOMMAND", "arg1", "arg2"],  # unknown command error
        ["GET", "cli:missing"],
        ["INCR", "cli:n"],
        ["INCRBYFLOAT", "cli:n", "1.5"],
        ["EXISTS", "cli:k", "cli:l", "cli:missing"],
        ["TYPE", "cli:h"],
        ["DEL", "cli:k", "cli:l", "cli:h", "cli:n"],
    ]
    through_proxy = [cli(bp.port, *c) for c in commands]
    redis_instance.client().flushall()
    direct = [cli(redis_instance.port, *c) for c in commands]
    for c, p, d in zip(commands, through_proxy, direct):
        assert (p.returncode, p.stdout, p.stderr) == (d.returncode, d.stdout, d.stderr), c
    # And the essentials, spelled out.
    assert through_proxy[0].stdout == b"OK\n"
    assert through_proxy[1].stdout == b"a b\n"
    assert through_proxy[3].stdout == b"a b c\n"
    assert through_proxy[5].stdout == b"z\ny\nx\n"
    assert b"WRONGTYPE Operation against a key holding the wrong kind of value" in \
        through_proxy[8].stdout
    assert b"ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'arg1' 'arg2'" in \
        through_proxy[9].stdout
    assert through_proxy[14].stdout == b"hash\n"


def test_cli_commands_from_stdin(bp, redis_instance):
    script = (b"SET cli:s1 v1\n"
              b"SET cli:s2 \"with space\"\n"
              b"GET cli:s1\n"
              b"GET cli:s2\n"
              b"INCR cli:c\n"
              b"INCR cli:c\n"
              b"MGET cli:s1 cli:none cli:s2\n"
              b"PING\n"
              b"ECHO \"hello world\"\n")
    res = cli(bp.port, input=script)
    assert res.returncode == 0, res.stderr
    assert res.stdout == (b"OK\nOK\nv1\nwith space\n1\n2\nv1\n\nwith space\nPONG\nhello world\n")
    assert redis_instance.client().get("cli:s2") == b"with space"


def test_cli_pipe_mode_with_inline_and_multibulk(bp, redis_instance):
    # --pipe sends stdin as is (inline commands stay inline on the wire), then an ECHO of its
    # own, and reports the number of replies and errors.
    n = 500
    data = bytearray()
    for i in range(n):
        if i % 2:
            data += b'SET pipe:%d "inline value %d"\r\n' % (i, i)
        else:
            val = b"mb value %d" % i
            data += b"*3\r\n$3\r\nSET\r\n$%d\r\npipe:%d\r\n$%d\r\n%s\r\n" % (
                len(b"pipe:%d" % i), i, len(val), val)
    data += b"INCR pipe:counter\nINCR pipe:counter\n"
    res = cli(bp.port, "--pipe", input=bytes(data))
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert b"errors: 0, replies: %d" % (n + 2) in res.stdout, res.stdout
    r = redis_instance.client()
    assert r.get("pipe:1") == b"inline value 1"
    assert r.get("pipe:0") == b"mb value 0"
    assert r.get("pipe:499") == b"inline value 499"
    assert r.get("pipe:498") == b"mb value 498"
    assert r.get("pipe:counter") == b"2"
    assert r.dbsize() == n + 1


def test_cli_pipe_mode_reports_errors(bp):
    data = b"SET pe:k v\r\nLPUSH pe:k x\r\nNOSUCHCMD\r\nGET pe:k\r\n"
    res = cli(bp.port, "--pipe", input=data)
    assert b"errors: 2, replies: 4" in res.stdout, res.stdout
    assert b"WRONGTYPE" in res.stdout + res.stderr


def test_cli_select_db_with_n(bp, redis_instance):
    assert cli(bp.port, "-n", "3", "SET", "cli:db3", "three").stdout == b"OK\n"
    assert cli(bp.port, "-n", "3", "GET", "cli:db3").stdout == b"three\n"
    assert cli(bp.port, "GET", "cli:db3").stdout == b"\n"
    assert redis_instance.client(db=3).get("cli:db3") == b"three"
    assert redis_instance.client(db=0).get("cli:db3") is None


def test_cli_repeat(bp, redis_instance):
    res = cli(bp.port, "-r", "200", "INCR", "cli:rep")
    assert res.returncode == 0
    assert res.stdout.split() == [str(i).encode() for i in range(1, 201)]
    assert redis_instance.client().get("cli:rep") == b"200"


def test_cli_x_binary_value_from_stdin(bp, redis_instance):
    value = bytes(range(256)) * 40 + b"\r\n\x00end"
    res = cli(bp.port, "-x", "SET", "cli:bin", input=value)
    assert res.stdout == b"OK\n", res.stderr
    assert redis_instance.client().get("cli:bin") == value
    res = cli(bp.port, "STRLEN", "cli:bin")
    assert res.stdout == b"%d\n" % len(value)


def test_cli_scan(bp, redis_instance):
    r = redis_instance.client()
    r.mset({f"scan:{i}": i for i in range(300)})
    r.set("other", 1)
    res = cli(bp.port, "--scan", "--pattern", "scan:*")
    assert res.returncode == 0, res.stderr
    keys = res.stdout.split()
    assert sorted(keys) == sorted(f"scan:{i}".encode() for i in range(300))
