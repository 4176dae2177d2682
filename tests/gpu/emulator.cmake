# The CPU emulator of the GPU dialect (gpu_emulator.cc, gpu_emulator/vendor.h) and the function
# that builds a check on it:
#   sy_add_emulated_gpu_check(<target> <warp 32|64> SOURCES <C sources> GPU_SOURCES <.cu files>
#                             [INCLUDES <dirs>] [LIBS <libraries>] [TEST_ARGS <arguments>])
# The .cu files are compiled as C++ for the emulator, the C sources as they are; the program gets
# SY_CHECK_EMULATED, SY_EMU_WARP_SIZE=<warp>, the emulated backend (check_emu_backend.c) and the
# build tree's plugins folder beside it (tests/), as the GPU checks do; ctest runs it with
# TEST_ARGS.
enable_language(CXX)
function(sy_add_emulated_gpu_check target warp)
  cmake_parse_arguments(E "" "" "SOURCES;GPU_SOURCES;INCLUDES;LIBS;TEST_ARGS" ${ARGN})
  set(here ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  set_source_files_properties(${E_GPU_SOURCES} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
  add_executable(${target} ${E_SOURCES} ${E_GPU_SOURCES} ${here}/gpu_emulator.cc ${here}/check_emu_backend.c)
  # The project's warning flags are C flags; the C++ sources get their own.
  _sy_gpu_options_for_c_only(${target})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas>
    # Read first, so that its include guard (the real vendor.h's) keeps backends/gpu/vendor.h out.
    $<$<COMPILE_LANGUAGE:CXX>:-include ${here}/gpu_emulator/vendor.h>)
  if(SY_SANITIZE)
    # The sanitizer job's point here: the kernels' own loads and stores, checked.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer>)
  endif()
  target_include_directories(${target} BEFORE PRIVATE ${here}/gpu_emulator)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common
                             ${CMAKE_SOURCE_DIR}/backends/gpu ${CMAKE_SOURCE_DIR}/tests/common ${here} ${E_INCLUDES})
  target_compile_definitions(${target} PRIVATE SY_CHECK_EMULATED SY_EMU_WARP_SIZE=${warp}
                             SY_PLUGIN_BACKEND_NAME="emu" $<$<COMPILE_LANGUAGE:CXX>:__CUDACC__>)
  target_link_libraries(${target} PRIVATE switchyard sy_testcommon ${E_LIBS} m)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests LINKER_LANGUAGE CXX)
  add_test(NAME ${target} COMMAND ${target} ${E_TEST_ARGS})
  set_tests_properties(${target} PROPERTIES TIMEOUT 900)
endfunction()

# check_emulator_emu32 / _emu64: the emulator's own warp primitives against CUDA's and HIP's
# definitions (check_emulator.cu).
foreach(warp 32 64)
  sy_add_emulated_gpu_check(check_emulator_emu${warp} ${warp} GPU_SOURCES ${CMAKE_CURRENT_LIST_DIR}/check_emulator.cu)
endforeach()
