# msomni_pure_core(TARGET FILES f... INCLUDE_DIRS d...): building TARGET first runs the purity
# check (cmake/check_pure_core.cmake) over FILES and every project header they
# include (found beside them or in INCLUDE_DIRS): CAF, UCX, a clock, a thread, a lock or a
# file fails the build. A pure core takes its environment as arguments.
set(MSOMNI_PURE_CORE_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/check_pure_core.cmake)
function(msomni_pure_core target)
  cmake_parse_arguments(P "" "" "FILES;INCLUDE_DIRS" ${ARGN})
  file(GLOB plain_runtime_headers ${PROJECT_SOURCE_DIR}/runtime/messages/*.hpp ${PROJECT_SOURCE_DIR}/runtime/core/*.hpp)
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}_is_pure.stamp)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} "-DFILES=${P_FILES}" "-DINCLUDE_DIRS=${P_INCLUDE_DIRS}" -DSTAMP=${stamp}
            -P ${MSOMNI_PURE_CORE_SCRIPT}
    DEPENDS ${P_FILES} ${plain_runtime_headers} ${MSOMNI_PURE_CORE_SCRIPT}
    COMMENT "Checking that ${target} is pure"
    VERBATIM)
  add_custom_target(${target}_purity DEPENDS ${stamp})
  add_dependencies(${target} ${target}_purity)
endfunction()
