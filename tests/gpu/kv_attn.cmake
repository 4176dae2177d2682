# check_kv_attn_<vendor>: the GPU kv_nhd, kv_vectorized_5d, attn_paged and rope_yarn plugins against
# their cpu twins (check_kv_attn.c). A plain program, not a Check suite: run it on a machine with a
# GPU (it prints "skipped: no GPU" elsewhere); ctest runs its --quick list.
foreach(vendor cuda hip)
  string(TOUPPER ${vendor} VENDOR)
  if(NOT SY_WITH_${VENDOR})
    continue()
  endif()
  set(target check_kv_attn_${vendor})
  add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/check_kv_attn.c)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common
                             ${CMAKE_SOURCE_DIR}/tests/common)
  target_compile_definitions(${target} PRIVATE SY_CHECK_GPU_BACKEND="${vendor}")
  target_link_libraries(${target} PRIVATE switchyard sy_testcommon m)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_dependencies(${target} sy_backend_${vendor}
                   sy_kv_nhd sy_kv_nhd_${vendor} sy_kv_vectorized_5d sy_kv_vectorized_5d_${vendor}
                   sy_attn_paged sy_attn_paged_${vendor} sy_rope_yarn sy_rope_yarn_${vendor})
  add_test(NAME ${target} COMMAND ${target} --quick)
  set_tests_properties(${target} PROPERTIES TIMEOUT 900)
endforeach()
