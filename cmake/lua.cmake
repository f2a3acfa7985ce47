# bp_embed_lua(<target> <file.lua>...): each Lua script under filters/ becomes a generated header
# <build>/gen/filters/<folder>/<stem>.lua.h, included as "filters/<folder>/<stem>.lua.h", that
# defines bloomproxy::filters::lua::k<Stem> (a LuaScript: name, text, SHA1). Scripts stay .lua
# files, so they can be read, linted and run against a real Redis on their own (a test loads one
# with tests/integration/lua_scripts.py); the C++ that sends them names the constant.
# `--@include <path>` lines are expanded first, comment lines dropped (cmake/embed_lua.cmake).
set(BP_LUA_GEN_DIR ${CMAKE_BINARY_DIR}/gen)
file(GLOB_RECURSE BP_LUA_ALL CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/filters/*.lua)

# The headers are made by a custom target of the calling directory that `target` depends on: a
# custom command's output gets a rule only in a target of the directory that adds the command, and
# a folder's CMakeLists.txt (filters/bloom/) is not the one that defines bp_filters (filters/).
function(bp_embed_lua target)
  set(outputs "")
  foreach(file IN LISTS ARGN)
    get_filename_component(abs ${file} ABSOLUTE)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
    get_filename_component(dir ${rel} DIRECTORY)
    get_filename_component(stem ${rel} NAME_WE)
    # cf_insert -> kCfInsert
    string(REGEX MATCHALL "[^_]+" parts ${stem})
    set(name "k")
    foreach(part IN LISTS parts)
      string(SUBSTRING ${part} 0 1 first)
      string(SUBSTRING ${part} 1 -1 rest)
      string(TOUPPER ${first} first)
      string(APPEND name "${first}${rest}")
    endforeach()
    set(out ${BP_LUA_GEN_DIR}/${dir}/${stem}.lua.h)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -DIN=${abs} -DOUT=${out} -DROOT=${PROJECT_SOURCE_DIR}/filters
              -DNAME=${name} -P ${PROJECT_SOURCE_DIR}/cmake/embed_lua.cmake
      DEPENDS ${BP_LUA_ALL} ${PROJECT_SOURCE_DIR}/cmake/embed_lua.cmake
      COMMENT "Embedding ${rel}"
      VERBATIM)
    list(APPEND outputs ${out})
    # Every embedded script, for tests/unit/lua_script_test.cc (tests/CMakeLists.txt).
    set_property(GLOBAL APPEND PROPERTY BP_LUA_HEADERS "${dir}/${stem}.lua.h")
    set_property(GLOBAL APPEND PROPERTY BP_LUA_NAMES "${name}")
  endforeach()
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(MAKE_C_IDENTIFIER "${target}_lua_${folder}" embed)
  add_custom_target(${embed} DEPENDS ${outputs})
  add_dependencies(${target} ${embed})
  target_include_directories(${target} PUBLIC ${BP_LUA_GEN_DIR})
endfunction()
