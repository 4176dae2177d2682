# check_kv_attn_<vendor>: the GPU kv_nhd, kv_vectorized_5d, attn_paged and rope_yarn plugins against
# their cpu twins (check_kv_attn.c). A plain program, not a Check suite: run it on a machine with a
# GPU (it prints "skipped: no GPU" elsewhere); ctest runs its --quick list.
foreach(vendor cuda hip)
  string(TOUPPER ${vendor} VENDOR)
  if(NOT SY_WITH_${VENDOR})
    continue()
  endif()
  set(target check_kv_attn_${vendor})
  add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn.c ${CMAKE_SOURCE_DIR}/tests/attention/attn_reference.c)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common
                             ${CMAKE_SOURCE_DIR}/tests/common ${CMAKE_SOURCE_DIR}/tests/attention)
  target_compile_definitions(${target} PRIVATE SY_CHECK_GPU_BACKEND="${vendor}")
  target_link_libraries(${target} PRIVATE switchyard sy_testcommon m)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_dependencies(${target} sy_backend_${vendor}
                   sy_kv_nhd sy_kv_nhd_${vendor} sy_kv_vectorized_5d sy_kv_vectorized_5d_${vendor}
                   sy_attn_paged sy_attn_paged_${vendor} sy_rope_yarn sy_rope_yarn_${vendor})
  add_test(NAME ${target} COMMAND ${target} --quick)
  set_tests_properties(${target} PROPERTIES TIMEOUT 900)
endforeach()

# check_kv_attn_emu32 / check_kv_attn_emu64: the same cases (the --quick list) with the GPU plugins'
# kernels compiled as C++ for the CPU emulator of check_kv_attn_emu.cc, at warp widths 32 and 64:
# their index math runs against the cpu plugins on machines without a GPU, in ctest.
enable_language(CXX)
set(_kv_attn_emu_gpu ${CMAKE_SOURCE_DIR}/plugins/kv_nhd/gpu.cu ${CMAKE_SOURCE_DIR}/plugins/kv_vectorized_5d/gpu.cu
    ${CMAKE_SOURCE_DIR}/plugins/attn_paged/gpu.cu ${CMAKE_SOURCE_DIR}/plugins/rope_yarn/gpu.cu)
set(_kv_attn_emu_cpu ${CMAKE_SOURCE_DIR}/plugins/kv_nhd/cpu.c ${CMAKE_SOURCE_DIR}/plugins/kv_vectorized_5d/cpu.c
    ${CMAKE_SOURCE_DIR}/plugins/common/kv_store_cpu.c ${CMAKE_SOURCE_DIR}/plugins/common/sy_op_check.c
    ${CMAKE_SOURCE_DIR}/plugins/attn_paged/cpu.c ${CMAKE_SOURCE_DIR}/plugins/common/attn_cpu_core.c
    ${CMAKE_SOURCE_DIR}/plugins/common/cpu_workspace.c ${CMAKE_SOURCE_DIR}/plugins/rope_yarn/cpu.c)
set_source_files_properties(${_kv_attn_emu_gpu} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
foreach(warp 32 64)
  set(target check_kv_attn_emu${warp})
  add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn.c ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn_emu.cc
                 ${CMAKE_SOURCE_DIR}/tests/attention/attn_reference.c ${_kv_attn_emu_gpu} ${_kv_attn_emu_cpu})
  # The project's warning flags are C flags; the C++ sources get their own.
  _sy_gpu_options_for_c_only(${target})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas>
    # Read first, so that its include guard (the real vendor.h's) keeps backends/gpu/vendor.h out.
    $<$<COMPILE_LANGUAGE:CXX>:-include ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn_emu/vendor.h>)
  target_include_directories(${target} BEFORE PRIVATE ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn_emu)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common
                             ${CMAKE_SOURCE_DIR}/backends/gpu ${CMAKE_SOURCE_DIR}/plugins/attn_paged
                             ${CMAKE_SOURCE_DIR}/plugins/rope_yarn ${CMAKE_SOURCE_DIR}/tests/common
                             ${CMAKE_SOURCE_DIR}/tests/attention)
  target_compile_definitions(${target} PRIVATE SY_CHECK_EMULATED SY_CHECK_GPU_BACKEND="emu" SY_EMU_WARP_SIZE=${warp}
                             SY_PLUGIN_BACKEND_NAME="emu" $<$<COMPILE_LANGUAGE:CXX>:__CUDACC__>)
  target_link_libraries(${target} PRIVATE switchyard sy_testcommon m)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests LINKER_LANGUAGE CXX)
  add_test(NAME ${target} COMMAND ${target} --quick)
  set_tests_properties(${target} PROPERTIES TIMEOUT 1500)
endforeach()
