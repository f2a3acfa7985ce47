# Turns one Lua script (a .lua file under filters/) into a C++ header holding its text and the
# SHA1 Redis knows it by (EVALSHA), at build time. Run by bp_embed_lua (cmake/lua.cmake):
#
#   cmake -DIN=<file.lua> -DOUT=<header> -DROOT=<filters/> -DNAME=<kConstant> -P embed_lua.cmake
#
# A line `--@include <path>` (path relative to filters/, e.g. common/marked.lua) is replaced by
# that file's text, itself expanded; a file is included once per script. Then every comment line
# (a line that starts with `--`, blanks aside) is dropped: most scripts go with EVAL, their
# whole text in every request, so what documents a script must not cost bytes on the wire. Long
# strings and long comments (`[[`, `--[==[`) are refused, as dropping lines would cut through
# them. tests/integration/lua_scripts.py does the same in Python. The header defines
#
#   inline constexpr ::bloomproxy::filters::LuaScript <NAME> = {"<stem>", R"...", "<sha1>"};
#
# in namespace bloomproxy::filters::lua (filters/common/lua_script.h).
cmake_minimum_required(VERSION 3.18)

# The text of `path` with its --@include lines expanded. (No CMake lists: Lua's brackets and
# semicolons would split them.)
function(expand_lua path out_var)
  get_property(seen GLOBAL PROPERTY BP_LUA_SEEN)
  list(FIND seen "${path}" at)
  if(NOT at EQUAL -1)
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY BP_LUA_SEEN "${path}")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "embed_lua: ${path} does not exist")
  endif()
  file(READ "${path}" text)
  set(result "")
  while(text MATCHES "(^|\n)--@include[ \t]+([^ \t\n]+)[ \t]*(\n|$)")
    set(directive "--@include ${CMAKE_MATCH_2}")
    set(included "${CMAKE_MATCH_2}")
    string(FIND "${text}" "${directive}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "embed_lua: write includes as '--@include <path>' in ${path}")
    endif()
    string(SUBSTRING "${text}" 0 ${at} before)
    string(LENGTH "${directive}" skip)
    math(EXPR after_at "${at} + ${skip}")
    string(SUBSTRING "${text}" ${after_at} -1 text)
    # Drop the rest of the directive's line, its newline included.
    if(text MATCHES "^[ \t]*\n")
      string(LENGTH "${CMAKE_MATCH_0}" skip)
      string(SUBSTRING "${text}" ${skip} -1 text)
    endif()
    expand_lua("${ROOT}/${included}" inner)
    string(APPEND result "${before}${inner}")
  endwhile()
  string(APPEND result "${text}")
  set(${out_var} "${result}" PARENT_SCOPE)
endfunction()

set_property(GLOBAL PROPERTY BP_LUA_SEEN "")
expand_lua("${IN}" body)
if(body MATCHES "--@")
  message(FATAL_ERROR "embed_lua: ${IN}: write includes as '--@include <path>' at a line's start")
endif()
if(body MATCHES "\\[=*\\[")
  message(FATAL_ERROR "embed_lua: ${IN}: no long strings or long comments ([[ ... ]])")
endif()
# Comment lines go, their newline with them. The newline put in front lets the first line match
# like any other.
string(REGEX REPLACE "\n[ \t]*--[^\n]*" "" body "\n${body}")
string(SUBSTRING "${body}" 1 -1 body)
if(body MATCHES "\\)bp_lua\"")
  message(FATAL_ERROR "embed_lua: ${IN} holds the raw-string delimiter )bp_lua\"")
endif()
string(SHA1 sha "${body}")
get_filename_component(stem "${IN}" NAME_WE)
get_filename_component(project "${ROOT}" DIRECTORY)
file(RELATIVE_PATH source "${project}" "${IN}")
set(header "// Generated from ${source} by cmake/embed_lua.cmake: do not edit.\n")
string(APPEND header "#pragma once\n\n#include \"filters/common/lua_script.h\"\n\n")
string(APPEND header "namespace bloomproxy::filters::lua {\n\n")
string(APPEND header "inline constexpr LuaScript ${NAME} = {\"${stem}\", R\"bp_lua(${body})bp_lua\",\n")
string(APPEND header "                                     \"${sha}\"};\n\n")
string(APPEND header "}  // namespace bloomproxy::filters::lua\n")
# Rewrite only when the text changed, so that an unchanged script does not rebuild its users.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL header)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${header}")
