"""The hiredis (C, synchronous API) client program against the proxy."""

import subprocess


def test_hiredis_client(bp, hiredis_client, redis_instance):
    res = subprocess.run([hiredis_client, bp.host, str(bp.port)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, f"hiredis_client failed:\n{res.stdout}\n{res.stderr}"
    assert "OK: all hiredis checks passed" in res.stdout
    # What it wrote is in redis-server.
    assert redis_instance.client().get("hc:counter") == b"-1"


def test_hiredis_client_self_check_against_redis(redis_instance, hiredis_client):
    """The same program passes against redis-server itself (so a failure above is the proxy's)."""
    res = subprocess.run([hiredis_client, redis_instance.host, str(redis_instance.port)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
