# GPU targets: ON by default when the toolkit's compiler is found, and configure says why.
#
# CUDA goes through CMake's own CUDA language (nvcc). HIP goes through custom commands that run
# hipcc on each .cu: CMake 3.25's HIP language needs <rocm root>/lib/cmake/hip-lang/hip-lang-config.cmake,
# and Debian installs that file under the multiarch folder (/usr/lib/x86_64-linux-gnu/cmake/hip-lang),
# so enable_language(HIP) stops with "does not contain the HIP runtime CMake package". hipcc itself
# works with Debian's packages (clang 15, rocm-device-libs) and with an /opt/rocm install alike.
#
# Both toolkits produce ordinary host objects with the device code embedded (no relocatable device
# code), so every GPU module is linked by the C compiler like the rest of the project.
find_program(SY_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_PATH PATH_SUFFIXES bin)
find_program(SY_HIPCC hipcc HINTS /opt/rocm/bin)
set(_cuda_default OFF)
set(_hip_default OFF)
if(SY_NVCC)
  set(_cuda_default ON)
endif()
if(SY_HIPCC)
  set(_hip_default ON)
endif()
option(SY_WITH_CUDA "Build the CUDA backend and plugins" ${_cuda_default})
option(SY_WITH_HIP "Build the ROCm HIP backend and plugins" ${_hip_default})
set(SY_CUDA_ARCHS "90a" CACHE STRING "CUDA architectures (sm_XX without the prefix)")
set(SY_HIP_ARCHS "gfx90a;gfx940" CACHE STRING "HIP offload architectures")

message(STATUS "switchyard: cpu backend and plugins: ON (always)")
if(SY_WITH_CUDA)
  if(NOT SY_NVCC)
    message(FATAL_ERROR "SY_WITH_CUDA=ON but nvcc was not found (set CUDACXX or add nvcc to PATH)")
  endif()
  message(STATUS "switchyard: CUDA target: ON (nvcc at ${SY_NVCC}, archs ${SY_CUDA_ARCHS})")
else()
  if(SY_NVCC)
    message(STATUS "switchyard: CUDA target: OFF (disabled with SY_WITH_CUDA=OFF)")
  else()
    message(STATUS "switchyard: CUDA target: OFF (nvcc not found)")
  endif()
endif()
if(SY_WITH_HIP)
  if(NOT SY_HIPCC)
    message(FATAL_ERROR "SY_WITH_HIP=ON but hipcc was not found")
  endif()
  message(STATUS "switchyard: HIP target: ON (hipcc at ${SY_HIPCC}, archs ${SY_HIP_ARCHS}; compile-checked only, never run on an AMD GPU here)")
else()
  if(SY_HIPCC)
    message(STATUS "switchyard: HIP target: OFF (disabled with SY_WITH_HIP=OFF)")
  else()
    message(STATUS "switchyard: HIP target: OFF (hipcc not found)")
  endif()
endif()

# ---------------------------------------------------------------------------------------------
# Toolkit set-up

if(SY_WITH_CUDA)
  foreach(_arch IN LISTS SY_CUDA_ARCHS)
    if(NOT _arch MATCHES "^[0-9]+[af]?(-real|-virtual)?$")
      message(FATAL_ERROR
        "SY_CUDA_ARCHS: '${_arch}' is not a CUDA architecture such as 90a or 90 (sm_ prefix left out)")
    endif()
    string(REGEX MATCH "^[0-9]+" _arch_number "${_arch}")
    if(_arch_number LESS 80)
      # The MoE and decode-attention products use bf16 mma.sync (plugins/common/mma_bf16_cuda.cuh).
      message(FATAL_ERROR "SY_CUDA_ARCHS: '${_arch}' is older than sm_80, the oldest architecture the CUDA plugins support")
    endif()
  endforeach()
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    set(CMAKE_CUDA_COMPILER ${SY_NVCC})
  endif()
  # Also what CMake's compiler check builds for: nvcc 13 cannot build its own old default targets.
  set(CMAKE_CUDA_ARCHITECTURES ${SY_CUDA_ARCHS})
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # The prefill's TMA maps are encoded through cudaGetDriverEntryPointByVersion (CUDA 12.5).
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.5)
    message(FATAL_ERROR "SY_WITH_CUDA: nvcc ${CMAKE_CUDA_COMPILER_VERSION} is older than CUDA 12.5, the oldest toolkit "
                        "the CUDA plugins build with (cudaGetDriverEntryPointByVersion, for the prefill's TMA copies)")
  endif()
  string(REGEX REPLACE "-(real|virtual)" "" _sy_cuda_arch_names "${SY_CUDA_ARCHS}")
  list(TRANSFORM _sy_cuda_arch_names PREPEND "sm_")
  string(REPLACE ";" "," SY_CUDA_ARCHS_TEXT "${_sy_cuda_arch_names}")
  # Kernels with an sm_90a variant (wgmma) select it at run time where the build has that code.
  list(FIND _sy_cuda_arch_names "sm_90a" _sy_sm90a)
  set(SY_CUDA_SM90A_DEFINE "")
  if(NOT _sy_sm90a EQUAL -1)
    set(SY_CUDA_SM90A_DEFINE SY_CUDA_SM90A)
  endif()
endif()

if(SY_WITH_HIP)
  foreach(_arch IN LISTS SY_HIP_ARCHS)
    if(NOT _arch MATCHES "^gfx[0-9a-f]+(:[a-z]+[+-])*$")
      message(FATAL_ERROR "SY_HIP_ARCHS: '${_arch}' is not an offload target such as gfx90a or gfx942")
    endif()
  endforeach()
  find_path(SY_HIP_INCLUDE_DIR hip/hip_runtime_api.h HINTS /opt/rocm/include)
  find_library(SY_HIP_LIBRARY amdhip64 HINTS /opt/rocm/lib)
  if(NOT SY_HIP_INCLUDE_DIR OR NOT SY_HIP_LIBRARY)
    message(FATAL_ERROR "SY_WITH_HIP=ON but the HIP runtime was not found (hip/hip_runtime_api.h: "
                        "${SY_HIP_INCLUDE_DIR}, libamdhip64: ${SY_HIP_LIBRARY}); on Debian install "
                        "libamdhip64-dev, or set SY_WITH_HIP=OFF")
  endif()
  execute_process(COMMAND ${SY_HIPCC} --version OUTPUT_VARIABLE _sy_hipcc_version ERROR_QUIET)
  if(_sy_hipcc_version MATCHES "HIP version: ([0-9]+\\.[0-9]+)")
    set(SY_HIP_VERSION ${CMAKE_MATCH_1})
  else()
    set(SY_HIP_VERSION "unknown")
  endif()
  string(REPLACE ";" "," SY_HIP_ARCHS_TEXT "${SY_HIP_ARCHS}")
  set(SY_HIPCC_FLAGS "" CACHE STRING "Extra flags for every hipcc compile (after the project's own)")
endif()

# The project-wide warning and sanitizer flags (top-level add_compile_options) are written for C, and
# nvcc rejects most of them: a GPU target keeps them for its C sources only, and each toolkit gets
# its own equivalents. Call right after the target is created, before any option of its own.
function(_sy_gpu_options_for_c_only target)
  get_target_property(inherited ${target} COMPILE_OPTIONS)
  if(inherited)
    set(c_only)
    foreach(opt IN LISTS inherited)
      string(REPLACE "," "$<COMMA>" opt "${opt}")
      list(APPEND c_only "$<$<COMPILE_LANGUAGE:C>:${opt}>")
    endforeach()
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS "${c_only}")
  endif()
endfunction()

# The toolkit's version as the description of a GPU backend shows it.
function(_sy_gpu_toolkit_version vendor out)
  if(vendor STREQUAL "cuda")
    set(${out} "${CMAKE_CUDA_COMPILER_VERSION}" PARENT_SCOPE)
  else()
    set(${out} "${SY_HIP_VERSION}" PARENT_SCOPE)
  endif()
endfunction()

# ---------------------------------------------------------------------------------------------
# sy_add_gpu_module(TARGET VENDOR SOURCES...)
#
# A dlopen'd MODULE for one toolkit (VENDOR cuda or hip) from C sources and .cu sources: the device
# library of a GPU backend or plugin (sy_add_gpu_front_and_device). C sources are compiled by the C
# compiler against the vendor's runtime headers, .cu sources by nvcc or hipcc; both see
# SY_VENDOR_CUDA or SY_VENDOR_HIP, SY_GPU_ARCHS (text) and SY_GPU_TOOLKIT_VERSION, and the include
# folders engine/include, plugins/common and backends/gpu. The CUDA runtime is linked statically, so
# a module needs only the driver at run time and loads without one. Include folders and definitions
# added to the target later reach the hipcc commands too.
function(sy_add_gpu_module target vendor)
  set(c_sources)
  set(gpu_sources)
  foreach(src IN LISTS ARGN)
    get_filename_component(abs ${src} ABSOLUTE)
    if(abs MATCHES "\\.cu$")
      list(APPEND gpu_sources ${abs})
    else()
      list(APPEND c_sources ${abs})
    endif()
  endforeach()

  if(vendor STREQUAL "cuda")
    add_library(${target} MODULE ${c_sources} ${gpu_sources})
    _sy_gpu_options_for_c_only(${target})
    set_target_properties(${target} PROPERTIES
      CUDA_ARCHITECTURES "${SY_CUDA_ARCHS}"
      CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF
      CUDA_VISIBILITY_PRESET hidden
      CUDA_RUNTIME_LIBRARY Static
      LINKER_LANGUAGE C)
    target_compile_definitions(${target} PRIVATE SY_VENDOR_CUDA SY_GPU_ARCHS="${SY_CUDA_ARCHS_TEXT}"
      ${SY_CUDA_SM90A_DEFINE}
      SY_GPU_TOOLKIT_VERSION="${CMAKE_CUDA_COMPILER_VERSION}"
      # nvcc's C++ front end does not know C11's _Static_assert, which the ABI headers use.
      $<$<COMPILE_LANGUAGE:CUDA>:_Static_assert=static_assert>)
    # nvcc's own warnings and the host compiler's, all errors.
    set(cuda_options -Werror=all-warnings -Xcompiler=-Wall$<COMMA>-Wextra$<COMMA>-Wshadow$<COMMA>-Werror
        -Xcompiler=-fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=)
    if(SY_SANITIZE)
      list(APPEND cuda_options -Xcompiler=-fsanitize=address -Xcompiler=-fsanitize=undefined
           -Xcompiler=-fno-sanitize-recover=all -Xcompiler=-fno-omit-frame-pointer)
    endif()
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${cuda_options}>")
    target_link_libraries(${target} PRIVATE CUDA::cudart_static)
  elseif(vendor STREQUAL "hip")
    set(objects)
    set(obj_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}.hip)
    set(arch_flags ${SY_HIP_ARCHS})
    list(TRANSFORM arch_flags PREPEND "--offload-arch=")
    set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
    set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
    foreach(src IN LISTS gpu_sources)
      file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${src})
      string(MAKE_C_IDENTIFIER ${rel} obj_name)
      set(obj ${obj_dir}/${obj_name}.o)
      # Host code of .cu files is not sanitized: clang's sanitizer runtime differs from gcc's,
      # which links the module; the HIP target is compile-checked here anyway.
      add_custom_command(OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${obj_dir}
        COMMAND ${SY_HIPCC} -x hip ${arch_flags} -std=c++17 -O3 -fPIC -fvisibility=hidden
                -Wall -Wextra -Wshadow -Werror -fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=
                "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
                "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
                ${SY_HIPCC_FLAGS}
                -MD -MF ${obj}.d -MT ${obj} -c ${src} -o ${obj}
        DEPENDS ${src}
        DEPFILE ${obj}.d
        COMMENT "Building HIP object ${rel} for ${SY_HIP_ARCHS_TEXT}"
        COMMAND_EXPAND_LISTS VERBATIM)
      list(APPEND objects ${obj})
    endforeach()
    add_library(${target} MODULE ${c_sources} ${objects})
    _sy_gpu_options_for_c_only(${target})
    target_compile_definitions(${target} PRIVATE SY_VENDOR_HIP __HIP_PLATFORM_AMD__
      SY_GPU_ARCHS="${SY_HIP_ARCHS_TEXT}" SY_GPU_TOOLKIT_VERSION="${SY_HIP_VERSION}")
    if(NOT SY_HIP_INCLUDE_DIR STREQUAL "/usr/include")
      target_include_directories(${target} SYSTEM PRIVATE ${SY_HIP_INCLUDE_DIR})
    endif()
    target_link_libraries(${target} PRIVATE ${SY_HIP_LIBRARY})
  else()
    message(FATAL_ERROR "sy_add_gpu_module(${target}): vendor '${vendor}' is neither cuda nor hip")
  endif()

  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:-fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=>)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common
                             ${CMAKE_SOURCE_DIR}/backends/gpu)
  set_target_properties(${target} PROPERTIES PREFIX "lib" C_VISIBILITY_PRESET hidden)
  target_link_libraries(${target} PRIVATE m)
  # Never unloaded: GPU runtimes keep process-wide state (exit handlers, registered device code,
  # HIP's runtime objects) that must outlive a dlclose by the registry.
  target_link_options(${target} PRIVATE -Wl,-z,nodelete)
endfunction()

# ---------------------------------------------------------------------------------------------
# sy_add_gpu_front_and_device(TARGET VENDOR OUTPUT_DIR dir [INSTALL_DIR dir]
#                             FRONT_SOURCES srcs... DEVICE_SOURCES srcs...)
#
# One GPU module as two libraries (plugins/common/sy_device_library.h has the why and the runtime
# side):
#   TARGET          libTARGET.so in OUTPUT_DIR: the front, which the registry scans. C sources only,
#                   compiled by the C compiler with no GPU runtime on the include path or the link
#                   line, plus plugins/common/sy_device_library.c. Linked with -z defs, so a
#                   reference into device code fails at link time, not at dlopen. It keeps no
#                   runtime state and may be unloaded like any plugin.
#   TARGET_device   OUTPUT_DIR/VENDOR/libTARGET_device.so: the device library (sy_add_gpu_module),
#                   which the front opens on first use; -z nodelete, as every module with a runtime.
# Building TARGET builds both. With INSTALL_DIR, they install to INSTALL_DIR and INSTALL_DIR/VENDOR,
# the layout of the build tree. Both see SY_VENDOR_<VENDOR>, SY_GPU_ARCHS and
# SY_GPU_TOOLKIT_VERSION; backends/gpu/vendor_names.h is what the front may know of its vendor.
function(sy_add_gpu_front_and_device target vendor)
  cmake_parse_arguments(M "" "OUTPUT_DIR;INSTALL_DIR" "FRONT_SOURCES;DEVICE_SOURCES" ${ARGN})
  if(NOT M_OUTPUT_DIR OR NOT M_FRONT_SOURCES OR NOT M_DEVICE_SOURCES)
    message(FATAL_ERROR "sy_add_gpu_front_and_device(${target}): OUTPUT_DIR, FRONT_SOURCES and DEVICE_SOURCES are required")
  endif()
  string(TOUPPER ${vendor} VENDOR)
  _sy_gpu_toolkit_version(${vendor} toolkit_version)

  add_library(${target} MODULE ${M_FRONT_SOURCES} ${CMAKE_SOURCE_DIR}/plugins/common/sy_device_library.c)
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/engine/include ${CMAKE_SOURCE_DIR}/plugins/common
                             ${CMAKE_SOURCE_DIR}/backends/gpu)
  target_compile_definitions(${target} PRIVATE SY_VENDOR_${VENDOR} SY_GPU_ARCHS="${SY_${VENDOR}_ARCHS_TEXT}"
                             SY_GPU_TOOLKIT_VERSION="${toolkit_version}")
  target_compile_options(${target} PRIVATE -fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=)
  set_target_properties(${target} PROPERTIES PREFIX "lib" C_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${M_OUTPUT_DIR})
  target_link_libraries(${target} PRIVATE m)
  target_link_options(${target} PRIVATE -Wl,-z,defs)
  sy_restrict_permissions(${target})

  sy_add_gpu_module(${target}_device ${vendor} ${M_DEVICE_SOURCES})
  set_target_properties(${target}_device PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${M_OUTPUT_DIR}/${vendor})
  sy_restrict_permissions(${target}_device)
  add_dependencies(${target} ${target}_device)

  if(M_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${M_INSTALL_DIR})
    install(TARGETS ${target}_device LIBRARY DESTINATION ${M_INSTALL_DIR}/${vendor})
  endif()
endfunction()

# sy_add_gpu_backend(VENDOR): libsy_backend_<vendor>.so (gpu_backend_front.c) and its device library
# (gpu_backend.c, gpu_synth.cu, gpu_greedy.cu) from the one backend source.
function(sy_add_gpu_backend vendor)
  sy_add_gpu_front_and_device(sy_backend_${vendor} ${vendor}
    OUTPUT_DIR ${SY_PLUGIN_OUTPUT_DIR} INSTALL_DIR ${SY_PLUGIN_INSTALL_DIR}
    FRONT_SOURCES ${CMAKE_SOURCE_DIR}/backends/gpu/gpu_backend_front.c
    DEVICE_SOURCES ${CMAKE_SOURCE_DIR}/backends/gpu/gpu_backend.c ${CMAKE_SOURCE_DIR}/backends/gpu/gpu_synth.cu
                   ${CMAKE_SOURCE_DIR}/backends/gpu/gpu_greedy.cu)
endfunction()
