"""The admin port (admin-port): /metrics scraped with a real Prometheus text parser
(python3-prometheus-client), /healthz and /readyz following the upstream and the drain, and the
HTTP responder's limits."""
import signal
import socket
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bp_helpers import HOST, RawConn, encode_command, free_port, wait_until

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def read_to_close(sock):
    """Everything `sock` receives until the server closes it."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def http(port, path="/metrics", method="GET", raw=None, timeout=5.0):
    """One request on a fresh connection; returns (status, headers, body) once the server
    closes. `raw` replaces the request bytes."""
    request = raw if raw is not None else (
        f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n").encode()
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(request)
        data = read_to_close(s)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return status, headers, body


def scrape(port):
    """The samples of /metrics: {(name, ((label, value), ...)): value}."""
    status, headers, body = http(port, "/metrics")
    assert status == 200
    assert headers["content-type"] == CONTENT_TYPE
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def admin_proxy(proxy, *args, **kw):
    port = free_port()
    p = proxy("--admin-port", port, *args, **kw)
    p.admin = port
    return p


def run_pipeline(bp_port, commands):
    """Sends `commands` as one pipeline on one connection and returns their replies."""
    with RawConn(bp_port) as c:
        c.send(b"".join(encode_command(*cmd) for cmd in commands))
        return [c.read_reply() for _ in commands]


def delta(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def check_histograms(samples):
    """Every command's histogram: cumulative buckets, +Inf == _count == commands_total."""
    commands = {dict(l)["command"] for (n, l) in samples if n == "bloomproxy_commands_total"}
    assert commands
    for command in commands:
        buckets = sorted(
            ((float(dict(l)["le"]), v) for (n, l), v in samples.items()
             if n == "bloomproxy_command_duration_seconds_bucket" and
             dict(l)["command"] == command))
        assert len(buckets) == 14, command
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), (command, buckets)
        total = value(samples, "bloomproxy_commands_total", command=command)
        assert buckets[-1] == (float("inf"), total)
        assert value(samples, "bloomproxy_command_duration_seconds_count", command=command) == total
        assert value(samples, "bloomproxy_command_duration_seconds_sum", command=command) >= 0


def test_exact_command_counts(proxy):
    bp = admin_proxy(proxy)
    before = scrape(bp.admin)
    replies = run_pipeline(bp.port, [
        ("SET", "a", "1"), ("SET", "b", "2"), ("SET", "c", "x"), ("GET", "a"), ("GET", "b"),
        ("BF.ADD", "f", "item"), ("INCR", "c"), ("FOOBAR", "x"), ("GET",)])
    assert replies[:6] == [b"OK", b"OK", b"OK", b"1", b"2", 1]
    after = scrape(bp.admin)
    assert delta(before, after, "bloomproxy_commands_total", command="set") == 3
    # Two GETs answered upstream and one refused here (wrong number of arguments).
    assert delta(before, after, "bloomproxy_commands_total", command="get") == 3
    assert delta(before, after, "bloomproxy_command_errors_total", command="get") == 1
    assert delta(before, after, "bloomproxy_command_errors_total", command="set") == 0
    assert delta(before, after, "bloomproxy_commands_total", command="bf.add") == 1
    assert delta(before, after, "bloomproxy_command_errors_total", command="bf.add") == 0
    assert delta(before, after, "bloomproxy_commands_total", command="incr") == 1
    assert delta(before, after, "bloomproxy_command_errors_total", command="incr") == 1
    # An unknown name is "unknown", never a label of its own.
    assert delta(before, after, "bloomproxy_commands_total", command="unknown") == 1
    assert delta(before, after, "bloomproxy_command_errors_total", command="unknown") == 1
    assert not any(dict(l).get("command") == "foobar" for (_, l) in after)
    assert delta(before, after, "bloomproxy_upstream_requests_total") >= 7
    check_histograms(after)


def test_pipelined_bf_batch_counts_per_client_command(proxy):
    bp = admin_proxy(proxy)
    before = scrape(bp.admin)
    # One loop turn: the adds are one batch plan upstream, but each is a client command.
    replies = run_pipeline(bp.port, [("BF.ADD", "batch", f"i{i}") for i in range(20)] +
                           [("BF.EXISTS", "batch", "i3"), ("BF.MADD", "batch", "i1", "z")])
    assert replies == [1] * 20 + [1, [0, 1]]
    after = scrape(bp.admin)
    assert delta(before, after, "bloomproxy_commands_total", command="bf.add") == 20
    assert delta(before, after, "bloomproxy_commands_total", command="bf.exists") == 1
    assert delta(before, after, "bloomproxy_commands_total", command="bf.madd") == 1
    check_histograms(after)


def test_transactions_count_each_command_once(proxy):
    bp = admin_proxy(proxy)
    before = scrape(bp.admin)
    replies = run_pipeline(bp.port, [("MULTI",), ("SET", "t", "1"), ("INCR", "t"), ("EXEC",),
                                     ("PING",), ("CLIENT", "SETNAME", "bad name")])
    assert replies[:5] == [b"OK", b"QUEUED", b"QUEUED", [b"OK", 2], b"PONG"]
    after = scrape(bp.admin)
    for command, n in (("multi", 1), ("set", 1), ("incr", 1), ("exec", 1), ("ping", 1),
                       ("client", 1)):
        assert delta(before, after, "bloomproxy_commands_total", command=command) == n, command
    assert delta(before, after, "bloomproxy_command_errors_total", command="client") == 1
    assert delta(before, after, "bloomproxy_command_errors_total", command="ping") == 0
    check_histograms(after)


def test_counts_add_up_across_threads(proxy):
    bp = admin_proxy(proxy, "--threads", "2")
    before = scrape(bp.admin)
    conns = [RawConn(bp.port) for _ in range(8)]  # spread over both loops by the kernel
    try:
        for i, c in enumerate(conns):
            for j in range(5):
                assert c.command("SET", f"k{i}", str(j)) == b"OK"
        assert value(scrape(bp.admin), "bloomproxy_connected_clients") == 8
    finally:
        for c in conns:
            c.close()
    after = scrape(bp.admin)
    assert delta(before, after, "bloomproxy_commands_total", command="set") == 40
    assert value(after, "bloomproxy_build_info", version=next(
        dict(l)["version"] for (n, l) in after if n == "bloomproxy_build_info"),
        mode="standalone", upstream_kind="redis", threads="2") == 1


def test_connected_clients_and_info_counters(proxy):
    bp = admin_proxy(proxy)
    base = scrape(bp.admin)
    conns = [RawConn(bp.port) for _ in range(3)]
    for c in conns:
        assert c.command("PING") == b"PONG"
    now = scrape(bp.admin)
    assert value(now, "bloomproxy_connected_clients") == value(base, "bloomproxy_connected_clients") + 3
    assert delta(base, now, "bloomproxy_connections_received_total") == 3
    assert delta(base, now, "bloomproxy_commands_processed_total") == 3
    for c in conns:
        c.close()
    wait_until(lambda: value(scrape(bp.admin), "bloomproxy_connected_clients") ==
               value(base, "bloomproxy_connected_clients"), 5, what="clients gone")
    assert value(now, "bloomproxy_config_reloads_total", result="ok") == 0
    assert value(now, "bloomproxy_config_reloads_total", result="error") == 0
    assert ("bloomproxy_config_reloads_total", (("result", "error"),)) in now


def test_probes_follow_the_upstream(proxy, redis_instance, restart_redis):
    bp = admin_proxy(proxy, "--reconnect-max-ms", "200")
    upstream = "%s:%d" % redis_instance.address
    assert http(bp.admin, "/readyz")[0] == 200
    assert value(scrape(bp.admin), "bloomproxy_upstream_up", upstream=upstream) == 1

    restart_redis(redis_instance.port, kill_only=True)
    wait_until(lambda: http(bp.admin, "/readyz")[0] == 503, 10, what="readyz 503")
    status, _, body = http(bp.admin, "/readyz")
    assert status == 503 and upstream.encode() in body and body.endswith(b"\n")
    assert value(scrape(bp.admin), "bloomproxy_upstream_up", upstream=upstream) == 0
    assert value(scrape(bp.admin), "bloomproxy_ready") == 0
    assert http(bp.admin, "/healthz")[:3:2] == (200, b"ok\n")

    redis_instance.start()  # the same port
    wait_until(lambda: http(bp.admin, "/readyz")[0] == 200, 15, what="readyz 200 again")
    assert value(scrape(bp.admin), "bloomproxy_upstream_up", upstream=upstream) == 1
    assert value(scrape(bp.admin), "bloomproxy_upstream_connection_errors_total") >= 1


def test_http_answers(proxy):
    bp = admin_proxy(proxy)
    assert http(bp.admin, "/healthz") [0::2] == (200, b"ok\n")
    assert http(bp.admin, "/readyz")[0::2] == (200, b"ok\n")
    assert http(bp.admin, "/metrics?name[]=x")[0] == 200
    assert http(bp.admin, "/nope")[0] == 404
    assert http(bp.admin, "/metricsx")[0] == 404
    status, headers, _ = http(bp.admin, "/metrics", method="POST")
    assert status == 405 and headers["allow"] == "GET, HEAD"
    assert http(bp.admin, "/healthz", method="DELETE")[0] == 405
    status, headers, body = http(bp.admin, "/healthz", method="HEAD")
    assert (status, headers["content-length"], body) == (200, "3", b"")
    assert headers["connection"] == "close"
    status, _, _ = http(bp.admin, raw=b"GET /healthz HTTP/1.0\r\n\r\n")
    assert status == 200
    assert http(bp.admin, raw=b"*1\r\n$4\r\nPING\r\n\r\n")[0] == 400
    assert http(bp.admin, raw=b"GET /healthz HTTP/2.0\r\n\r\n")[0] == 400


def test_oversize_request_head_is_refused_and_closed(proxy):
    bp = admin_proxy(proxy)
    big = b"GET /metrics HTTP/1.1\r\nX-Filler: " + b"a" * 9000 + b"\r\n\r\n"
    status, _, body = http(bp.admin, raw=big)
    assert status == 431 and b"8192" in body
    # Without an end at all: refused once past the bound, not read for ever.
    status, _, _ = http(bp.admin, raw=b"GET /metrics HTTP/1.1\r\nX: " + b"b" * 20000)
    assert status == 431
    assert http(bp.admin, "/healthz")[0] == 200


def test_connection_limit(proxy):
    bp = admin_proxy(proxy)
    idle = [socket.create_connection((HOST, bp.admin), timeout=5) for _ in range(16)]
    try:
        time.sleep(0.3)  # all accepted
        with socket.create_connection((HOST, bp.admin), timeout=5) as extra:
            data = read_to_close(extra)
        assert data.startswith(b"HTTP/1.1 503 ") and b"too many admin connections" in data
        # The proxy itself is not affected.
        with RawConn(bp.port) as c:
            assert c.command("PING") == b"PONG"
    finally:
        for s in idle[:4]:
            s.close()
    try:
        wait_until(lambda: http(bp.admin, "/healthz")[0] == 200, 5, what="a free place")
    finally:
        for s in idle[4:]:
            s.close()


def test_silent_connection_times_out(proxy):
    bp = admin_proxy(proxy)
    with socket.create_connection((HOST, bp.admin), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\n")  # never finished
        start = time.monotonic()
        assert s.recv(4096) == b""
        waited = time.monotonic() - start
    assert 3.5 <= waited <= 8, waited


def test_readyz_503_while_draining(proxy):
    bp = admin_proxy(proxy, "--shutdown-timeout-ms", "10000")
    assert http(bp.admin, "/readyz")[0] == 200
    with RawConn(bp.port, timeout=10) as c:
        c.send(encode_command("BLPOP", "nothing-here", "3"))
        time.sleep(0.3)  # in flight upstream
        bp.process.send_signal(signal.SIGTERM)
        wait_until(lambda: http(bp.admin, "/readyz")[0] == 503, 2, what="readyz 503")
        status, _, body = http(bp.admin, "/readyz")
        assert status == 503 and b"draining" in body
        assert http(bp.admin, "/healthz")[0] == 200
        assert value(scrape(bp.admin), "bloomproxy_draining") == 1
        assert bp.alive()
        assert c.read_reply() is None  # BLPOP's timeout: the in-flight reply is delivered
    assert bp.process.wait(10) == 0
    with pytest.raises(OSError):
        socket.create_connection((HOST, bp.admin), timeout=2).close()


def test_admin_port_taken_is_a_startup_error(proxy):
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match="admin port"):
            proxy("--admin-port", port)


def test_cluster_upstream_up_per_node(cluster_proxy, cluster_factory):
    cluster = cluster_factory(masters=3, replicas=0)
    port = free_port()
    bp = cluster_proxy("--admin-port", port, "--reconnect-max-ms", "200", cluster=cluster)
    wait_until(lambda: http(port, "/readyz")[0] == 200, 10, what="cluster ready")
    masters = ["%s:%d" % (m.host, m.port) for m in cluster.masters()]
    samples = scrape(port)
    up = {dict(l)["upstream"]: v for (n, l), v in samples.items() if n == "bloomproxy_upstream_up"}
    assert set(masters) <= set(up) and all(up[m] == 1 for m in masters)
    assert value(samples, "bloomproxy_upstream_cluster_masters") == 3
    assert value(samples, "bloomproxy_upstream_cluster_masters_up") == 3
    assert any(n == "bloomproxy_build_info" and dict(l)["mode"] == "cluster" for (n, l) in samples)
    with RawConn(bp.port) as c:
        for i in range(10):
            assert c.command("SET", f"key{i}", "v") == b"OK"
    # On a cluster MULTI is answered at once and sent with the transaction's first command.
    replies = run_pipeline(bp.port, [("MULTI",), ("SET", "{t}a", "1"), ("GET", "{t}a"), ("EXEC",)])
    assert replies == [b"OK", b"QUEUED", b"QUEUED", [b"OK", b"1"]]
    samples = scrape(port)
    for command, n in (("set", 11), ("multi", 1), ("get", 1), ("exec", 1)):
        assert value(samples, "bloomproxy_commands_total", command=command) == n, command
    check_histograms(samples)

    victim = cluster.masters()[0]
    victim.kill()
    name = "%s:%d" % (victim.host, victim.port)
    wait_until(lambda: value(scrape(port), "bloomproxy_upstream_up", upstream=name) == 0, 10,
               what="the killed master down")
    status, _, body = http(port, "/readyz")
    assert status == 503 and name.encode() in body
    others = [m for m in masters if m != name]
    assert all(value(scrape(port), "bloomproxy_upstream_up", upstream=m) == 1 for m in others)
