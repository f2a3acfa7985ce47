"""A windowed filter built by hand, straight on the upstream, in the layout of
docs/bloom-filters.md "Windowed filters' keys" (filters/bloom/window/window_slots.h), for the tests
of what the key commands, KEYS/SCAN, WATCH and the sweep do to one:

  N                          hash    bloomproxy=1 id error capacity expansion options shard
                                     window=W slots=g          (no link fields)
  P:bf:m:N                   string  marker "1"
  P:bf:<id>:w<e>             hash    slot e: a filter of its own (id <sid>, links l0 l1)
  P:bf:<id>:w<e>:bf:<sid>:<l>.<s>, ...:<l>:n    its shards and counts

with P = DataKeyPrefix(N); every key of slot e carries PEXPIREAT SlotEnd(e) = ceil(e·W/(g−1))
(filters/bloom/bf_plan_create.cc).
"""

import secrets
import time
import struct

from hand_keys import prefix_of


def double_bits(x):
    """bf_meta.h DoubleBits: the hex of a double's bits."""
    return struct.pack(">d", x).hex()


def slot_end(e, w, g):
    return -(-e * w // (g - 1))


def live_slots(t, w, g):
    """window_slots.h LiveSlots(t, t): the slots a lookup at upstream time `t` reads."""
    return range(t * (g - 1) // w + 1, -(-(t + w) * (g - 1) // w) + 1)


def upstream_ms(r):
    seconds, micros = r.time()
    return seconds * 1000 + micros // 1000


SHARD = 64
# Two links per slot: 128 bytes (2 shards of 64) and 256 bytes (4 shards).
LINKS = [(128, 100), (256, 200)]


SLOT_END_MARGIN_MS = 45_000


class HandWindow:
    """A windowed filter named `name` on `r` (a redis-py client of the node holding it), window
    `w` ms and `g` slots, with a slot for each live slot at the upstream's time but those whose
    index in the live range is in `skip` (a slot is only created by an add in its time)."""

    def __init__(self, r, name, w=3_600_000, g=3, skip=()):
        self.r, self.name, self.w, self.g = r, name, w, g
        self.prefix = prefix_of(name)
        self.id = secrets.token_hex(8)
        self.marker = f"{self.prefix}:bf:m:{name}"
        r.hset(name, mapping={"bloomproxy": "1", "id": self.id, "error": double_bits(0.01),
                              "capacity": "1000", "expansion": "2", "options": "5",
                              "shard": str(SHARD), "window": str(w), "slots": str(g)})
        r.set(self.marker, "1")
        self.slots = {}  # e -> (its end, its keys: name first)
        t = upstream_ms(r)
        # A slot ending while a test runs would vanish under it (seen at 04:30:00 once, W = 1 h):
        # when one ends within SLOT_END_MARGIN_MS, wait until it has ended.
        # (Short windows are made to end during their tests: not for them.)
        soon = [slot_end(e, w, g) for e in live_slots(t, w, g)
                if w >= 20 * SLOT_END_MARGIN_MS and slot_end(e, w, g) - t <= SLOT_END_MARGIN_MS]
        if soon:
            time.sleep((max(soon) - t) / 1000 + 0.05)
            t = upstream_ms(r)
        for i, e in enumerate(live_slots(t, w, g)):
            if i not in skip:
                self.add_slot(e)

    def slot_name(self, e, prefix=None):
        return f"{prefix or self.prefix}:bf:{self.id}:w{e}"

    def add_slot(self, e, ends=None):
        """Slot e as a plan would create it; `ends` overrides its PEXPIREAT (a slot out of the
        live range, for a test)."""
        slot = self.slot_name(e)
        sid = secrets.token_hex(8)
        fields = {"bloomproxy": "1", "id": sid, "error": double_bits(0.01 / self.g),
                  "capacity": "500", "expansion": "2", "options": "5", "shard": str(SHARD)}
        keys = [slot]
        for i, (size, capacity) in enumerate(LINKS):
            fields[f"l{i}"] = (f"{size} {size * 8} {capacity} 7 0 {double_bits(0.005)} "
                               f"{double_bits(9.585)}")
            for s in range(size // SHARD):
                key = f"{slot}:bf:{sid}:{i}.{s}"
                self.r.setrange(key, SHARD - 1, b"\x01")
                keys.append(key)
            self.r.set(f"{slot}:bf:{sid}:{i}:n", str(capacity // 2))
            keys.append(f"{slot}:bf:{sid}:{i}:n")
        self.r.hset(slot, mapping=fields)
        end = ends if ends is not None else slot_end(e, self.w, self.g)
        assert self.r.pexpireat(slot, end)
        for k in keys[1:]:
            assert self.r.pexpireat(k, end)
        self.slots[e] = (end, keys)
        return keys

    def slot_keys(self):
        return {k.encode() for _, keys in self.slots.values() for k in keys}

    def keys(self):
        """Every key of the filter: name, marker, slots."""
        return {self.name.encode(), self.marker.encode()} | self.slot_keys()

    def ends(self, at=None):
        """{key: its expiry} of every slot key: the slot's end, or the user's expiry `at` of the
        name when that is earlier."""
        out = {}
        for end, keys in self.slots.values():
            if at is not None:
                end = min(end, at)
            out[keys[0].encode()] = end
            out.update({k.encode(): end for k in keys[1:]})
        return out

    def renamed(self, to):
        """Its keys once RENAMEd to `to`: slots under the new prefix."""
        old, new = self.prefix.encode(), prefix_of(to).encode()
        out = {to.encode(), f"{prefix_of(to)}:bf:m:{to}".encode()}
        for k in self.slot_keys():
            assert k.startswith(old + b":"), k
            out.add(new + k[len(old):])
        return out
