"""What the tests that build a structure by hand on the upstream (in the key layouts of
docs/design.md) share: a name's data-key prefix, one raw command through the proxy, and the
replies and proxy options of the key-command tests, and the keys of a sketch built by hand.

Only the Python standard library (plus bp_helpers) is used.
"""

import secrets

from bp_helpers import encode_command

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_SUPPORTED = b"-ERR not supported for this module key\r\n"
DUMP_REFUSED = (b"-ERR bloomproxy: DUMP of a Bloom filter, cuckoo filter, count-min sketch, Top-K "
                b"sketch or t-digest is not supported (save a filter with BF.SCANDUMP or "
                b"CF.SCANDUMP, restore it with BF.LOADCHUNK or CF.LOADCHUNK)\r\n")
# A proxy sweeping every second, logging what it removes.
SWEEP = ("--sweep-interval", "1", "--sweep-grace", "1", "--loglevel", "verbose")
DEADLINE = 60


def prefix_of(name):
    """filters/common/key_layout.h DataKeyPrefix, for names with a hash tag or without braces."""
    start = name.find("{")
    if start != -1:
        end = name.find("}", start + 1)
        assert end > start + 1, name
        return name
    assert "}" not in name and name
    return "{" + name + "}"


def raw(conn, *args):
    """The raw reply to one command sent on `conn` (a RawConn)."""
    conn.send(encode_command(*args))
    return conn.read_reply_raw()


class HandSketch:
    """The keys of a sketch of family `kind` ("tk", "td") written by hand on the upstream `r`
    (redis-py) under `name`, with a fresh id: P:<kind>:<id>:<suffix> its data keys,
    P:<kind>:m:<name> its marker. keys(name) (a subclass's) lists them all, the name first."""

    def __init__(self, r, name, kind):
        self.r, self.name, self.kind = r, name, kind
        self.id = secrets.token_hex(8)

    def id_key(self, suffix, name=None):
        return f"{prefix_of(name or self.name)}:{self.kind}:{self.id}:{suffix}".encode()

    def marker(self, name=None):
        name = name or self.name
        return f"{prefix_of(name)}:{self.kind}:m:{name}".encode()

    def internal(self, name=None):
        return set(self.keys(name)[1:])
