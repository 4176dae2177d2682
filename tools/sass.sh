#!/usr/bin/env bash
# The SASS (machine code) of one CUDA source of a build, on a machine without a GPU:
#   tools/sass.sh BUILD_DIR SOURCE.cu OUT.sass
# SOURCE.cu is compiled to a cubin with the flags its CMake target uses, then disassembled. A CUDA
# toolkit's own nvdisasm is used when it is on PATH. Otherwise the script fetches Debian 12's
# nvidia-cuda-toolkit (non-free, CUDA 11.8) once into SY_NVDISASM_CACHE (default
# ~/.cache/switchyard/nvdisasm) and uses its nvdisasm, which knows sm_90's instructions (wgmma
# included) but not the ELF header encoding that CUDA 12.8 and later write: a copy of the cubin
# gets the older encoding of the same architecture (ELF ABI version 7, e_flags SM | 0x100 | 0x400 |
# SM << 16) before it is read. Only the header changes; the listing is of the code as built.
# Counting a kernel's instructions on a path (what a change saves a block, say) is then a matter of
# reading OUT.sass; bench/results/ keeps such counts beside the timings they explain.
set -euo pipefail
usage="usage: tools/sass.sh BUILD_DIR SOURCE.cu OUT.sass"
build=$(cd "${1:?$usage}" && pwd)
source=$(realpath "${2:?$usage}")
out=${3:?$usage}

# The CUDA target that compiles SOURCE: its flags.make (with CUDA_FLAGS) sits beside the build.make
# that names it (the emulator's targets compile the same source as C++).
target_dir=
for make_file in $(grep -l -F "$source" /dev/null $(find "$build" -name build.make -path '*CMakeFiles*') 2>/dev/null); do
  if grep -q '^CUDA_FLAGS = ' "$(dirname "$make_file")/flags.make"; then target_dir=$(dirname "$make_file"); break; fi
done
[ -n "$target_dir" ] || { echo "sass.sh: no CUDA target of $build compiles $source" >&2; exit 2; }
flag() { sed -n "s/^$1 = //p" "$target_dir/flags.make"; }
nvcc=$(sed -n 's/^set(CMAKE_CUDA_COMPILER "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | head -1)
[ -x "$nvcc" ] || { echo "sass.sh: $build has no CUDA compiler (configure with -DSY_WITH_CUDA=ON)" >&2; exit 2; }
# A cubin holds one architecture: the first real one the target builds.
cuda_flags=$(flag CUDA_FLAGS)
arch=$(grep -o 'sm_[0-9]*[a-z]*' <<<"$cuda_flags" | head -1)
[ -n "$arch" ] || { echo "sass.sh: the target builds no sm_ code" >&2; exit 2; }
cuda_flags=$(sed 's/--generate-code=[^ ]*//g' <<<"$cuda_flags")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The include list is a response file named relative to the target's build folder.
(cd "$(dirname "$(dirname "$target_dir")")" &&
  eval "\"$nvcc\" $(flag CUDA_DEFINES) $(flag CUDA_INCLUDES) $cuda_flags -arch=$arch -cubin \"$source\" -o \"$work/code.cubin\"")

if command -v nvdisasm >/dev/null; then
  nvdisasm -c "$work/code.cubin" > "$out"
  exit 0
fi
cache=${SY_NVDISASM_CACHE:-$HOME/.cache/switchyard/nvdisasm}
disasm="$cache/usr/bin/nvdisasm"
if [ ! -x "$disasm" ]; then
  echo "sass.sh: fetching Debian's nvidia-cuda-toolkit (non-free) for its nvdisasm into $cache" >&2
  mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/deb"
  echo "deb http://deb.debian.org/debian bookworm non-free" > "$cache/apt/sources.list"
  apt_opts=(-o "Dir::Etc::sourcelist=$cache/apt/sources.list" -o "Dir::Etc::sourceparts=-"
            -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache"
            -o "APT::Sandbox::User=$(id -un)")
  apt-get "${apt_opts[@]}" update >/dev/null
  (cd "$cache/deb" && apt-get "${apt_opts[@]}" download nvidia-cuda-toolkit >/dev/null)
  dpkg -x "$cache"/deb/nvidia-cuda-toolkit_*.deb "$cache"
fi
python3 - "$work/code.cubin" <<'EOF'
import struct, sys
path = sys.argv[1]
elf = bytearray(open(path, 'rb').read())
flags = struct.unpack_from('<I', elf, 48)[0]
if elf[8] >= 8:  # CUDA 12.8+ header: the SM number in bits 8-15
    sm = (flags >> 8) & 0xFF
    elf[8] = 7
    struct.pack_into('<I', elf, 48, sm | 0x100 | 0x400 | sm << 16)
open(path, 'wb').write(elf)
EOF
"$disasm" -c "$work/code.cubin" > "$out"
