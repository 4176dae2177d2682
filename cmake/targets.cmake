# Helpers shared by every folder of the build.

# The loader refuses plugin files and folders writable by group or others; a umask of 002 (Debian's
# default for users with private groups) would create exactly those. Clear the bits after linking.
function(sy_restrict_permissions target)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND chmod go-w $<TARGET_FILE:${target}> $<TARGET_FILE_DIR:${target}>
    VERBATIM)
endfunction()

# sy_add_plugin(NAME SOURCES... [GPU_SOURCES srcs...] [FRONT_SOURCES srcs...] [TEST_FIXTURE]): a
# dlopen'd plugin module libsy_NAME.so in the plugins folder, built from SOURCES for the cpu
# backend. Only sy_plugin_entry is exported.
#
# GPU plugins: when the plugin's folder has gpu.cu, the plugin also gets, per enabled toolkit
# (SY_WITH_CUDA, SY_WITH_HIP), a GPU module of two libraries (sy_add_gpu_front_and_device in
# cmake/gpu.cmake; plugins/common/sy_device_library.h says why):
#   libsy_NAME_<vendor>.so                the front, in the plugins folder: plugin.c with
#                                         SY_PLUGIN_GPU_FRONT, the FRONT_SOURCES (plain C the front's
#                                         pure functions need: kv geometry, moe prepared_bytes) and
#                                         plugins/common/sy_gpu_front.c; no GPU runtime
#   <vendor>/libsy_NAME_<vendor>_device.so  the device library: plugin.c with SY_PLUGIN_GPU_DEVICE,
#                                         gpu.cu and the GPU_SOURCES (.cu for the toolkit's
#                                         compiler, .c for the C compiler), each compiled once per
#                                         toolkit through backends/gpu/vendor.h
# The target sy_NAME_<vendor> is the front and builds both. Both GPU builds of plugin.c see
# SY_PLUGIN_BACKEND_CUDA or SY_PLUGIN_BACKEND_HIP (and SY_PLUGIN_BACKEND_GPU for either); every
# variant, the cpu one included, sees SY_PLUGIN_BACKEND_NAME ("cpu", "cuda", "hip") for the
# descriptor's backend field (plugins/common/sy_plugin_role.h). The other SOURCES (cpu.c, ...) go
# into the cpu library only. backends/gpu/README.md has the rules kernels follow (no warp width of
# 32 assumed, the project's own numeric conversions).
#
# TEST_FIXTURE: a plugin that exists only for tests: built into tests/plugins of the build tree,
# where no search path finds it by default, and never installed.
function(sy_add_plugin name)
  cmake_parse_arguments(P "TEST_FIXTURE" "" "GPU_SOURCES;FRONT_SOURCES" ${ARGN})
  if(P_TEST_FIXTURE)
    set(output_dir ${CMAKE_BINARY_DIR}/tests/plugins)
    set(install_dir)
  else()
    set(output_dir ${SY_PLUGIN_OUTPUT_DIR})
    set(install_dir ${SY_PLUGIN_INSTALL_DIR})
  endif()
  add_library(sy_${name} MODULE ${P_UNPARSED_ARGUMENTS})
  target_include_directories(sy_${name} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common)
  target_compile_definitions(sy_${name} PRIVATE SY_PLUGIN_BACKEND_NAME="cpu")
  set_target_properties(sy_${name} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${output_dir})
  target_link_libraries(sy_${name} PRIVATE m)
  sy_restrict_permissions(sy_${name})
  if(install_dir)
    install(TARGETS sy_${name} LIBRARY DESTINATION ${install_dir})
  endif()

  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/gpu.cu)
    if(P_GPU_SOURCES OR P_FRONT_SOURCES)
      message(FATAL_ERROR "sy_add_plugin(${name}): GPU_SOURCES or FRONT_SOURCES given but ${CMAKE_CURRENT_SOURCE_DIR} has no gpu.cu")
    endif()
    return()
  endif()
  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/plugin.c)
    message(FATAL_ERROR "sy_add_plugin(${name}): ${CMAKE_CURRENT_SOURCE_DIR} has gpu.cu but no plugin.c; "
                        "the GPU libraries are built from plugin.c + gpu.cu")
  endif()
  foreach(vendor cuda hip)
    string(TOUPPER ${vendor} VENDOR)
    if(NOT SY_WITH_${VENDOR})
      continue()
    endif()
    set(front sy_${name}_${vendor})
    sy_add_gpu_front_and_device(${front} ${vendor} OUTPUT_DIR ${output_dir} INSTALL_DIR ${install_dir}
      FRONT_SOURCES plugin.c ${P_FRONT_SOURCES} ${CMAKE_SOURCE_DIR}/plugins/common/sy_gpu_front.c
      DEVICE_SOURCES plugin.c gpu.cu ${P_GPU_SOURCES})
    foreach(target ${front} ${front}_device)
      target_compile_definitions(${target} PRIVATE SY_PLUGIN_BACKEND_${VENDOR} SY_PLUGIN_BACKEND_GPU
                                 SY_PLUGIN_BACKEND_NAME="${vendor}")
    endforeach()
    target_compile_definitions(${front} PRIVATE SY_PLUGIN_GPU_FRONT)
    target_compile_definitions(${front}_device PRIVATE SY_PLUGIN_GPU_DEVICE)
  endforeach()
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
