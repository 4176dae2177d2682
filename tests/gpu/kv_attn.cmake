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
# kernels compiled as C++ for the CPU emulator (emulator.cmake), at warp widths 32 and 64: their
# index math runs against the cpu plugins on machines without a GPU, in ctest.
foreach(warp 32 64)
  set(target check_kv_attn_emu${warp})
  sy_add_emulated_gpu_check(${target} ${warp}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn.c ${CMAKE_SOURCE_DIR}/tests/attention/attn_reference.c
            ${CMAKE_SOURCE_DIR}/plugins/kv_nhd/cpu.c ${CMAKE_SOURCE_DIR}/plugins/kv_vectorized_5d/cpu.c
            ${CMAKE_SOURCE_DIR}/plugins/common/kv_store_cpu.c ${CMAKE_SOURCE_DIR}/plugins/common/sy_op_check.c
            ${CMAKE_SOURCE_DIR}/plugins/attn_paged/cpu.c ${CMAKE_SOURCE_DIR}/plugins/common/attn_cpu_core.c
            ${CMAKE_SOURCE_DIR}/plugins/common/cpu_workspace.c ${CMAKE_SOURCE_DIR}/plugins/rope_yarn/cpu.c
    GPU_SOURCES ${CMAKE_SOURCE_DIR}/plugins/kv_nhd/gpu.cu ${CMAKE_SOURCE_DIR}/plugins/kv_vectorized_5d/gpu.cu
                ${CMAKE_SOURCE_DIR}/plugins/attn_paged/gpu.cu ${CMAKE_SOURCE_DIR}/plugins/rope_yarn/gpu.cu
    INCLUDES ${CMAKE_SOURCE_DIR}/plugins/attn_paged ${CMAKE_SOURCE_DIR}/plugins/rope_yarn
             ${CMAKE_SOURCE_DIR}/tests/attention
    TEST_ARGS --quick)
  target_compile_definitions(${target} PRIVATE SY_CHECK_GPU_BACKEND="emu")
endforeach()
