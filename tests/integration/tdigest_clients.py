"""Helpers of test_tdigest_clients.py: RedisBloom 2.4's t-digest API as redis-py 4.4+ sends it
(on redis-py 4.3's client, whose own r.tdigest() speaks RedisBloom 2.2's t-digest protocol), the
recorded vector commands each mapped to the client call that sends exactly its bytes (redis-py
and node-redis 4.7 with @redis/bloom), and what a client makes of a reply, comparable between
two runs (against the proxy, and against a server answering RedisBloom's recorded bytes).

Only the Python standard library and redis-py are used.
"""

import re

from redis.client import bool_ok
from redis.commands.bf.info import TDigestInfo
from redis.commands.helpers import parse_to_list

# The RESP2 response callbacks redis-py 4.4+'s r.tdigest() installs.
CALLBACKS = {"TDIGEST.CREATE": bool_ok, "TDIGEST.BYRANK": parse_to_list,
             "TDIGEST.BYREVRANK": parse_to_list, "TDIGEST.CDF": parse_to_list,
             "TDIGEST.INFO": TDigestInfo, "TDIGEST.MIN": float, "TDIGEST.MAX": float,
             "TDIGEST.TRIMMED_MEAN": float, "TDIGEST.QUANTILE": parse_to_list}


class TDigest:
    """redis-py 4.4+'s TDigestCommands (its signatures and the arguments it sends) on any
    object with execute_command: a redis-py 4.3 Redis, Pipeline or RedisCluster, whose response
    callbacks are set to CALLBACKS."""

    def __init__(self, client):
        self.client = client
        if hasattr(client, "set_response_callback"):
            for name, callback in CALLBACKS.items():
                client.set_response_callback(name, callback)

    def _do(self, *args):
        return self.client.execute_command(*args)

    def create(self, key, compression=100):
        return self._do("TDIGEST.CREATE", key, "COMPRESSION", compression)

    def reset(self, key):
        return self._do("TDIGEST.RESET", key)

    def add(self, key, values):
        return self._do("TDIGEST.ADD", key, *values)

    def merge(self, destination_key, num_keys, *keys, compression=None, override=False):
        params = [destination_key, num_keys, *keys]
        if compression is not None:
            params += ["COMPRESSION", compression]
        if override:
            params.append("OVERRIDE")
        return self._do("TDIGEST.MERGE", *params)

    def min(self, key):
        return self._do("TDIGEST.MIN", key)

    def max(self, key):
        return self._do("TDIGEST.MAX", key)

    def info(self, key):
        return self._do("TDIGEST.INFO", key)

    def quantile(self, key, quantile, *quantiles):
        return self._do("TDIGEST.QUANTILE", key, quantile, *quantiles)

    def cdf(self, key, value, *values):
        return self._do("TDIGEST.CDF", key, value, *values)

    def trimmed_mean(self, key, low_cut_quantile, high_cut_quantile):
        return self._do("TDIGEST.TRIMMED_MEAN", key, low_cut_quantile, high_cut_quantile)

    def rank(self, key, value, *values):
        return self._do("TDIGEST.RANK", key, value, *values)

    def revrank(self, key, value, *values):
        return self._do("TDIGEST.REVRANK", key, value, *values)

    def byrank(self, key, rank, *ranks):
        return self._do("TDIGEST.BYRANK", key, rank, *ranks)

    def byrevrank(self, key, rank, *ranks):
        return self._do("TDIGEST.BYREVRANK", key, rank, *ranks)


class Capture:
    """An execute_command that returns the arguments as redis-py would send them."""

    def execute_command(self, *args):
        return [encode(a) for a in args]


def encode(value):
    """An argument as redis-py 4.3's Encoder sends it (str UTF-8, int and float by repr)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (int, float)):
        return repr(value).encode()
    return value.encode()


INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")


def typed(arg):
    """A vector argument as an application would pass it: an int or a float when redis-py
    sends that number as these very bytes, else the text (or the bytes)."""
    try:
        text = arg.decode()
    except UnicodeDecodeError:
        return arg
    if INT_TEXT.fullmatch(text) and abs(int(text)) < 1 << 63:
        return int(text)
    try:
        if repr(float(text)) == text:
            return float(text)
    except ValueError:
        pass
    return text


SINGLE_KEY = {"reset", "min", "max", "info"}
LISTS = {"quantile", "cdf", "rank", "revrank", "byrank", "byrevrank"}


def merge_call(key, rest):
    """TDigest.merge's (positional, keyword) arguments for MERGE key <rest>, or None."""
    n = typed(rest[0]) if rest else None
    if not isinstance(n, int) or n <= 0 or len(rest) < 1 + n:
        return None
    sources, tail = [typed(a) for a in rest[1:1 + n]], rest[1 + n:]
    kw = {}
    if tail[:1] == [b"COMPRESSION"] and len(tail) >= 2:
        kw["compression"], tail = typed(tail[1]), tail[2:]
    if tail == [b"OVERRIDE"]:
        kw["override"], tail = True, []
    if tail:
        return None
    return [key, n] + sources, kw


def redis_py_call(args):
    """(method, positional, keyword) of TDigest that sends exactly `args`, or None."""
    name = args[0]
    if not name.startswith(b"TDIGEST.") or len(args) < 2 or name != name.upper():
        return None
    method = name[len(b"TDIGEST."):].lower().decode()
    key, rest = typed(args[1]), args[2:]
    call = None
    if method == "create" and len(rest) == 2 and rest[0] == b"COMPRESSION":
        call = [key, typed(rest[1])], {}
    elif method in SINGLE_KEY and not rest:
        call = [key], {}
    elif method == "add" and rest:
        call = [key, [typed(a) for a in rest]], {}
    elif method in LISTS and rest:
        call = [key] + [typed(a) for a in rest], {}
    elif method == "trimmed_mean" and len(rest) == 2:
        call = [key] + [typed(a) for a in rest], {}
    elif method == "merge":
        call = merge_call(key, rest)
    if call is None:
        return None
    sent = getattr(TDigest(Capture()), method)(*call[0], **call[1])
    return (method,) + call if sent == list(args) else None


# node-redis 4.7 @redis/bloom 1.2.0: the methods of client.tDigest and the arguments they send
# (CREATE's COMPRESSION and MERGE's options only when given and non-zero; MERGE's numkeys is
# the length of the source list). Values go to node as text: tdigest_client.js passes a number
# where String(Number(text)) is the text, else the text itself, so the bytes sent are the same.
NODE_LISTS = {"QUANTILE": "quantile", "CDF": "cdf", "RANK": "rank", "REVRANK": "revRank",
              "BYRANK": "byRank", "BYREVRANK": "byRevRank"}
NODE_SINGLE_KEY = {"RESET": "reset", "MIN": "min", "MAX": "max", "INFO": "info"}


def positive_text(arg):
    return INT_TEXT.fullmatch(arg.decode(errors="replace")) is not None and arg[:1] != b"-" \
        and arg != b"0"


def node_merge(key, rest):
    if not rest or not positive_text(rest[0]) or len(rest) < 1 + int(rest[0]):
        return None
    n = int(rest[0])
    sources, tail = rest[1:1 + n], rest[1 + n:]
    opts = {}
    if tail[:1] == [b"COMPRESSION"] and len(tail) >= 2 and positive_text(tail[1]):
        opts["COMPRESSION"], tail = tail[1], tail[2:]
    if tail == [b"OVERRIDE"]:
        opts["OVERRIDE"], tail = True, []
    if tail:
        return None
    return {"m": "merge", "a": [key, sources], "opts": opts}


def node_step(args):
    """The step of tdigest_client.js for one vector command: a client.tDigest call that sends
    exactly `args`, or the command sent as it is (sendCommand). Arguments as text (JSON)."""
    try:
        text = [a.decode() for a in args]
    except UnicodeDecodeError:
        text = None
    step = None
    if text and args[0].startswith(b"TDIGEST.") and len(args) >= 2:
        name, key, rest = text[0][len("TDIGEST."):], text[1], args[2:]
        if name == "CREATE" and not rest:
            step = {"m": "create", "a": [key], "opts": {}}
        elif name == "CREATE" and len(rest) == 2 and rest[0] == b"COMPRESSION" and \
                positive_text(rest[1]):
            step = {"m": "create", "a": [key], "opts": {"COMPRESSION": rest[1]}}
        elif name in NODE_SINGLE_KEY and not rest:
            step = {"m": NODE_SINGLE_KEY[name], "a": [key]}
        elif name == "ADD" and rest:
            step = {"m": "add", "a": [key, rest]}
        elif name in NODE_LISTS and rest:
            step = {"m": NODE_LISTS[name], "a": [key, rest]}
        elif name == "TRIMMED_MEAN" and len(rest) == 2:
            step = {"m": "trimmedMean", "a": [key] + rest}
        elif name == "MERGE":
            step = node_merge(key, rest)
    if step is None:
        return {"raw": [a.hex() for a in args]}
    return as_json_text(step)


def as_json_text(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [as_json_text(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json_text(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------
# What a redis-py caller sees, comparable between runs


def outcome(value):
    """A redis-py result in a form == compares exactly: floats by repr (nan equals nan, -0.0
    differs from 0.0), errors by class and message, TDigestInfo by its fields."""
    if isinstance(value, Exception):
        return ("error", type(value).__name__, str(value))
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, (list, tuple)):
        return [outcome(v) for v in value]
    if isinstance(value, TDigestInfo):
        return ("info", sorted(vars(value).items()))
    return value


def as_sent(args):
    """A command for execute_command as an application writes it: the name as text (redis-py
    looks its response callback up by that text)."""
    return [args[0].decode()] + list(args[1:])


def drive(client, cmds):
    """Each command through `client` (a redis-py client): the TDigest call that sends it where
    there is one, else execute_command. Returns each outcome."""
    td = TDigest(client)
    out = []
    for args in cmds:
        call = redis_py_call(args)
        try:
            if call:
                value = getattr(td, call[0])(*call[1], **call[2])
            else:
                value = client.execute_command(*as_sent(args))
        except Exception as exc:  # noqa: BLE001 - every failure is an outcome to compare
            value = exc
        out.append(outcome(value))
    return out


def drive_pipeline(client, cmds, transaction):
    """The same calls queued in one pipeline (transaction: MULTI/EXEC); the outcomes of
    execute(raise_on_error=False)."""
    pipe = client.pipeline(transaction=transaction)
    td = TDigest(pipe)
    for args in cmds:
        call = redis_py_call(args)
        if call:
            getattr(td, call[0])(*call[1], **call[2])
        else:
            pipe.execute_command(*as_sent(args))
    try:
        return outcome(pipe.execute(raise_on_error=False))
    except Exception as exc:  # noqa: BLE001
        return outcome(exc)
