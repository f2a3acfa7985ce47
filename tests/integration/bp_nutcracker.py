"""A real twemproxy (Debian's nutcracker) for the integration tests: two redis-servers on free
loopback ports behind one nutcracker pool (`redis: true`, `hash_tag: "{}"`), the way Redis
fleets sharded by a proxy are set up.

    tw = Twemproxy(tmp_path / "tw", servers=2)
    tw.start()
    tw.address                 # "127.0.0.1:P", what bloomproxy's --upstream takes
    tw.server_for_key("user")  # the RedisServer holding the key (asked of every server)
    tw.flushall()              # straight to the servers (nutcracker refuses FLUSHALL)
    tw.stop()
"""

import os
import subprocess
import time
from pathlib import Path

from bp_helpers import (HOST, RawConn, RedisServer, _die_with_parent, free_port, listens_on,
                        tail)

NUTCRACKER = os.environ.get("NUTCRACKER_BIN", "nutcracker")


class Twemproxy:
    def __init__(self, workdir, servers=2, hash_name="fnv1a_64", distribution="ketama"):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.servers = [RedisServer(self.dir / f"redis{i}") for i in range(servers)]
        self.hash_name = hash_name
        self.distribution = distribution
        self.host = HOST
        self.port = None
        self.proc = None
        self.log_path = self.dir / "nutcracker.log"

    @property
    def address(self):
        return f"{self.host}:{self.port}"

    def _config(self):
        lines = [
            "pool:",
            f"  listen: {self.host}:{self.port}",
            f"  hash: {self.hash_name}",
            '  hash_tag: "{}"',
            f"  distribution: {self.distribution}",
            "  redis: true",
            "  auto_eject_hosts: false",
            "  server_retry_timeout: 200",
            "  server_connections: 1",
            "  timeout: 10000",
            "  servers:",
        ]
        for i, s in enumerate(self.servers):
            lines.append(f"   - {s.host}:{s.port}:1 server{i}")
        return "\n".join(lines) + "\n"

    def start(self, timeout=10.0):
        for s in self.servers:
            s.start_on_a_free_port()
        for attempt in range(3):
            self.port = free_port()
            conf = self.dir / "nutcracker.yml"
            conf.write_text(self._config())
            stats_port = free_port()
            log = open(self.log_path, "ab")
            try:
                self.proc = subprocess.Popen(
                    [NUTCRACKER, "-c", str(conf), "-s", str(stats_port), "-a", self.host,
                     "-o", str(self.log_path), "-v", "5"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    cwd=self.dir, preexec_fn=_die_with_parent)
            finally:
                log.close()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self._answers() and listens_on(self.proc.pid, self.port):
                    return self
                time.sleep(0.02)
            self._kill()
        raise RuntimeError("nutcracker did not start:\n" + tail(self.log_path))

    def _answers(self):
        try:
            with RawConn(self.port, timeout=1.0) as c:
                # A key command: PING is answered by nutcracker itself.
                return c.command("EXISTS", "bloomproxy-test-probe") == 0
        except (OSError, EOFError):
            return False

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        self._kill()
        for s in self.servers:
            s.stop()

    def clients(self):
        """A redis-py client of each server behind nutcracker, in server order."""
        return [s.client() for s in self.servers]

    def flushall(self):
        for c in self.clients():
            c.flushall()

    def keys_by_server(self):
        """{key: index of the server holding it} of every key on every server."""
        out = {}
        for i, c in enumerate(self.clients()):
            for k in c.keys("*"):
                assert k not in out, f"{k!r} is on two servers"
                out[k] = i
        return out

    def server_for_key(self, key):
        """The server nutcracker sends `key` to: SET through nutcracker a probe key with the
        same hash tag, and see where it lands."""
        if isinstance(key, str):
            key = key.encode()
        start = key.find(b"{")
        end = key.find(b"}", start + 1) if start >= 0 else -1
        tag = key[start + 1:end] if start >= 0 and end > start + 1 else key
        probe = b"bloomproxy-probe:{" + tag + b"}"
        with RawConn(self.port, timeout=5.0) as c:
            c.command("SET", probe, "1")
            holders = [s for s in self.servers if s.client().exists(probe)]
            c.command("DEL", probe)
        assert len(holders) == 1, f"probe {probe!r} on {len(holders)} servers"
        return holders[0]
