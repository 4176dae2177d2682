# Helpers shared by every folder of the build.

# sy_add_plugin(NAME SOURCES...): a dlopen'd plugin module libsy_NAME.so in the plugins folder.
# Only sy_plugin_entry is exported.
function(sy_add_plugin name)
  add_library(sy_${name} MODULE ${ARGN})
  target_include_directories(sy_${name} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common)
  set_target_properties(sy_${name} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${SY_PLUGIN_OUTPUT_DIR})
  target_link_libraries(sy_${name} PRIVATE m)
  install(TARGETS sy_${name} LIBRARY DESTINATION ${SY_PLUGIN_INSTALL_DIR})
endfunction()

# sy_add_test(NAME SOURCES... [LIBS libs...]): a Check suite run by ctest.
function(sy_add_test name)
  cmake_parse_arguments(T "" "" "LIBS" ${ARGN})
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/engine/src
                             ${CMAKE_SOURCE_DIR}/plugins/common ${CMAKE_SOURCE_DIR}/tests/common)
  target_link_libraries(${name} PRIVATE PkgConfig::CHECK sy_testcommon ${T_LIBS} m)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "CK_DEFAULT_TIMEOUT=300;SY_BUILD_DIR=${CMAKE_BINARY_DIR};SY_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()
