#!/usr/bin/python3
"""Copies bloom filters from one server to another with BF.SCANDUMP / BF.LOADCHUNK.

The source is a Redis with the RedisBloom module, or a bloomproxy; the target is a bloomproxy
in front of plain Redis, or a Redis with RedisBloom (bloomproxy's dumps are byte-compatible with
RedisBloom's, so filters move both ways). See docs/migration.md.

Usage:
    scripts/bf_migrate.py --source URL --target URL --key NAME [--key NAME ...] [options]
    scripts/bf_migrate.py --source URL --target URL --pattern GLOB [options]

    --source URL    server to read: redis://[[user]:password@]host:port[/db], rediss://...,
                    unix:///path/to.sock (default: $BF_MIGRATE_SOURCE)
    --target URL    server to write, same forms (default: $BF_MIGRATE_TARGET); the environment
                    variables keep passwords out of the process list
    --key NAME      a filter to copy (repeatable)
    --pattern GLOB  copy every key of the source matching GLOB (SCAN MATCH) whose TYPE is
                    MBbloom-- (a bloom filter); other keys are skipped
    --replace       delete an existing key of that name on the target first (default: refuse,
                    and leave the target's key alone)
    --verify        after copying: compare BF.INFO on both sides, then dump the source and the
                    target again, side by side, and compare every chunk (iterator and bytes);
                    and check that both have a time to live, or neither
    --dry-run       list the filters that would be copied (with their BF.INFO), copy nothing
    --timeout SECS  socket timeout per command (default 60; a chunk is up to 16 MiB)
    -q, --quiet     only errors and the summary

For each filter: BF.SCANDUMP NAME 0 on the source gives the header, then BF.SCANDUMP NAME it with
the iterator it returned, until it returns 0; every (iterator, data) pair is sent, in order, as
BF.LOADCHUNK NAME iterator data to the target. A time to live on the source (PTTL) is set on the
target too (PEXPIRE). If a LOADCHUNK fails, the partly written target key
is deleted (a partial filter would answer "no" for items it should contain). BF.INFO of the
source is read before and after the copy: if it changed, the filter was written during the
copy and the target may miss those items (reported as a failure).

Exit status: 0 every filter copied (and verified, with --verify); 1 at least one filter failed
(missing, not a bloom filter, already on the target, load error, changed during the copy,
verification mismatch); 2 usage error, or a server that cannot be reached or does not answer
BF.* commands; 130 interrupted.

Examples:
    # RedisBloom on :6379 -> bloomproxy on :6380 (in front of another Redis), two filters
    scripts/bf_migrate.py --source redis://127.0.0.1:6379 --target redis://127.0.0.1:6380 \\
        --key users --key sessions --verify
    # every filter whose name starts with "bf:"; overwrite what the target already has
    scripts/bf_migrate.py --source redis://old:6379 --target redis://proxy:6380 \\
        --pattern 'bf:*' --replace --verify

Needs redis-py (Debian: python3-redis) for /usr/bin/python3.
"""

import argparse
import hashlib
import os
import sys
import time
import urllib.parse

try:
    import redis
except ImportError:  # pragma: no cover - depends on the machine
    sys.stderr.write("bf_migrate: redis-py is missing (Debian: apt-get install python3-redis)\n")
    sys.exit(2)

BF_TYPE = "MBbloom--"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class FilterError(Exception):
    """Copying one filter failed; the others go on."""


class ServerError(Exception):
    """A server cannot be used at all; stop."""


def redact(url):
    """The URL with its password replaced by ***."""
    try:
        u = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if u.password is None:
        return url
    netloc = u.netloc.rsplit("@", 1)[1]
    user = u.username or ""
    return urllib.parse.urlunsplit((u.scheme, f"{user}:***@{netloc}", u.path, u.query, u.fragment))


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


class Side:
    """One server (source or target)."""

    def __init__(self, role, url, timeout):
        self.role = role
        self.url = url
        self.shown = redact(url)
        try:
            self.r = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=10)
        except ValueError as e:
            raise ServerError(f"bad {role} URL {self.shown}: {e}") from None
        try:
            self.r.ping()
        except redis.exceptions.ResponseError as e:
            raise ServerError(f"{role} {self.shown}: PING failed: {e}") from None
        except redis.exceptions.RedisError as e:
            raise ServerError(f"cannot connect to the {role} {self.shown}: {e}") from None
        # Does it answer BF.* at all? BF.EXISTS on a (surely) missing key replies 0.
        try:
            self.r.execute_command("BF.EXISTS", f"bf_migrate:probe:{os.getpid()}", "x")
        except redis.exceptions.ResponseError as e:
            raise ServerError(
                f"the {role} {self.shown} does not answer BF.* commands ({e}); it must be a Redis "
                "with the RedisBloom module or a bloomproxy") from None

    def cmd(self, *args):
        try:
            return self.r.execute_command(*args)
        except redis.exceptions.ResponseError:
            raise
        except redis.exceptions.RedisError as e:
            raise ServerError(f"{self.role} {self.shown}: {args[0]} failed: {e}") from None

    def key_type(self, key):
        t = self.cmd("TYPE", key)
        return t.decode() if isinstance(t, bytes) else str(t)

    def bf_info(self, key):
        """BF.INFO as a dict {field name: value} (values int, or None for a nil)."""
        reply = self.cmd("BF.INFO", key)
        if not isinstance(reply, list) or len(reply) % 2:
            raise FilterError(f"{self.role}: unexpected BF.INFO reply {reply!r}")
        return {(k.decode() if isinstance(k, bytes) else str(k)): v
                for k, v in zip(reply[0::2], reply[1::2])}

    def scandump(self, key, it):
        reply = self.cmd("BF.SCANDUMP", key, it)
        if (not isinstance(reply, list) or len(reply) != 2 or not isinstance(reply[0], int)
                or not isinstance(reply[1], bytes)):
            raise FilterError(f"{self.role}: unexpected BF.SCANDUMP reply {reply!r:.200}")
        return reply[0], reply[1]


def show_info(info):
    return ", ".join(f"{k}: {'-' if v is None else v}" for k, v in info.items())


def find_filters(src, pattern):
    """Names of the source's keys matching pattern whose TYPE is a bloom filter, sorted."""
    names = set()
    for key in src.r.scan_iter(match=pattern, count=1000):
        names.add(key)
    names = sorted(names)
    found = []
    for i in range(0, len(names), 500):
        batch = names[i:i + 500]
        pipe = src.r.pipeline(transaction=False)
        for key in batch:
            pipe.type(key)
        try:
            types = pipe.execute()
        except redis.exceptions.RedisError as e:
            raise ServerError(f"source {src.shown}: TYPE failed: {e}") from None
        for key, t in zip(batch, types):
            t = t.decode() if isinstance(t, bytes) else str(t)
            if t == BF_TYPE:
                found.append(key)
    return found


def show_key(key):
    """A key name for messages: as it is when plain, quoted when it has spaces or is empty, as a
    Python bytes literal (without the b) when it is not printable UTF-8."""
    if isinstance(key, str):
        key = os.fsencode(key)
    try:
        s = key.decode()
    except UnicodeDecodeError:
        return repr(key)[1:]
    if not s.isprintable():
        return repr(key)[1:]
    return repr(s) if (not s or any(c.isspace() for c in s)) else s


def check_source(src, key):
    t = src.key_type(key)
    if t == "none":
        raise FilterError("not found on the source")
    if t != BF_TYPE:
        raise FilterError(f"is a {t} on the source, not a bloom filter ({BF_TYPE})")


def copy_filter(src, dst, key, args, say):
    name = show_key(key)
    check_source(src, key)
    before = src.bf_info(key)

    t = dst.key_type(key)
    if t != "none":
        if not args.replace:
            raise FilterError(f"already exists on the target (type {t}); use --replace to "
                              "overwrite it")
        dst.cmd("DEL", key)
        say(f"{name}: deleted the target's existing {t} key (--replace)")

    start = time.monotonic()
    total = chunks = 0
    it = 0
    loaded_any = False
    try:
        while True:
            try:
                it, data = src.scandump(key, it)
            except redis.exceptions.ResponseError as e:
                raise FilterError(f"BF.SCANDUMP {it} on the source: {e}") from None
            if it == 0:
                break
            if chunks == 0 and not data:
                raise FilterError("the source's BF.SCANDUMP 0 returned an empty header")
            try:
                dst.cmd("BF.LOADCHUNK", key, it, data)
            except redis.exceptions.ResponseError as e:
                raise FilterError(f"BF.LOADCHUNK {it} ({len(data)} bytes) on the target: {e}") from None
            loaded_any = True
            chunks += 1
            total += len(data)
    except (FilterError, ServerError, KeyboardInterrupt):
        if loaded_any:
            # A partial filter answers "no" for items it should hold: do not leave it behind.
            try:
                dst.r.delete(key)
                sys.stderr.write(f"bf_migrate: {name}: deleted the partly loaded filter on the "
                                 "target\n")
            except redis.exceptions.RedisError as e:
                sys.stderr.write(f"bf_migrate: {name}: could not delete the partly loaded filter "
                                 f"on the target ({e}): delete it by hand\n")
        raise
    secs = time.monotonic() - start

    after = src.bf_info(key)
    if after != before:
        raise FilterError(
            "the source filter changed during the copy (BF.INFO before: "
            f"{show_info(before)}; after: {show_info(after)}); the target has every item added "
            "before the copy started, but may miss some added during it: stop the writers and "
            "run again with --replace")
    # SCANDUMP carries no expiry: copy the time to live, if the source filter has one.
    ttl_note = ""
    pttl = src.cmd("PTTL", key)
    if isinstance(pttl, int) and pttl > 0:
        if dst.cmd("PEXPIRE", key, pttl) != 1:
            raise FilterError("PEXPIRE on the target did not set the time to live")
        ttl_note = f"; expires in {pttl / 1000:.0f} s, like the source"
    say(f"{name}: copied {fmt_bytes(total)} in {chunks} chunk(s) (header included) in "
        f"{secs:.2f} s ({fmt_bytes(total / secs if secs > 0 else 0)}/s); {show_info(after)}"
        f"{ttl_note}")
    if args.verify:
        verify(src, dst, key, name, before, say)


def verify(src, dst, key, name, src_info, say):
    dst_info = dst.bf_info(key)
    if dst_info != src_info:
        raise FilterError(f"verify: BF.INFO differs: source {show_info(src_info)}; target "
                          f"{show_info(dst_info)}")
    it_s = it_d = 0
    n = total = 0
    digest = hashlib.sha256()
    while True:
        try:
            it_s2, data_s = src.scandump(key, it_s)
        except redis.exceptions.ResponseError as e:
            raise FilterError(f"verify: BF.SCANDUMP {it_s} on the source: {e}") from None
        try:
            it_d2, data_d = dst.scandump(key, it_d)
        except redis.exceptions.ResponseError as e:
            raise FilterError(f"verify: BF.SCANDUMP {it_d} on the target: {e}") from None
        if it_s2 != it_d2:
            raise FilterError(f"verify: chunk {n}: SCANDUMP {it_s} returned iterator {it_s2} on the "
                              f"source but {it_d2} on the target")
        if data_s != data_d:
            if len(data_s) != len(data_d):
                where = f"lengths {len(data_s)} and {len(data_d)}"
            else:
                first = next(i for i, (a, b) in enumerate(zip(data_s, data_d)) if a != b)
                where = f"first difference at byte {first} of {len(data_s)}"
            raise FilterError(f"verify: chunk {n} (iterator {it_s2}) differs: {where}")
        if it_s2 == 0:
            break
        digest.update(data_s)
        it_s = it_d = it_s2
        n += 1
        total += len(data_s)
    if dst.bf_info(key) != src_info or src.bf_info(key) != src_info:
        raise FilterError("verify: BF.INFO changed while verifying (is something writing?)")
    src_ttl, dst_ttl = src.cmd("PTTL", key), dst.cmd("PTTL", key)
    if (src_ttl > 0) != (dst_ttl > 0):
        raise FilterError(f"verify: time to live differs: source PTTL {src_ttl}, target {dst_ttl}")
    say(f"{name}: verified: BF.INFO equal; {n} chunk(s), {fmt_bytes(total)}, byte for byte equal "
        f"(sha256 {digest.hexdigest()[:16]}...)")


def main(argv):
    p = argparse.ArgumentParser(
        prog="bf_migrate.py",
        description="Copy bloom filters with BF.SCANDUMP/BF.LOADCHUNK (RedisBloom <-> bloomproxy).",
        epilog="See the docstring at the top of this file, and docs/migration.md.")
    p.add_argument("--source", default=os.environ.get("BF_MIGRATE_SOURCE"),
                   help="source URL (default $BF_MIGRATE_SOURCE)")
    p.add_argument("--target", default=os.environ.get("BF_MIGRATE_TARGET"),
                   help="target URL (default $BF_MIGRATE_TARGET)")
    p.add_argument("--key", action="append", default=[], help="filter name (repeatable)")
    p.add_argument("--pattern", help="SCAN MATCH glob; copies the matching bloom filters")
    p.add_argument("--replace", action="store_true", help="delete existing target keys first")
    p.add_argument("--verify", action="store_true", help="compare BF.INFO and every dump chunk")
    p.add_argument("--dry-run", action="store_true", help="list what would be copied")
    p.add_argument("--timeout", type=float, default=60.0, help="socket timeout, seconds")
    p.add_argument("-q", "--quiet", action="store_true", help="only errors and the summary")
    args = p.parse_args(argv)

    if not args.source or not args.target:
        p.error("--source and --target are required (or BF_MIGRATE_SOURCE / BF_MIGRATE_TARGET)")
    if not args.key and args.pattern is None:
        p.error("give --key NAME (repeatable) or --pattern GLOB")
    if args.key and args.pattern is not None:
        p.error("give --key or --pattern, not both")
    if args.timeout <= 0:
        p.error("--timeout must be positive")

    def say(msg):
        if not args.quiet:
            print(msg, flush=True)

    def err(msg):
        sys.stderr.write(f"bf_migrate: {msg}\n")
        sys.stderr.flush()

    try:
        src = Side("source", args.source, args.timeout)
        dst = Side("target", args.target, args.timeout) if not args.dry_run else None
        if dst is not None:
            s_id = src.r.connection_pool.connection_kwargs
            d_id = dst.r.connection_pool.connection_kwargs
            same = all(s_id.get(k) == d_id.get(k) for k in ("host", "port", "path", "db"))
            if same:
                raise ServerError("source and target are the same server and database; "
                                  "nothing to copy")
        if args.pattern is not None:
            keys = find_filters(src, args.pattern)
            say(f"{len(keys)} bloom filter(s) on the source match {args.pattern!r}")
        else:
            keys = [os.fsencode(k) for k in args.key]  # names that are not UTF-8 work too
            keys = list(dict.fromkeys(keys))  # drop repeats, keep the order
    except ServerError as e:
        err(str(e))
        return EXIT_USAGE

    ok, failed = 0, []
    for key in keys:
        name = show_key(key)
        try:
            if args.dry_run:
                check_source(src, key)
                say(f"{name}: would copy ({show_info(src.bf_info(key))})")
            else:
                copy_filter(src, dst, key, args, say)
            ok += 1
        except FilterError as e:
            err(f"{name}: {e}")
            failed.append(name)
        except redis.exceptions.ResponseError as e:
            err(f"{name}: {e}")
            failed.append(name)
        except ServerError as e:
            err(f"{name}: {e}")
            err(f"stopped; {ok} filter(s) done before")
            return EXIT_USAGE
    verb = "would be copied" if args.dry_run else ("copied and verified" if args.verify else "copied")
    summary = f"{ok} filter(s) {verb}"
    if failed:
        summary += f", {len(failed)} failed: {', '.join(failed)}"
    if failed:
        err(summary)
    else:
        print(summary, flush=True)
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.stderr.write("bf_migrate: interrupted\n")
        sys.exit(130)
