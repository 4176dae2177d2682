# The GPU variants of the MoE, norm and linear plugins against their cpu twins
# (check_moe_norm_linear.c): one suite per enabled toolkit, skipping its device cases without a GPU.
foreach(vendor cuda hip)
  string(TOUPPER ${vendor} VENDOR)
  if(NOT SY_WITH_${VENDOR})
    continue()
  endif()
  set(suite check_moe_norm_linear_${vendor})
  sy_add_test(${suite} check_moe_norm_linear.c ${CMAKE_SOURCE_DIR}/tests/moe/moe_checkpoint.c LIBS switchyard)
  target_include_directories(${suite} PRIVATE ${CMAKE_SOURCE_DIR}/tests/moe)
  target_compile_definitions(${suite} PRIVATE SY_TEST_GPU_BACKEND="${vendor}")
  add_dependencies(${suite} sy_backend_${vendor})
  foreach(name moe_mxfp4_interleave moe_mxfp4_separated norm_rmsnorm linear)
    add_dependencies(${suite} sy_${name} sy_${name}_${vendor})
  endforeach()
endforeach()

# check_moe_norm_linear_emu32 / _emu64: the cases small enough for the CPU emulator (emulator.cmake),
# with the GPU plugins' kernels compiled as C++ at warp widths 32 (the CUDA build's tensor-core MoE
# product, on emulated fragments) and 64 (the HIP build's CUDA-core product), the linear as the hip
# library's tiled kernel, against the cpu twins of the build tree: on machines without a GPU.
foreach(warp 32 64)
  set(target check_moe_norm_linear_emu${warp})
  sy_add_emulated_gpu_check(${target} ${warp}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/check_moe_norm_linear.c ${CMAKE_SOURCE_DIR}/tests/moe/moe_checkpoint.c
            ${CMAKE_SOURCE_DIR}/plugins/common/sy_op_check.c ${CMAKE_SOURCE_DIR}/plugins/common/moe_mxfp4_args.c
            ${CMAKE_SOURCE_DIR}/plugins/norm_rmsnorm/args.c ${CMAKE_SOURCE_DIR}/plugins/linear/args.c
    # The two MoE plugins' gpu.cu differ by their comment: the layout is bound at init.
    GPU_SOURCES ${CMAKE_SOURCE_DIR}/plugins/moe_mxfp4_interleave/gpu.cu ${CMAKE_SOURCE_DIR}/plugins/norm_rmsnorm/gpu.cu
                ${CMAKE_SOURCE_DIR}/plugins/linear/gpu.cu
    INCLUDES ${CMAKE_SOURCE_DIR}/tests/moe
    LIBS PkgConfig::CHECK)
  target_compile_definitions(${target} PRIVATE SY_TEST_GPU_BACKEND="emu")
  add_dependencies(${target} sy_moe_mxfp4_interleave sy_moe_mxfp4_separated sy_norm_rmsnorm sy_linear)
endforeach()
