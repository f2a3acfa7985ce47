"""pytest fixtures of the bloomproxy integration tests.

Every test gets its own redis-server (free loopback port, no persistence, private directory) and
its own proxies, so test files can run in parallel (ctest -j).

    redis_server      -> (host, port) of a fresh redis-server
    redis_instance    -> the same server as a bp_helpers.RedisServer (kill(), start(), client())
    redis_factory     -> starts more redis-servers: redis_factory(extra_args=(), password=None)
    restart_redis     -> restart_redis(port): kill the server on `port`, start a new one there
    proxy             -> factory: proxy(*extra_flags, upstream=None, env=None, unixsocket=None,
                         tcp=True) starts bloomproxy against redis_server (or `upstream`) and
                         returns a bp_helpers.Proxy that unpacks as (host, port, process). At
                         teardown each proxy gets SIGTERM and must exit with code 0 within 10 s.
                         Its stderr/stdout go to a file in tmp, printed when the test fails.
    bp                -> proxy() with default flags
    faketime_proxy    -> factory like `proxy`: faketime_proxy(offset, *extra_flags, **kw) starts
                         bloomproxy under libfaketime (Debian package faketime) with its clocks,
                         the wall clock and CLOCK_MONOTONIC alike, `offset` ("+7m", "-5m") away
                         from the machine's, and checks from its log that they are
    hiredis_client    -> path of the hiredis test program
    redis_cluster     -> a bp_cluster.RedisCluster (3 masters, 1 replica each), started once per
                         test module and stopped after it (tests FLUSHALL it as they need)
    cluster_factory   -> starts private clusters: cluster_factory(masters=3, replicas=1,
                         extra_args=(), password=None); stopped after the test
    cluster_proxy     -> factory like `proxy`: cluster_proxy(*extra_flags, cluster=None, env=None)
                         starts bloomproxy with --upstream-cluster <seeds of redis_cluster (or
                         `cluster`)>; stopped and checked at teardown like `proxy`

Run:  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration [-k NAME]
  or: ctest -L integration -j2 --output-on-failure   (from the build directory)

Environment: BLOOMPROXY_BIN (default <repo>/build/bloomproxy), HIREDIS_CLIENT (built hiredis
test client; compiled on the fly from hiredis_client.c when unset).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bp_helpers  # noqa: E402
from bp_cluster import RedisCluster  # noqa: E402
from bp_nutcracker import Twemproxy  # noqa: E402
from bp_helpers import (REDIS_BY_PORT, restart_redis_server, start_proxy,  # noqa: E402
                        start_redis_with_retry, stop_proxies)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # A private, short base directory per pytest process (ctest -j runs several at once; unix
    # socket paths must stay short). Removed at the end when every test passed.
    if not config.option.basetemp:
        config.option.basetemp = tempfile.mkdtemp(prefix="bp-it-")
        config._bp_own_basetemp = config.option.basetemp


def pytest_sessionfinish(session, exitstatus):
    own = getattr(session.config, "_bp_own_basetemp", None)
    if own and exitstatus == 0:
        shutil.rmtree(own, ignore_errors=True)
    elif own:
        print(f"\nintegration test files (logs) kept in {own}")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def redis_factory(tmp_path):
    servers = []
    counter = [0]

    def start(extra_args=(), password=None):
        counter[0] += 1
        server = start_redis_with_retry(tmp_path / f"redis{counter[0]}", extra_args, password)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.kill()
        REDIS_BY_PORT.pop(s.port, None)


@pytest.fixture
def redis_instance(redis_factory):
    return redis_factory()


@pytest.fixture
def redis_server(redis_instance):
    yield (redis_instance.host, redis_instance.port)


@pytest.fixture
def restart_redis():
    return restart_redis_server


@pytest.fixture
def proxy(request, redis_instance, tmp_path):
    started = []

    def start(*extra_args, upstream=None, env=None, unixsocket=None, tcp=True, port=None):
        p = start_proxy(tmp_path / f"proxy{len(started)}",
                        upstream if upstream is not None else redis_instance.address,
                        extra_args=extra_args, env=env, unixsocket=unixsocket, tcp=tcp,
                        port=port)
        started.append(p)
        return p

    yield start
    stop_proxies(request, started)


@pytest.fixture(scope="session")
def hiredis_client(tmp_path_factory):
    """Path of the hiredis test client: $HIREDIS_CLIENT, or compiled from hiredis_client.c."""
    path = os.environ.get("HIREDIS_CLIENT")
    if path:
        assert os.path.exists(path), f"HIREDIS_CLIENT={path} does not exist"
        return path
    src = Path(__file__).resolve().parent / "hiredis_client.c"
    out = tmp_path_factory.mktemp("hiredis") / "hiredis_client"
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler to build hiredis_client"
    res = subprocess.run([cc, "-O1", "-Wall", "-o", str(out), str(src), "-lhiredis"],
                         capture_output=True, text=True)
    assert res.returncode == 0, "cannot build hiredis_client:\n" + res.stdout + res.stderr
    return str(out)


@pytest.fixture
def helpers():
    return bp_helpers


@pytest.fixture
def bp(proxy):
    """A bloomproxy with default flags in front of `redis_instance`."""
    return proxy()


@pytest.fixture
def faketime_proxy(proxy):
    """bloomproxy with its clocks `offset` off (bp_helpers.faketime_env): fails, never skips,
    when faketime is missing."""
    def start(offset, *extra_args, env=None, **kw):
        p = proxy(*extra_args, env={**bp_helpers.faketime_env(offset), **(env or {})}, **kw)
        bp_helpers.check_proxy_clock_offset(p, offset)
        return p

    return start


@pytest.fixture(scope="module")
def redis_cluster(tmp_path_factory):
    """One Redis Cluster per test module (3 masters with a replica each)."""
    cluster = RedisCluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster_factory(tmp_path):
    clusters = []

    def start(masters=3, replicas=1, extra_args=(), password=None):
        cluster = RedisCluster(tmp_path / f"cluster{len(clusters)}", masters=masters,
                               replicas=replicas, extra_args=extra_args, password=password)
        clusters.append(cluster)
        return cluster.start()

    yield start
    for c in clusters:
        c.stop()


@pytest.fixture
def cluster_proxy(request, tmp_path):
    """bloomproxy in front of a cluster: redis_cluster unless `cluster=` is given."""
    started = []

    def start(*extra_args, cluster=None, env=None, port=None):
        if cluster is None:
            cluster = request.getfixturevalue("redis_cluster")
        p = start_proxy(tmp_path / f"cluster-proxy{len(started)}", None,
                        extra_args=("--upstream-cluster", cluster.seeds(), *extra_args),
                        env=env, port=port)
        started.append(p)
        return p

    yield start
    stop_proxies(request, started)


@pytest.fixture(scope="module")
def twemproxy(tmp_path_factory):
    """One nutcracker in front of 2 redis-servers per test module."""
    tw = Twemproxy(tmp_path_factory.mktemp("twemproxy"))
    try:
        tw.start()
        yield tw
    finally:
        tw.stop()


@pytest.fixture
def sharding_proxy(request, tmp_path):
    """bloomproxy with --upstream-kind sharding-proxy in front of `twemproxy` (or `tw=`)."""
    started = []

    def start(*extra_args, tw=None, env=None, port=None):
        if tw is None:
            tw = request.getfixturevalue("twemproxy")
        p = start_proxy(tmp_path / f"sharding-proxy{len(started)}", tw.address,
                        extra_args=("--upstream-kind", "sharding-proxy", *extra_args),
                        env=env, port=port)
        started.append(p)
        return p

    yield start
    stop_proxies(request, started)
