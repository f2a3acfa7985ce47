"""Through the proxy a client sees a Redis server with RedisBloom loaded: MODULE LIST, HELLO and
INFO's "# Modules" list the module `bf`; COMMAND, COMMAND INFO, COUNT, LIST, DOCS and GETKEYS
cover the sketch commands with RedisBloom's metadata; ACL rules name @bloom, @cuckoo, @cms,
@topk and @tdigest. With every family forwarded the upstream's own answers pass through. Where
a plain redis-server has an answer of its own (MODULE LIST, a core command's COMMAND INFO and
DOCS), the proxy's is compared with it."""

from bp_helpers import compare_with_redis, encode_command as cmd, parse_resp, replies_of
from resp3_replay import Resp3Conn

BF_LINE = (b"module:name=bf,ver=999999,api=1,filters=0,usedby=[],using=[],"
           b"options=[handle-io-errors]\r\n")
BF_ENTRY = (b"*8\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n:999999\r\n$4\r\npath\r\n"
            b"$10\r\nbloomproxy\r\n$4\r\nargs\r\n*0\r\n")
SKETCH_NAMES = [b"bf.reserve", b"bf.add", b"bf.madd", b"bf.insert", b"bf.exists", b"bf.mexists",
                b"bf.info", b"bf.card", b"bf.debug", b"bf.scandump", b"bf.loadchunk",
                b"cms.initbydim", b"cms.initbyprob", b"cms.incrby", b"cms.query", b"cms.merge",
                b"cms.info", b"cf.reserve", b"cf.add", b"cf.addnx", b"cf.insert", b"cf.insertnx",
                b"cf.exists", b"cf.mexists", b"cf.count", b"cf.del", b"cf.compact", b"cf.scandump",
                b"cf.loadchunk", b"cf.info", b"cf.debug"]
TOPK_NAMES = [b"topk.reserve", b"topk.add", b"topk.incrby", b"topk.query", b"topk.count",
              b"topk.list", b"topk.info"]
TDIGEST_NAMES = [b"tdigest.create", b"tdigest.add", b"tdigest.reset", b"tdigest.merge",
                 b"tdigest.min", b"tdigest.max", b"tdigest.quantile", b"tdigest.byrank",
                 b"tdigest.byrevrank", b"tdigest.rank", b"tdigest.revrank", b"tdigest.cdf",
                 b"tdigest.trimmed_mean", b"tdigest.info"]
SKETCH_NAMES += TOPK_NAMES + TDIGEST_NAMES
FORWARD_ALL = ("--bf-mode", "forward", "--cms-mode", "forward", "--cf-mode", "forward",
               "--topk-mode", "forward", "--tdigest-mode", "forward")


def one(port, *args):
    (raw,) = replies_of(port, cmd(*args), 1)
    return raw


# --- MODULE LIST, HELLO, INFO


def test_module_list_adds_bf_to_the_upstreams(bp, redis_instance):
    direct = one(redis_instance.port, "MODULE", "LIST")
    assert direct == b"*0\r\n"  # a plain redis-server: no module
    assert one(bp.port, "MODULE", "LIST") == b"*1\r\n" + BF_ENTRY
    modules = bp.client().module_list()
    assert modules == [{b"name": b"bf", b"ver": 999999, b"path": b"bloomproxy", b"args": []}]


def test_module_list_resp3_is_a_map(bp, redis_instance):
    with Resp3Conn(redis_instance.port) as c:
        c.hello(3)
        assert c.call("MODULE", "LIST") == b"*0\r\n"
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        assert c.call("MODULE", "LIST") == b"*1\r\n%4\r\n" + BF_ENTRY[len(b"*8\r\n"):]
        hello = c.hello(3)
        assert hello.endswith(b"$7\r\nmodules\r\n*1\r\n%4\r\n" + BF_ENTRY[len(b"*8\r\n"):])


def test_hello_lists_bf(bp):
    with bp.raw() as c:
        hello = c.command("HELLO", "2")
    assert hello[-2:] == [b"modules", [[b"name", b"bf", b"ver", 999999, b"path", b"bloomproxy",
                                        b"args", []]]]


def test_info_modules_section_has_bf(bp, redis_instance):
    direct = one(redis_instance.port, "INFO", "modules")
    via_proxy = one(bp.port, "INFO", "modules")
    # The upstream's section, with the module's line added.
    direct_text = parse_resp(direct)[0]
    assert direct_text == b"# Modules\r\n"
    assert parse_resp(via_proxy)[0] == b"# Modules\r\n" + BF_LINE
    for args in (("INFO",), ("INFO", "everything"), ("INFO", "all"), ("INFO", "default")):
        text = parse_resp(one(bp.port, *args))[0]
        assert b"# Modules\r\n" + BF_LINE in text, args
    info = bp.client().info()
    assert info["modules"] == [{"name": "bf", "ver": 999999, "api": 1, "filters": 0,
                                "usedby": "[]", "using": "[]", "options": "[handle-io-errors]"}]


def test_forwarded_families_pass_the_upstreams_answers(proxy, redis_instance):
    p = proxy(*FORWARD_ALL)
    payload = b"".join(cmd(*a) for a in (
        ("MODULE", "LIST"), ("INFO", "modules"), ("COMMAND", "COUNT"),
        ("COMMAND", "LIST", "FILTERBY", "MODULE", "bf"), ("COMMAND", "INFO", "bf.add", "get"),
        ("COMMAND", "DOCS", "bf.add", "get"), ("COMMAND", "GETKEYS", "BF.ADD", "k", "v"),
        ("COMMAND", "LIST", "FILTERBY", "ACLCAT", "bloom"), ("COMMAND", "INFO", "topk.add"),
        ("COMMAND", "DOCS", "topk.count"), ("COMMAND", "GETKEYS", "TOPK.ADD", "k", "v"),
        ("COMMAND", "LIST", "FILTERBY", "ACLCAT", "topk"), ("COMMAND", "INFO", "tdigest.merge"),
        ("COMMAND", "DOCS", "tdigest.add"),
        ("COMMAND", "GETKEYS", "TDIGEST.MERGE", "d", "2", "a", "b"),
        ("COMMAND", "LIST", "FILTERBY", "ACLCAT", "tdigest")))
    compare_with_redis(p.port, redis_instance, payload, 16)
    with p.raw() as c:
        assert c.command("HELLO", "2")[-1] == []
    for payload in (cmd("COMMAND"), cmd("COMMAND", "DOCS"), cmd("INFO", "everything")):
        (via_proxy,) = replies_of(p.port, payload, 1, timeout=20)
        assert b"bf.add" not in via_proxy and b"module:name=bf" not in via_proxy
        assert b"topk.add" not in via_proxy and b"tdigest.add" not in via_proxy


# --- COMMAND INFO, COMMAND, COUNT


BF_ADD_INFO = (
    b"*1\r\n*10\r\n$6\r\nbf.add\r\n:3\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n:1\r\n:1\r\n:1\r\n"
    b"*2\r\n+@write\r\n+@bloom\r\n*0\r\n"
    b"*1\r\n*8\r\n$5\r\nnotes\r\n$50\r\nis key name for a Bloom filter to add the item to.\r\n"
    b"$5\r\nflags\r\n*1\r\n+RW\r\n"
    b"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n"
    b":1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n"
    b"$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n")


def test_command_info_bf_add_exact(bp):
    assert one(bp.port, "COMMAND", "INFO", "BF.ADD") == BF_ADD_INFO


def test_key_spec_layout_is_redis_own(bp, redis_instance):
    """The key spec of BF.EXISTS has the layout of GET's (a core command with one key at 1)."""
    get = parse_resp(one(redis_instance.port, "COMMAND", "INFO", "get"))[0][0]
    bf = parse_resp(one(bp.port, "COMMAND", "INFO", "bf.exists"))[0][0]
    get_spec, bf_spec = get[8][0], bf[8][0]
    assert bf_spec[0] == b"notes"
    assert bf_spec[2:4] == [b"flags", [b"RO"]]
    assert get_spec[:2] == [b"flags", [b"RO", b"access"]]
    assert bf_spec[4:] == get_spec[2:]  # begin_search index 1, find_keys range 0 1 0
    assert bf[1:6] == [3, [b"readonly", b"module", b"fast"], 1, 1, 1]
    assert bf[6] == [b"@read", b"@bloom"]


def test_command_info_mixes_names(bp, redis_instance):
    direct = parse_resp(one(redis_instance.port, "COMMAND", "INFO", "get"))[0][0]
    reply = parse_resp(one(bp.port, "COMMAND", "INFO", "cms.merge", "get", "nosuch", "Bf.Info"))[0]
    assert reply[1] == direct and reply[2] is None
    assert reply[0][:7] == [b"cms.merge", -4, [b"write", b"denyoom", b"module"], 1, 1, 1,
                            [b"@write", b"@cms"]]
    assert reply[3][:7] == [b"bf.info", -2, [b"readonly", b"module", b"fast"], 1, 1, 1,
                            [b"@read", b"@fast", b"@bloom"]]


def settle_command_subcommands(port):
    """Redis 7.0 keeps COMMAND's subcommands in a dict that a fresh server may still be
    rehashing: each lookup of a subcommand (COMMAND COUNT, DOCS, INFO ...) moves the rehash one
    step on and can change the order COMMAND and COMMAND DOCS list them in. 64 lookups finish
    the rehash of its 8 entries, after which two calls list them alike."""
    for _ in range(64):
        one(port, "COMMAND", "COUNT")


def test_command_info_without_names_is_command(bp, redis_instance):
    settle_command_subcommands(redis_instance.port)
    (all_info,) = replies_of(bp.port, cmd("COMMAND", "INFO"), 1, timeout=20)
    (table,) = replies_of(bp.port, cmd("COMMAND"), 1, timeout=20)
    assert all_info == table
    entries = {e[0] for e in parse_resp(table)[0]}
    assert set(SKETCH_NAMES) <= entries
    direct = int(one(redis_instance.port, "COMMAND", "COUNT")[1:-2])
    assert one(bp.port, "COMMAND", "COUNT") == b":%d\r\n" % (direct + len(SKETCH_NAMES))


def test_redis_py_command_info(bp):
    info = bp.client().command()  # redis-py's own parsing of every entry of COMMAND
    assert info["bf.info"]["arity"] == -2
    assert info["cms.query"]["first_key_pos"] == 1
    assert set(info["cms.query"]["flags"]) == {"readonly", "module"}
    assert set(info["bf.add"]["flags"]) == {"write", "denyoom", "module"}
    assert info["topk.incrby"]["arity"] == -4
    assert set(info["topk.count"]["flags"]) == {"readonly", "module"}
    assert set(info["tdigest.merge"]["flags"]) == {"write", "denyoom", "module", "movablekeys"}
    assert info["tdigest.trimmed_mean"]["arity"] == 4


# TOPK.*: as RedisBloom (master b28c2945 on Redis 7.0.15) reports them (topk-commands.md):
# arity, flags, first/last/step 1/1/1, one key spec without notes (RW for the writes, RO for the
# reads), and the categories RedisBloom sets on Redis 7.4 (@write or @read, and @topk).
TOPK_INFO = {b"topk.reserve": (-3, True), b"topk.add": (-3, True), b"topk.incrby": (-4, True),
             b"topk.query": (-3, False), b"topk.count": (-3, False), b"topk.list": (-2, False),
             b"topk.info": (2, False)}

TOPK_ADD_INFO = (
    b"*1\r\n*10\r\n$8\r\ntopk.add\r\n:-3\r\n*3\r\n+write\r\n+denyoom\r\n+module\r\n"
    b":1\r\n:1\r\n:1\r\n*2\r\n+@write\r\n+@topk\r\n*0\r\n"
    b"*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RW\r\n"
    b"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n"
    b":1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n"
    b"$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n")


def test_command_info_topk(bp, redis_instance):
    assert one(bp.port, "COMMAND", "INFO", "TOPK.ADD") == TOPK_ADD_INFO
    get = parse_resp(one(redis_instance.port, "COMMAND", "INFO", "get"))[0][0]
    reply = parse_resp(one(bp.port, "COMMAND", "INFO", *TOPK_INFO))[0]
    assert [e[0] for e in reply] == list(TOPK_INFO)
    for entry in reply:
        arity, writes = TOPK_INFO[entry[0]]
        flags = [b"write", b"denyoom", b"module"] if writes else [b"readonly", b"module"]
        cats = [b"@write" if writes else b"@read", b"@topk"]
        assert entry[1:8] == [arity, flags, 1, 1, 1, cats, []], entry[0]
        (spec,) = entry[8]
        assert spec[:2] == [b"flags", [b"RW" if writes else b"RO"]], entry[0]
        assert spec[2:] == get[8][0][2:]  # begin_search index 1, find_keys range 0 1 0: GET's
        assert entry[9] == []
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        reply = c.call("COMMAND", "INFO", "topk.list")
        assert reply.startswith(b"*1\r\n*10\r\n$9\r\ntopk.list\r\n:-2\r\n~2\r\n+readonly\r\n"
                                b"+module\r\n:1\r\n:1\r\n:1\r\n~2\r\n+@read\r\n+@topk\r\n"
                                b"~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~1\r\n+RO\r\n")


# TDIGEST.*: as RedisBloom (master b28c2945) registers them. Arity, flags and key specs from its
# src/cmd_info/tdigest_info.c and src/rm_tdigest.c (write denyoom or readonly; one key spec at 1
# without notes, RW or RO; TDIGEST.MERGE's sources in a keynum spec, numkeys at index 2, which
# makes it movablekeys); the categories RedisBloom sets on Redis 7.4 (src/rm_tdigest.c: @write or
# @read, @fast for all but ADD, MERGE and TRIMMED_MEAN, and @tdigest).
TDIGEST_INFO = {b"tdigest.create": (-2, True, True), b"tdigest.add": (-3, True, False),
                b"tdigest.reset": (2, True, True), b"tdigest.min": (2, False, True),
                b"tdigest.max": (2, False, True), b"tdigest.quantile": (-3, False, True),
                b"tdigest.byrank": (-3, False, True), b"tdigest.byrevrank": (-3, False, True),
                b"tdigest.rank": (-3, False, True), b"tdigest.revrank": (-3, False, True),
                b"tdigest.cdf": (-3, False, True), b"tdigest.trimmed_mean": (4, False, False),
                b"tdigest.info": (2, False, True)}

TDIGEST_MERGE_INFO = (
    b"*1\r\n*10\r\n$13\r\ntdigest.merge\r\n:-4\r\n*4\r\n+write\r\n+denyoom\r\n+module\r\n"
    b"+movablekeys\r\n:1\r\n:1\r\n:1\r\n*2\r\n+@write\r\n+@tdigest\r\n*0\r\n*2\r\n"
    b"*6\r\n$5\r\nflags\r\n*1\r\n+RW\r\n"
    b"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n"
    b":1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n"
    b"$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"
    b"*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n"
    b"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n"
    b":2\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$6\r\nkeynum\r\n$4\r\nspec\r\n*6\r\n"
    b"$9\r\nkeynumidx\r\n:0\r\n$8\r\nfirstkey\r\n:1\r\n$7\r\nkeystep\r\n:1\r\n*0\r\n")


def test_command_info_tdigest(bp, redis_instance):
    assert one(bp.port, "COMMAND", "INFO", "TDIGEST.MERGE") == TDIGEST_MERGE_INFO
    get = parse_resp(one(redis_instance.port, "COMMAND", "INFO", "get"))[0][0]
    reply = parse_resp(one(bp.port, "COMMAND", "INFO", *TDIGEST_INFO))[0]
    assert [e[0] for e in reply] == list(TDIGEST_INFO)
    for entry in reply:
        arity, writes, fast = TDIGEST_INFO[entry[0]]
        flags = [b"write", b"denyoom", b"module"] if writes else [b"readonly", b"module"]
        cats = [b"@write" if writes else b"@read"] + ([b"@fast"] if fast else []) + [b"@tdigest"]
        assert entry[1:8] == [arity, flags, 1, 1, 1, cats, []], entry[0]
        (spec,) = entry[8]
        assert spec[:2] == [b"flags", [b"RW" if writes else b"RO"]], entry[0]
        assert spec[2:] == get[8][0][2:]  # begin_search index 1, find_keys range 0 1 0: GET's
        assert entry[9] == []
    # MERGE's keys are laid out as ZUNIONSTORE's (a destination, then numkeys sources): the
    # same legacy range 1 1 1, movablekeys, and the same begin_search / find_keys of each spec.
    zunion = parse_resp(one(redis_instance.port, "COMMAND", "INFO", "zunionstore"))[0][0]
    merge = parse_resp(TDIGEST_MERGE_INFO)[0][0]
    assert b"movablekeys" in zunion[2] and zunion[3:6] == merge[3:6] == [1, 1, 1]
    assert [s[2:] for s in merge[8]] == [s[2:] for s in zunion[8]]
    assert zunion[8][1][:2] == [b"flags", [b"RO", b"access"]]
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        reply = c.call("COMMAND", "INFO", "tdigest.merge")
        assert reply.startswith(b"*1\r\n*10\r\n$13\r\ntdigest.merge\r\n:-4\r\n~4\r\n+write\r\n"
                                b"+denyoom\r\n+module\r\n+movablekeys\r\n:1\r\n:1\r\n:1\r\n"
                                b"~2\r\n+@write\r\n+@tdigest\r\n~0\r\n~2\r\n%3\r\n")
        assert b"$4\r\ntype\r\n$6\r\nkeynum\r\n$4\r\nspec\r\n%3\r\n" in reply


# --- COMMAND LIST


def test_command_list_filters(bp, redis_instance):
    def names(port, *args):
        return set(parse_resp(one(port, "COMMAND", "LIST", *args))[0])

    assert names(bp.port, "FILTERBY", "MODULE", "bf") == set(SKETCH_NAMES)
    assert names(redis_instance.port, "FILTERBY", "MODULE", "bf") == set()
    assert names(bp.port, "FILTERBY", "ACLCAT", "bloom") == {n for n in SKETCH_NAMES
                                                            if n.startswith(b"bf.")}
    assert names(bp.port, "FILTERBY", "ACLCAT", "CMS") == {n for n in SKETCH_NAMES
                                                          if n.startswith(b"cms.")}
    assert names(bp.port, "FILTERBY", "ACLCAT", "cuckoo") == {n for n in SKETCH_NAMES
                                                             if n.startswith(b"cf.")}
    assert names(bp.port, "FILTERBY", "ACLCAT", "topk") == set(TOPK_NAMES)
    reads = names(redis_instance.port, "FILTERBY", "ACLCAT", "read")
    assert names(bp.port, "FILTERBY", "ACLCAT", "read") == reads | {
        b"bf.exists", b"bf.mexists", b"bf.info", b"bf.card", b"bf.debug", b"bf.scandump",
        b"cms.query", b"cms.info", b"cf.exists", b"cf.mexists", b"cf.count", b"cf.compact",
        b"cf.scandump", b"cf.info", b"cf.debug", b"topk.query", b"topk.count", b"topk.list",
        b"topk.info"} | {n for n, (_, writes, _) in TDIGEST_INFO.items() if not writes}
    writes = names(redis_instance.port, "FILTERBY", "ACLCAT", "write")
    assert names(bp.port, "FILTERBY", "ACLCAT", "write") - writes >= {
        b"topk.reserve", b"topk.add", b"topk.incrby", b"tdigest.create", b"tdigest.add",
        b"tdigest.reset", b"tdigest.merge"}
    assert names(bp.port, "FILTERBY", "PATTERN", "topk.*") == set(TOPK_NAMES)
    assert names(bp.port, "FILTERBY", "ACLCAT", "tdigest") == set(TDIGEST_NAMES)
    assert names(bp.port, "FILTERBY", "PATTERN", "TDIGEST.*") == set(TDIGEST_NAMES)
    fast = names(bp.port, "FILTERBY", "ACLCAT", "fast")
    assert {n for n in fast if n.startswith(b"tdigest.")} == {
        n for n, (_, _, f) in TDIGEST_INFO.items() if f}
    assert names(bp.port, "FILTERBY", "PATTERN", "BF.*ADD") == {b"bf.add", b"bf.madd"}
    assert names(bp.port, "FILTERBY", "PATTERN", "get*") == names(
        redis_instance.port, "FILTERBY", "PATTERN", "get*")
    full = names(bp.port)
    assert full == names(redis_instance.port) | set(SKETCH_NAMES)
    payload = cmd("COMMAND", "LIST", "FILTERBY", "NOSUCH", "x") + cmd("COMMAND", "LIST", "X")
    compare_with_redis(bp.port, redis_instance, payload, 2)


# --- COMMAND DOCS


BF_CARD_DOCS = (b"$7\r\nbf.card\r\n*12\r\n$7\r\nsummary\r\n$41\r\nReturns the cardinality of a "
                b"Bloom filter\r\n$5\r\nsince\r\n$5\r\n2.4.4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n"
                b"$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$6\r\nmodule\r\n$2\r\nbf\r\n"
                b"$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n"
                b"$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n")


def test_command_docs_in_the_order_asked(bp, redis_instance):
    (get_docs,) = replies_of(redis_instance.port, cmd("COMMAND", "DOCS", "get"), 1)
    get_pair = get_docs[len(b"*2\r\n"):]
    reply = one(bp.port, "COMMAND", "DOCS", "nosuch", "BF.CARD", "get")
    assert reply == b"*4\r\n" + BF_CARD_DOCS + get_pair
    assert one(bp.port, "COMMAND", "DOCS", "get", "bf.card") == b"*4\r\n" + get_pair + BF_CARD_DOCS


def test_command_docs_layout_is_redis_own(bp, redis_instance):
    """A module command's docs as Redis lays them out: summary, since, group, complexity, module,
    arguments; each argument's keys in Redis's order (name, type, token, flags, arguments)."""
    get = parse_resp(one(redis_instance.port, "COMMAND", "DOCS", "set"))[0][1]
    insert = parse_resp(one(bp.port, "COMMAND", "DOCS", "bf.insert"))[0][1]
    assert insert[0::2] == [b"summary", b"since", b"group", b"complexity", b"module", b"arguments"]
    assert [k for k in get[0::2] if k in insert[0::2]] == [b"summary", b"since", b"group",
                                                          b"complexity", b"arguments"]
    args = insert[11]
    assert [a[1] for a in args] == [b"key", b"capacity", b"error", b"expansion", b"nocreate",
                                    b"nonscaling", b"items", b"item"]
    assert args[1] == [b"name", b"capacity", b"type", b"block", b"token", b"CAPACITY",
                       b"flags", [b"optional"], b"arguments",
                       [[b"name", b"capacity", b"type", b"integer"]]]
    # SET's "condition": a oneof with flags, as Redis orders a block's keys.
    condition = next(a for a in get[get.index(b"arguments") + 1] if a[1] == b"condition")
    assert condition[0::2] == [b"name", b"type", b"since", b"flags", b"arguments"]


def test_command_docs_all(bp, redis_instance):
    settle_command_subcommands(redis_instance.port)
    (direct,) = replies_of(redis_instance.port, cmd("COMMAND", "DOCS"), 1, timeout=20)
    (via_proxy,) = replies_of(bp.port, cmd("COMMAND", "DOCS"), 1, timeout=20)
    d, p = parse_resp(direct)[0], parse_resp(via_proxy)[0]
    assert len(p) == len(d) + 2 * len(SKETCH_NAMES)
    assert p[:len(d)] == d
    assert p[len(d)::2] == SKETCH_NAMES
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        reply = c.call("COMMAND", "DOCS", "bf.card")
        assert reply.startswith(b"%1\r\n$7\r\nbf.card\r\n%6\r\n$7\r\nsummary\r\n")
        assert reply.endswith(b"$9\r\narguments\r\n*1\r\n%3\r\n$4\r\nname\r\n$3\r\nkey\r\n"
                              b"$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n")


def test_command_docs_topk(bp, redis_instance):
    """TOPK.* docs from RedisBloom's command info; TOPK.COUNT's history (its deprecation) laid
    out as Redis 7.0 lays out SET's: after the module, a set of [since, changes] pairs."""
    docs = parse_resp(one(bp.port, "COMMAND", "DOCS", *TOPK_NAMES))[0]
    assert docs[0::2] == TOPK_NAMES
    by_name = dict(zip(docs[0::2], docs[1::2]))
    for name, d in by_name.items():
        assert d[0:6] == [b"summary", d[1], b"since", b"2.0.0", b"group", b"module"], name
        assert d[6] == b"complexity" and d[8:10] == [b"module", b"bf"], name
        assert d[-2] == b"arguments" and d[-1][0] == [b"name", b"key", b"type", b"key",
                                                       b"key_spec_index", 0], name
    count = by_name[b"topk.count"]
    assert count[0::2] == [b"summary", b"since", b"group", b"complexity", b"module", b"history",
                           b"arguments"]
    assert count[11] == [[b"2.4.0", b"As of Bloom version 2.4, this command is regarded as "
                          b"deprecated. The count value is not a representative of the number "
                          b"of appearances of an item"]]
    assert [len(d) for d in by_name.values()].count(12) == 6  # the others have no history
    assert by_name[b"topk.reserve"][11][1:] == [
        [b"name", b"topk", b"type", b"integer"],
        [b"name", b"params", b"type", b"block", b"flags", [b"optional"], b"arguments",
         [[b"name", b"width", b"type", b"integer"], [b"name", b"depth", b"type", b"integer"],
          [b"name", b"decay", b"type", b"double"]]]]
    assert by_name[b"topk.incrby"][11][1] == [
        b"name", b"item_increment", b"type", b"block", b"flags", [b"multiple"], b"arguments",
        [[b"name", b"item", b"type", b"string"], [b"name", b"increment", b"type", b"integer"]]]
    assert by_name[b"topk.list"][11][1] == [b"name", b"withcount", b"type", b"pure-token",
                                            b"token", b"WITHCOUNT", b"flags", [b"optional"]]
    # SET's history on the same server: where it sits and its element shape.
    set_docs = parse_resp(one(redis_instance.port, "COMMAND", "DOCS", "set"))[0][1]
    assert set_docs[set_docs.index(b"history") + 2] == b"arguments"
    assert all(len(h) == 2 for h in set_docs[set_docs.index(b"history") + 1])
    with Resp3Conn(redis_instance.port) as c:
        c.hello(3)
        assert b"$7\r\nhistory\r\n~4\r\n*2\r\n$6\r\n2.6.12\r\n" in c.call("COMMAND", "DOCS", "set")
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        reply = c.call("COMMAND", "DOCS", "topk.count")
        assert reply.startswith(b"%1\r\n$10\r\ntopk.count\r\n%7\r\n")
        assert b"$7\r\nhistory\r\n~1\r\n*2\r\n$5\r\n2.4.0\r\n" in reply


# TDIGEST.* docs: summaries and complexities as RedisBloom's own docs test lists them for the
# module the proxy follows (tests/flow/test_docs_help.py), since 2.4.0; the arguments' shapes
# from src/cmd_info/tdigest_info.c.
TDIGEST_DOCS = {
    b"tdigest.create": (b"Allocates memory and initializes a new t-digest sketch", b"O(1)"),
    b"tdigest.add": (b"Adds one or more observations to a t-digest sketch",
                     b"O(N), where N is the number of samples to add"),
    b"tdigest.reset": (b"Resets a t-digest sketch: empty the sketch and re-initializes it.",
                       b"O(1)"),
    b"tdigest.merge": (b"Merges multiple t-digest sketches into a single sketch",
                       b"O(N*K), where N is the number of centroids and K being the number of "
                       b"input sketches"),
    b"tdigest.min": (b"Returns the minimum observation value from a t-digest sketch", b"O(1)"),
    b"tdigest.max": (b"Returns the maximum observation value from a t-digest sketch", b"O(1)"),
    b"tdigest.quantile": (b"Returns, for each input fraction, an estimation of the value "
                          b"(floating point) that is smaller than the given fraction of "
                          b"observations", b"O(N) where N is the number of quantiles specified."),
    b"tdigest.byrank": (b"Returns, for each input rank, an estimation of the value "
                        b"(floating-point) with that rank",
                        b"O(N) where N is the number of ranks specified"),
    b"tdigest.byrevrank": (b"Returns, for each input reverse rank, an estimation of the value "
                           b"(floating-point) with that reverse rank",
                           b"O(N) where N is the number of reverse ranks specified."),
    b"tdigest.rank": (b"Returns, for each input value (floating-point), the estimated rank of the "
                      b"value (the number of observations in the sketch that are smaller than "
                      b"the value + half the number of observations that are equal to the value)",
                      b"O(N) where N is the number of values specified."),
    b"tdigest.revrank": (b"Returns, for each input value (floating-point), the estimated reverse "
                         b"rank of the value (the number of observations in the sketch that are "
                         b"larger than the value + half the number of observations that are "
                         b"equal to the value)",
                         b"O(N) where N is the number of values specified."),
    b"tdigest.cdf": (b"Returns, for each input value, an estimation of the floating-point "
                     b"fraction of (observations smaller than the given value + half the "
                     b"observations equal to the given value). Multiple fractions can be "
                     b"retrieved in a single call.",
                     b"O(N) where N is the number of values specified."),
    b"tdigest.trimmed_mean": (b"Returns an estimation of the mean value from the sketch, "
                              b"excluding observation values outside the low and high cutoff "
                              b"quantiles", b"O(N) where N is the number of centroids"),
    b"tdigest.info": (b"Returns information and statistics about a t-digest sketch", b"O(1)"),
}
COMPRESSION_BLOCK = [b"name", b"compression_block", b"type", b"block", b"flags", [b"optional"],
                     b"arguments", [[b"name", b"compression_token", b"type", b"pure-token",
                                     b"token", b"COMPRESSION"],
                                    [b"name", b"compression", b"type", b"integer"]]]


def test_command_docs_tdigest(bp, redis_instance):
    docs = parse_resp(one(bp.port, "COMMAND", "DOCS", *TDIGEST_NAMES))[0]
    assert docs[0::2] == TDIGEST_NAMES
    by_name = dict(zip(docs[0::2], docs[1::2]))
    key = [b"name", b"key", b"type", b"key", b"key_spec_index", 0]
    for name, d in by_name.items():
        summary, complexity = TDIGEST_DOCS[name]
        assert d[:10] == [b"summary", summary, b"since", b"2.4.0", b"group", b"module",
                          b"complexity", complexity, b"module", b"bf"], name
        assert len(d) == 12 and d[10] == b"arguments", name  # no history
        if name != b"tdigest.merge":
            assert d[11][0] == key, name
    args = {name: d[11][1:] for name, d in by_name.items()}
    values = [[b"name", b"value", b"type", b"double", b"flags", [b"multiple"]]]
    assert args[b"tdigest.create"] == [COMPRESSION_BLOCK]
    assert args[b"tdigest.add"] == args[b"tdigest.rank"] == args[b"tdigest.revrank"] == \
        args[b"tdigest.cdf"] == values
    assert args[b"tdigest.quantile"] == [[b"name", b"quantile", b"type", b"double", b"flags",
                                          [b"multiple"]]]
    assert args[b"tdigest.byrevrank"] == [[b"name", b"reverse_rank", b"type", b"double", b"flags",
                                           [b"multiple"]]]
    assert args[b"tdigest.trimmed_mean"] == [[b"name", b"low_cut_quantile", b"type", b"double"],
                                             [b"name", b"high_cut_quantile", b"type", b"double"]]
    for name in (b"tdigest.reset", b"tdigest.min", b"tdigest.max", b"tdigest.info"):
        assert args[name] == [], name
    merge = by_name[b"tdigest.merge"][11]
    assert merge == [
        [b"name", b"destination-key", b"type", b"key", b"key_spec_index", 0],
        [b"name", b"numkeys", b"type", b"integer"],
        [b"name", b"source-key", b"type", b"key", b"key_spec_index", 1, b"flags", [b"multiple"]],
        COMPRESSION_BLOCK,
        [b"name", b"override", b"type", b"pure-token", b"token", b"OVERRIDE", b"flags",
         [b"optional"]]]
    # ZUNIONSTORE's sources on the same server: a key argument of the second key spec, as MERGE's.
    zunion = parse_resp(one(redis_instance.port, "COMMAND", "DOCS", "zunionstore"))[0][1]
    sources = zunion[zunion.index(b"arguments") + 1][2]
    assert sources[2:] == merge[2][2:]
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        reply = c.call("COMMAND", "DOCS", "tdigest.info")
        assert reply.startswith(b"%1\r\n$12\r\ntdigest.info\r\n%6\r\n$7\r\nsummary\r\n")


# --- COMMAND GETKEYS


def test_getkeys_of_sketch_commands(bp, proxy, redis_instance):
    assert one(bp.port, "COMMAND", "GETKEYS", "BF.ADD", "f", "x") == b"*1\r\n$1\r\nf\r\n"
    assert one(bp.port, "COMMAND", "GETKEYS", "bf.insert", "f", "ITEMS", "a") == \
        b"*1\r\n$1\r\nf\r\n"
    # CMS.MERGE declares only its destination (what RedisBloom's metadata says).
    assert one(bp.port, "COMMAND", "GETKEYS", "CMS.MERGE", "d", "2", "a", "b") == \
        b"*1\r\n$1\r\nd\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "BF.EXISTS", "f", "x") == \
        b"*1\r\n*2\r\n$1\r\nf\r\n*1\r\n+RO\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "cms.incrby", "c", "a", "1") == \
        b"*1\r\n*2\r\n$1\r\nc\r\n*1\r\n+RW\r\n"
    # Redis's own errors, as for a core command with the same fault.
    (arity,) = replies_of(redis_instance.port, cmd("COMMAND", "GETKEYS", "GET", "a", "b"), 1)
    assert one(bp.port, "COMMAND", "GETKEYS", "BF.ADD", "f", "x", "y") == arity
    assert arity == b"-ERR Invalid number of arguments specified for command\r\n"
    assert one(bp.port, "COMMAND", "GETKEYS", "BF.CARD", "f", "x") == arity
    # GETKEYS's own arity comes first (COMMAND GETKEYS needs a command and an argument).
    payload = cmd("COMMAND", "GETKEYS", "BF.INFO") + cmd("COMMAND", "GETKEYSANDFLAGS", "BF.ADD")
    compare_with_redis(bp.port, redis_instance, payload, 2)
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        assert c.call("COMMAND", "GETKEYSANDFLAGS", "BF.ADD", "f", "x") == \
            b"*1\r\n*2\r\n$1\r\nf\r\n~1\r\n+RW\r\n"
    # CF.*: the key, whatever the command (CF.COMPACT has no command info: Redis's legacy range).
    assert one(bp.port, "COMMAND", "GETKEYS", "CF.INSERT", "k", "CAPACITY", "4", "ITEMS", "a") == \
        b"*1\r\n$1\r\nk\r\n"
    assert one(bp.port, "COMMAND", "GETKEYS", "CF.COMPACT", "k") == b"*1\r\n$1\r\nk\r\n"
    # With cf-mode forward the upstream answers, as for any command it does not know.
    forwarding = proxy("--cf-mode", "forward")
    payload = cmd("COMMAND", "GETKEYS", "CF.ADD", "k", "x") + cmd("COMMAND", "GETKEYS", "GET", "k")
    compare_with_redis(forwarding.port, redis_instance, payload, 2)


def test_getkeys_of_topk(bp, proxy, redis_instance):
    """COMMAND GETKEYS returns argv[1] alone for every TOPK command (INCRBY's items are no keys),
    with RW or RO; the arity errors are Redis's."""
    assert one(bp.port, "COMMAND", "GETKEYS", "TOPK.RESERVE", "t", "3", "8", "7", "0.9") == \
        b"*1\r\n$1\r\nt\r\n"
    assert one(bp.port, "COMMAND", "GETKEYS", "topk.incrby", "t", "u", "1", "v", "2") == \
        b"*1\r\n$1\r\nt\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "TOPK.ADD", "t", "a", "b") == \
        b"*1\r\n*2\r\n$1\r\nt\r\n*1\r\n+RW\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "TOPK.LIST", "t", "WITHCOUNT") == \
        b"*1\r\n*2\r\n$1\r\nt\r\n*1\r\n+RO\r\n"
    (arity,) = replies_of(redis_instance.port, cmd("COMMAND", "GETKEYS", "GET", "a", "b"), 1)
    for args in (("TOPK.INFO", "t", "x"), ("TOPK.INCRBY", "t", "a"), ("TOPK.QUERY", "t")):
        assert one(bp.port, "COMMAND", "GETKEYS", *args) == arity, args
    # With topk-mode forward the upstream answers, as for any command it does not know.
    forwarding = proxy("--topk-mode", "forward")
    payload = (cmd("COMMAND", "GETKEYS", "TOPK.ADD", "k", "x") +
               cmd("COMMAND", "GETKEYSANDFLAGS", "TOPK.QUERY", "k", "x") +
               cmd("COMMAND", "INFO", "TOPK.ADD") + cmd("COMMAND", "DOCS", "TOPK.ADD"))
    compare_with_redis(forwarding.port, redis_instance, payload, 4)


def test_getkeys_of_tdigest(bp, proxy, redis_instance):
    """TDIGEST.MERGE's keys come from its key specs as Redis reads them: the destination, then
    numkeys sources (options are no keys); numkeys past the arguments, zero or not a number is
    Redis's "Invalid arguments", as for ZUNIONSTORE on a plain redis-server."""
    assert one(bp.port, "COMMAND", "GETKEYS", "tdigest.merge", "d", "3", "a", "b", "c",
               "OVERRIDE") == b"*4\r\n$1\r\nd\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "TDIGEST.MERGE", "d", "1", "a",
               "COMPRESSION", "100") == \
        b"*2\r\n*2\r\n$1\r\nd\r\n*1\r\n+RW\r\n*2\r\n$1\r\na\r\n*1\r\n+RO\r\n"
    # The same shape of keys from a core command with the same key specs.
    (zunion,) = replies_of(redis_instance.port,
                           cmd("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "3", "a", "b", "c",
                               "AGGREGATE", "SUM"), 1)
    assert zunion == b"*4\r\n$1\r\nd\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    (invalid,) = replies_of(redis_instance.port,
                            cmd("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "5", "a", "b"), 1)
    assert invalid == b"-ERR Invalid arguments specified for command\r\n"
    for numkeys in ("5", "4", "0", "-1", "x"):
        assert one(bp.port, "COMMAND", "GETKEYS", "tdigest.merge", "d", numkeys, "a", "b",
                   "OVERRIDE") == invalid, numkeys
    (arity,) = replies_of(redis_instance.port, cmd("COMMAND", "GETKEYS", "GET", "a", "b"), 1)
    for args in (("TDIGEST.MERGE", "d", "1"), ("TDIGEST.INFO", "t", "x"),
                 ("tdigest.trimmed_mean", "t", "0.1"), ("TDIGEST.ADD", "t")):
        assert one(bp.port, "COMMAND", "GETKEYS", *args) == arity, args
    assert one(bp.port, "COMMAND", "GETKEYS", "TDIGEST.ADD", "t", "1", "2") == b"*1\r\n$1\r\nt\r\n"
    assert one(bp.port, "COMMAND", "GETKEYSANDFLAGS", "TDIGEST.CREATE", "t", "COMPRESSION",
               "10") == b"*1\r\n*2\r\n$1\r\nt\r\n*1\r\n+RW\r\n"
    with Resp3Conn(bp.port) as c:
        c.hello(3)
        assert c.call("COMMAND", "GETKEYSANDFLAGS", "TDIGEST.QUANTILE", "t", "0.5") == \
            b"*1\r\n*2\r\n$1\r\nt\r\n~1\r\n+RO\r\n"
    # With tdigest-mode forward the upstream answers, as for any command it does not know.
    forwarding = proxy("--tdigest-mode", "forward")
    payload = (cmd("COMMAND", "GETKEYS", "TDIGEST.MERGE", "d", "1", "a") +
               cmd("COMMAND", "GETKEYSANDFLAGS", "TDIGEST.MIN", "k") +
               cmd("COMMAND", "INFO", "TDIGEST.ADD") + cmd("COMMAND", "DOCS", "TDIGEST.ADD") +
               cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", "tdigest"))
    compare_with_redis(forwarding.port, redis_instance, payload, 5)


# --- ACL categories


def test_acl_rules_name_redisbloom_categories(proxy, tmp_path):
    conf = tmp_path / "users.conf"
    conf.write_text("user nobloom pw1 +@all -@bloom\n"
                    "user cuckoo pw2 nocommands +@cuckoo +@topk +@tdigest +ping\n"
                    "user sketches pw3 nocommands +@cms +@read\n")
    p = proxy("--config", str(conf))
    with p.raw() as c:
        assert c.command("AUTH", "nobloom", "pw1") == b"OK"
        c.send(cmd("BF.ADD", "f", "x"))
        assert c.read_reply_raw() == \
            b"-NOPERM this user has no permissions to run the 'bf.add' command\r\n"
        assert c.command("CMS.INITBYDIM", "c", "10", "2") == b"OK"
        assert c.command("AUTH", "cuckoo", "pw2") == b"OK"
        assert c.command("PING") == b"PONG"
        c.send(cmd("CMS.QUERY", "c", "a"))
        assert c.read_reply_raw() == \
            b"-NOPERM this user has no permissions to run the 'cms.query' command\r\n"
        assert c.command("AUTH", "sketches", "pw3") == b"OK"
        assert c.command("CMS.QUERY", "c", "a") == [0]
        assert c.command("BF.EXISTS", "f", "x") == 0  # @read
        c.send(cmd("BF.ADD", "f", "x"))
        assert c.read_reply_raw().startswith(b"-NOPERM")



def test_acl_rules_name_topk(proxy, tmp_path):
    """@topk names the seven TOPK commands, @read and @write split them as RedisBloom does,
    whether the proxy answers them or forwards them (topk-mode): a refused command gets Redis's
    NOPERM before anything else looks at it."""
    conf = tmp_path / "users.conf"
    conf.write_text("user notopk pw1 +@all -@topk\n"
                    "user topkread pw2 nocommands +@topk -@write\n"
                    "user byname pw3 nocommands +topk.add +TOPK.Info\n")
    noperm = b"-NOPERM this user has no permissions to run the '%s' command\r\n"
    for mode in ("emulate", "forward"):
        p = proxy("--config", str(conf), "--topk-mode", mode)
        with p.raw() as c:
            assert c.command("AUTH", "notopk", "pw1") == b"OK"
            for name in TOPK_NAMES:
                c.send(cmd(name.upper(), "t", "a", "1"))
                assert c.read_reply_raw() == noperm % name, (mode, name)
            assert c.command("PING") == b"PONG"
            assert c.command("AUTH", "topkread", "pw2") == b"OK"
            for name in (b"topk.reserve", b"topk.add", b"topk.incrby"):
                c.send(cmd(name, "t", "a", "1"))
                assert c.read_reply_raw() == noperm % name, (mode, name)
            for name in (b"topk.query", b"topk.count", b"topk.list", b"topk.info"):
                c.send(cmd(name, "t"))
                assert not c.read_reply_raw().startswith(b"-NOPERM"), (mode, name)
            c.send(cmd("GET", "k"))
            assert c.read_reply_raw() == noperm % b"get"
            assert c.command("AUTH", "byname", "pw3") == b"OK"
            c.send(cmd("TOPK.QUERY", "t", "a"))
            assert c.read_reply_raw() == noperm % b"topk.query"
            c.send(cmd("topk.add", "t", "a") + cmd("topk.info", "t"))
            assert not c.read_reply_raw().startswith(b"-NOPERM")
            assert not c.read_reply_raw().startswith(b"-NOPERM")
            if mode == "forward":
                # Past the rules, the upstream's own answer: a plain Redis does not know it.
                c.send(cmd("TOPK.INFO", "t"))
                assert c.read_reply_raw() == (b"-ERR unknown command 'TOPK.INFO', with args "
                                              b"beginning with: 't' \r\n")


def test_acl_rules_name_tdigest(proxy, tmp_path):
    """@tdigest names the fourteen TDIGEST commands, @read and @write split them as RedisBloom
    does (the reads that compress a digest are @read too), whether the proxy answers them or
    forwards them (tdigest-mode): a refused command gets Redis's NOPERM before anything else."""
    conf = tmp_path / "users.conf"
    conf.write_text("user notd pw1 +@all -@tdigest\n"
                    "user tdread pw2 nocommands +@tdigest -@write\n"
                    "user tdfast pw3 nocommands +@fast\n")
    noperm = b"-NOPERM this user has no permissions to run the '%s' command\r\n"
    writes = {n for n, (_, w, _) in TDIGEST_INFO.items() if w} | {b"tdigest.merge"}
    for mode in ("emulate", "forward"):
        p = proxy("--config", str(conf), "--tdigest-mode", mode)
        with p.raw() as c:
            assert c.command("AUTH", "notd", "pw1") == b"OK"
            for name in TDIGEST_NAMES:
                c.send(cmd(name.upper(), "t", "1", "1"))
                assert c.read_reply_raw() == noperm % name, (mode, name)
            assert c.command("PING") == b"PONG"
            assert c.command("AUTH", "tdread", "pw2") == b"OK"
            for name in TDIGEST_NAMES:
                c.send(cmd(name, "t", "1", "1"))
                reply = c.read_reply_raw()
                assert reply.startswith(b"-NOPERM") == (name in writes), (mode, name, reply)
            assert c.command("AUTH", "tdfast", "pw3") == b"OK"
            for name in (b"tdigest.add", b"tdigest.merge", b"tdigest.trimmed_mean"):
                c.send(cmd(name, "t", "1", "1"))
                assert c.read_reply_raw() == noperm % name, (mode, name)
            c.send(cmd("tdigest.info", "t"))
            assert not c.read_reply_raw().startswith(b"-NOPERM")
