# Fails when a pure core reaches for what it must be given: CAF or UCX, a clock, a thread or a
# lock, a file. Reads every file in FILES and, recursively, every project header they include
# with quotes (found beside the including file or in INCLUDE_DIRS), and refuses:
#   #include <caf/...>, <ucp/...>, <ucs/...>, <uct/...>      the actor system and transport
#   #include "core/clock.hpp"                                 the clocks (time comes in as
#                                                             core/time_point.hpp values)
#   #include <thread> <mutex> <shared_mutex> <condition_variable> <future> <fstream> <filesystem>
#   steady_clock::now, system_clock::now, high_resolution_clock::now, std::this_thread
# Usage: cmake -DFILES="a.cpp;b.hpp" -DINCLUDE_DIRS="dir;dir" [-DSTAMP=file] -P check_pure_core.cmake
# With STAMP, the file is touched when every file passes (a build step's output).
cmake_minimum_required(VERSION 3.25)

set(forbidden_include "^(caf|ucp|ucs|uct)/|^core/clock\\.hpp$|^(thread|mutex|shared_mutex|condition_variable|future|fstream|filesystem)$")
set(forbidden_text "(steady_clock|system_clock|high_resolution_clock)::now|std::this_thread")

set(queue ${FILES})
set(seen "")
set(problems "")
while(queue)
  list(POP_FRONT queue file)
  if(file IN_LIST seen)
    continue()
  endif()
  list(APPEND seen "${file}")
  if(NOT EXISTS "${file}")
    list(APPEND problems "${file}: no such file")
    continue()
  endif()
  get_filename_component(dir "${file}" DIRECTORY)
  file(STRINGS "${file}" lines)
  set(line_number 0)
  foreach(line IN LISTS lines)
    math(EXPR line_number "${line_number} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]+)[>\"]")
      set(kind "${CMAKE_MATCH_1}")
      set(name "${CMAKE_MATCH_2}")
      if(name MATCHES "${forbidden_include}")
        if(kind STREQUAL "<")
          list(APPEND problems "${file}:${line_number}: includes <${name}>")
        else()
          list(APPEND problems "${file}:${line_number}: includes \"${name}\"")
        endif()
      elseif(kind STREQUAL "\"")
        foreach(base IN ITEMS "${dir}" ${INCLUDE_DIRS})
          if(EXISTS "${base}/${name}")
            get_filename_component(found "${base}/${name}" REALPATH)
            list(APPEND queue "${found}")
            break()
          endif()
        endforeach()
      endif()
    elseif(line MATCHES "${forbidden_text}" AND NOT line MATCHES "^[ \t]*//")
      list(APPEND problems "${file}:${line_number}: uses ${CMAKE_MATCH_0}")
    endif()
  endforeach()
endwhile()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "a pure core must be given time, messages and storage, not reach for them:\n  ${text}")
endif()
if(STAMP)
  file(TOUCH "${STAMP}")
endif()
