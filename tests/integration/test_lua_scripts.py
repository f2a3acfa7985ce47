"""The Lua scripts embedded at build time (cmake/lua.cmake, cmake/embed_lua.cmake), against their
.lua files and a real redis-server:

- every generated header (<build>/gen/filters/<folder>/<stem>.lua.h) holds exactly the text
  lua_scripts.load_script gives for its .lua file, so tests that load a script or a fragment
  from its file (test_multi_cms.py's prelude) EVAL what the proxy sends;
- Redis compiles every script, and SCRIPT LOAD answers the SHA1 the header carries (the name
  EVALSHA would use);
- load_script expands includes once per script and drops comment lines, as the build does.
"""

import re
from pathlib import Path

import pytest

from bp_helpers import BLOOMPROXY_BIN
from lua_scripts import FILTERS, load_script

GEN = Path(BLOOMPROXY_BIN).resolve().parent / "gen" / "filters"
HEADER = re.compile(r'^// Generated from filters/(\S+\.lua) by cmake/embed_lua\.cmake: do not '
                    r'edit\.\n.*inline constexpr LuaScript (k\w+) = \{"(\w+)", R"bp_lua\((.*)\)'
                    r'bp_lua",\s*"([0-9a-f]{40})"\};', re.S)


def embedded():
    """(source, constant, stem, text, sha1) of every generated header."""
    out = []
    for header in sorted(GEN.glob("*/*.lua.h")):
        m = HEADER.match(header.read_text())
        assert m, f"{header} does not parse"
        out.append(m.groups())
    return out


def test_every_header_holds_its_file_as_load_script_reads_it():
    scripts = embedded()
    # Every folder's scripts (a lower bound, so that a build without them fails).
    assert len(scripts) >= 30, scripts
    for source, constant, stem, text, _ in scripts:
        assert (FILTERS / source).is_file(), source
        assert Path(source).stem == stem
        assert constant == "k" + "".join(p[:1].upper() + p[1:] for p in stem.split("_"))
        assert text == load_script(source), source


def test_redis_compiles_every_script_under_the_same_sha1(redis_instance):
    r = redis_instance.client()
    for source, _, _, text, sha1 in embedded():
        assert r.script_load(text) == sha1, source


def test_includes_are_expanded_once_and_comment_lines_dropped(tmp_path, monkeypatch):
    root = tmp_path / "filters"
    (root / "x").mkdir(parents=True)
    (root / "x" / "inc.lua").write_text("-- the fragment\nlocal x = 1\n")
    (root / "x" / "mid.lua").write_text("--@include x/inc.lua\nlocal y = x\n")
    (root / "x" / "main.lua").write_text(
        "-- a header\n--\n\n--@include x/inc.lua\n--@include x/mid.lua\n"
        "  -- an indented comment\nreturn {x, y} -- a comment after code stays\n")
    monkeypatch.setattr("lua_scripts.FILTERS", root)
    assert load_script("x/main.lua") == (
        "\nlocal x = 1\nlocal y = x\nreturn {x, y} -- a comment after code stays\n")
    (root / "x" / "long.lua").write_text("return [[a\n-- b]]\n")
    with pytest.raises(ValueError):
        load_script("x/long.lua")
    (root / "x" / "indented.lua").write_text("  --@include x/inc.lua\nreturn 1\n")
    with pytest.raises(ValueError):
        load_script("x/indented.lua")
