"""RESP3 helpers of the BF.*/CMS.* tests: a raw connection for RESP3 (after HELLO 3), and the
recorded RedisBloom RESP3 replies of the vector cases (tests/fixtures/{bf,cms}/
*-resp3-expected.json: the same cases as *-cases.json, recorded after HELLO 3 on the
connection).

Only the Python standard library (plus bp_helpers) is used.
"""

import base64
import json

from bp_helpers import RawConn, encode_command

EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"
ARITY_PREFIX = b"-ERR wrong number of arguments for "


class Resp3Conn(RawConn):
    """A RawConn (which frames RESP3 replies too) with one-call commands and HELLO."""

    def call(self, *args):
        """Sends one command; returns its raw reply."""
        self.send(encode_command(*args))
        return self.read_reply_raw()

    def hello(self, protover):
        """HELLO `protover` on this connection: asserts the switch was accepted (a map in RESP3,
        an array in RESP2, with proto set)."""
        reply = self.call("HELLO", str(protover))
        head = b"%" if protover == 3 else b"*"
        assert reply.startswith(head), f"HELLO {protover} answered {reply[:200]!r}"
        assert b"$5\r\nproto\r\n:%d\r\n" % protover in reply, reply[:300]
        return reply


def load_resp3_replies(path):
    """{case name: [raw reply]} of a *-resp3-expected.json recording."""
    recorded = json.loads(path.read_text())
    out = {e["name"]: [base64.b64decode(r) for r in e["replies"]] for e in recorded}
    assert len(out) == len(recorded), f"duplicate case names in {path.name}"
    return out


def with_resp3_replies(cases, path):
    """The cases (bf_vectors / cms_vectors load_cases()) with their RESP3 recorded replies."""
    replies = load_resp3_replies(path)
    assert set(replies) == {c["name"] for c in cases}, f"{path.name} holds other cases"
    out = []
    for case in cases:
        assert len(replies[case["name"]]) == len(case["cmds"]), case["name"]
        out.append(dict(case, replies=replies[case["name"]]))
    return out


def replay_in_multi(conn, case, max_report=3):
    """Each command of `case` alone in MULTI/EXEC on `conn` (a Resp3Conn to the proxy, either
    protocol), its keys deleted first. A command queued (+QUEUED) must answer its recorded reply
    as EXEC's one element; a command refused when queued (the command table's arity) must be
    refused with its recorded reply, and EXEC then aborts. Returns a failure message ('' when
    every reply is byte-identical)."""
    if case["keys"]:
        conn.call("DEL", *case["keys"])
    problems, mismatches = [], 0
    for i, (args, expected) in enumerate(zip(case["cmds"], case["replies"])):
        conn.send(encode_command("MULTI") + encode_command(*args) + encode_command("EXEC"))
        multi, queued, exec_reply = (conn.read_reply_raw() for _ in range(3))
        if queued == b"+QUEUED\r\n":
            ok = multi == b"+OK\r\n" and exec_reply == b"*1\r\n" + expected
        else:
            ok = multi == b"+OK\r\n" and queued == expected and exec_reply == EXECABORT
        if not ok:
            mismatches += 1
            if len(problems) < max_report:
                problems.append(f"  command #{i}: {args[:4]}\n    expected: {expected[:300]!r}\n"
                                f"    got:      {multi!r} {queued[:100]!r} {exec_reply[:300]!r}")
    if not mismatches:
        return ""
    return (f"case {case['name']} inside MULTI: {mismatches} of {len(case['cmds'])} replies "
            f"differ (first {len(problems)} shown)\n" + "\n".join(problems))


def expected_in_multi(args, reply, table_arity):
    """(queued, exec_reply) a client must read for `args` alone in MULTI/EXEC when the command's
    recorded reply outside MULTI is `reply`. `table_arity` maps a module command's name to its
    arity in Redis's command table (COMMAND INFO: n exactly, -n at least n, the name included):
    Redis refuses a command failing it while queuing (the refusal, then EXECABORT at EXEC); any
    other command (the module's own argc checks included) is +QUEUED and EXEC's one element is
    the recorded reply. A command not in the table is refused while queued when its recorded
    reply is an arity error."""
    arity = table_arity.get(args[0].upper())
    if arity is not None:
        refused = len(args) != arity if arity > 0 else len(args) < -arity
    else:
        refused = reply.startswith(ARITY_PREFIX)
    if refused:
        assert reply.startswith(ARITY_PREFIX), (args, reply)
        return reply, EXECABORT
    return b"+QUEUED\r\n", b"*1\r\n" + reply


def replay_in_multi_by_table(conn, case, table_arity, max_report=3):
    """Each command of `case` alone in MULTI/EXEC on `conn` (a Resp3Conn to the proxy, either
    protocol), the case's keys deleted first; every reply is checked against expected_in_multi
    (which of queue time and EXEC a refusal comes at is fixed by `table_arity`). Returns a
    failure message ('' when every reply is byte-identical)."""
    if case["keys"]:
        conn.call("DEL", *case["keys"])
    problems, mismatches = [], 0
    for i, (args, reply) in enumerate(zip(case["cmds"], case["replies"])):
        conn.send(encode_command("MULTI") + encode_command(*args) + encode_command("EXEC"))
        got = tuple(conn.read_reply_raw() for _ in range(3))
        want = (b"+OK\r\n",) + expected_in_multi(args, reply, table_arity)
        if got != want:
            mismatches += 1
            if len(problems) < max_report:
                problems.append(f"  command #{i}: {[a[:40] for a in args[:5]]}\n"
                                f"    expected: {[w[:300] for w in want]!r}\n"
                                f"    got:      {[g[:300] for g in got]!r}")
    if not mismatches:
        return ""
    return (f"case {case['name']} inside MULTI: {mismatches} of {len(case['cmds'])} replies "
            f"differ (first {len(problems)} shown)\n" + "\n".join(problems))
