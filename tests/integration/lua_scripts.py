"""The proxy's Lua scripts as Redis receives them, read from their .lua files under filters/.

load_script("cms/cms_multi.lua") does what cmake/embed_lua.cmake does at build time, step for
step, so that a test can EVAL a script, or a fragment of one, without the C++ around it:

- a line `--@include <path>` (path relative to filters/) is replaced by that file's text, itself
  expanded; a file is included once per script, a second include of it expands to nothing;
- a line that starts with `--` (blanks aside) is dropped, its newline with it;
- long strings and long comments (`[[ ... ]]`) are refused, as are includes not at a line's start.

test_lua_scripts.py checks that this gives every generated header's text.
"""

import re
from pathlib import Path

FILTERS = Path(__file__).resolve().parents[2] / "filters"

_INCLUDE = re.compile(r"(^|\n)--@include[ \t]+([^ \t\n]+)[ \t]*(\n|\Z)")
_COMMENT_LINE = re.compile(r"\n[ \t]*--[^\n]*")


def _expand(path, seen):
    """The text of `path` (a string, as embed_lua.cmake compares paths) with its includes
    expanded; nothing when `seen` already holds it."""
    if path in seen:
        return ""
    seen.add(path)
    text = Path(path).read_text()
    result = ""
    while True:
        m = _INCLUDE.search(text)
        if m is None:
            break
        directive = "--@include " + m.group(2)
        at = text.find(directive)
        if at < 0:
            raise ValueError(f"write includes as '--@include <path>' in {path}")
        before, text = text[:at], text[at + len(directive):]
        # The rest of the directive's line goes, its newline included.
        rest = re.match(r"[ \t]*\n", text)
        if rest:
            text = text[rest.end():]
        result += before + _expand(f"{FILTERS}/{m.group(2)}", seen)
    return result + text


def load_script(relative):
    """The text of filters/<relative> as the build embeds it (includes expanded, comment lines
    dropped)."""
    body = _expand(f"{FILTERS}/{relative}", set())
    if "--@" in body:
        raise ValueError(f"{relative}: write includes as '--@include <path>' at a line's start")
    if re.search(r"\[=*\[", body):
        raise ValueError(f"{relative}: no long strings or long comments ([[ ... ]])")
    return _COMMENT_LINE.sub("", "\n" + body)[1:]
