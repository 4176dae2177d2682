#!/usr/bin/env bash
# The installed SDK, as a third party sees it. Installs the build tree (BUILD_DIR, default build,
# built by the CI's earlier step) to a temporary prefix and checks the layout, the run path and
# that no build or install path is baked in; moves the prefix; then, from copies of the examples
# outside the source tree and against the moved prefix alone, builds the third-party plugin (CMake
# and pkg-config), loads it with --plugin-path, selects it in a config (config check, run), runs the
# conformance suite on it, and builds the embedding example and runs it under valgrind memcheck.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
build=$(cd "${BUILD_DIR:-build}" && pwd)
work=$(mktemp -d /tmp/switchyard-sdk.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "sdk: $*"; }
fail() { echo "sdk: FAILED: $*" >&2; exit 1; }

libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
libdir=${libdir:-lib}

say "install $build to $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"

say "layout"
for f in bin/switchyard include/switchyard/{abi,abi_v1_layout,backend,caps,plugin,status,switchyard,tensor}.h \
         "$libdir"/libswitchyard.so "$libdir"/pkgconfig/switchyard.pc \
         "$libdir"/cmake/Switchyard/{SwitchyardConfig,SwitchyardConfigVersion,SwitchyardTargets}.cmake; do
  [ -e "$work/prefix/$f" ] || fail "$f is not installed"
done
# Every backend and plugin of the build tree, and nothing else, in the installed plugins folder:
# the GPU modules' device libraries in their vendor subfolders (cuda/, hip/) included, since a
# front whose device library is missing fails only at init, on a machine with that GPU.
plugin_files() { (cd "$1" && find . -name '*.so' | sort); }
diff <(plugin_files "$build/lib/switchyard/plugins") <(plugin_files "$work/prefix/$libdir/switchyard/plugins") ||
  fail "installed plugins differ from the build tree's"
while IFS= read -r -d '' d; do
  [ "$(stat -c %a "$d")" = 755 ] || fail "${d#$work/prefix/} is mode $(stat -c %a "$d"), not 755: the loader refuses it"
done < <(find "$work/prefix/$libdir/switchyard/plugins" -type d -print0)

say "run path of bin/switchyard"
readelf -d "$work/prefix/bin/switchyard" | grep -E 'R(UN)?PATH' | grep -qF "[\$ORIGIN/../$libdir]" ||
  fail "bin/switchyard does not find libswitchyard through \$ORIGIN/../$libdir: $(readelf -d "$work/prefix/bin/switchyard" | grep PATH)"

say "no build, source or install path baked in"
# Debug information records the source files it was built from, which is what it is for; every
# other byte of every installed file must be free of the three paths.
while IFS= read -r -d '' f; do
  check=$f
  if file -b "$f" | grep -q '^ELF'; then
    check=$work/stripped
    objcopy --strip-debug "$f" "$check"
  fi
  for p in "$src" "$build" "$work/prefix"; do
    ! grep -qF "$p" "$check" || fail "${f#$work/prefix/} contains $p"
  done
done < <(find "$work/prefix" -type f -print0)

say "move the prefix"
mv "$work/prefix" "$work/moved"
P=$work/moved
sy=$P/bin/switchyard
"$sy" plugins >"$work/plugins-default.txt" || fail "switchyard plugins from the moved prefix"
grep -qxF "  $P/$libdir/switchyard/plugins" "$work/plugins-default.txt" ||
  fail "the moved engine does not search its own plugins folder: $(cat "$work/plugins-default.txt")"
grep -qE '^  cpu .*usable' "$work/plugins-default.txt" || fail "the moved engine does not load its cpu backend"

say "third-party plugin with find_package(Switchyard), against $P alone"
cp -r "$src/examples/third_party_plugin" "$work/plugin"
cmake -S "$work/plugin" -B "$work/plugin/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >/dev/null
cmake --build "$work/plugin/build" >/dev/null
grep -qxF "Switchyard_DIR:PATH=$P/$libdir/cmake/Switchyard" "$work/plugin/build/CMakeCache.txt" ||
  fail "find_package(Switchyard) did not use the moved prefix"
! grep -qF "$src" "$work/plugin/build/compile_commands.json" || fail "the plugin build reached into $src"
nm -D --defined-only "$work/plugin/build/libnorm_example.so" | awk '{print $3}' | grep -qx sy_plugin_entry ||
  fail "libnorm_example.so does not export sy_plugin_entry"
[ "$(nm -D --defined-only "$work/plugin/build/libnorm_example.so" | wc -l)" -eq 1 ] ||
  fail "libnorm_example.so exports more than sy_plugin_entry"

say "the same plugin with pkg-config and make"
cp -r "$src/examples/third_party_plugin" "$work/plugin-make"
PKG_CONFIG_PATH=$P/$libdir/pkgconfig make -C "$work/plugin-make" >"$work/make.log"
! grep -qF "$src" "$work/make.log" || fail "the pkg-config build reached into $src"

for dir in "$work/plugin/build" "$work/plugin-make"; do
  say "switchyard plugins --plugin-path ${dir#$work/}"
  "$sy" plugins --plugin-path "$dir" >"$work/plugins.txt"
  grep -qE '^  norm +norm_example +cpu +1\.0\.0 +loaded$' "$work/plugins.txt" ||
    fail "norm_example is not listed as loaded from $dir: $(cat "$work/plugins.txt")"
done
DIR=$work/plugin/build

say "select it in a config: config check, run"
# configs/default.yaml with norm.plugin naming the example, f32 activations and a short workload.
sed -e 's/^norm:$/norm:\n  plugin: norm_example/' -e 's/^model:$/model:\n  dtype: f32/' \
    -e 's/^\(  input_len:\).*/\1 24/' -e 's/^\(  output_len:\).*/\1 6/' -e 's/^\(  prefill_chunk:\).*/\1 16/' \
    -e 's/^\(  warmup:\).*/\1 0/' -e 's/^\(  repeat:\).*/\1 1/' "$src/configs/default.yaml" >"$work/example.yaml"
grep -q '^  plugin: norm_example$' "$work/example.yaml" || fail "could not write the example config"
"$sy" config check "$work/example.yaml" --plugin-path "$DIR" || fail "config check of the example config"
! "$sy" config check "$work/example.yaml" >/dev/null 2>&1 || fail "config check passed without the plugin path"
"$sy" run "$work/example.yaml" --plugin-path "$DIR" --quiet >"$work/run.txt" || fail "switchyard run: $(cat "$work/run.txt")"
grep -qE '^  norm +norm_example 1\.0\.0$' "$work/run.txt" || fail "the run did not compose norm_example: $(cat "$work/run.txt")"
grep -q 'token checksum' "$work/run.txt" || fail "the run printed no results"

say "switchyard conformance --plugin norm_example"
"$sy" conformance --plugin norm_example --plugin-path "$DIR" >"$work/conformance.txt" ||
  { cat "$work/conformance.txt"; fail "conformance of norm_example"; }
cat "$work/conformance.txt"
# A run that passes nothing (every case not supported) would prove nothing about the plugin.
grep -qE '^[1-9][0-9]* passed, 0 failed' "$work/conformance.txt" || fail "conformance passed no case of norm_example"

say "embedding example with find_package(Switchyard) -> Switchyard::switchyard"
cp -r "$src/examples/embed" "$work/embed"
cmake -S "$work/embed" -B "$work/embed/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >/dev/null
cmake --build "$work/embed/build" >/dev/null
! grep -qF "$src" "$work/embed/build/compile_commands.json" || fail "the embedding build reached into $src"
embed=$work/embed/build/embed
"$embed" >"$work/embed.txt" || fail "embed: $(cat "$work/embed.txt")"
for want in '^composition \(backend cpu' '^workload: TTFT' '^steps: prompt of'; do
  grep -qE "$want" "$work/embed.txt" || fail "embed printed no '$want': $(cat "$work/embed.txt")"
done
"$embed" "$work/example.yaml" "norm.plugin=auto" >/dev/null || fail "embed with a config file and an override"
"$embed" "$work/example.yaml" "norm.plugin=auto" "workload.context=synthetic" >"$work/embed-synthetic.txt" ||
  fail "embed with a synthetic context: $(cat "$work/embed-synthetic.txt")"
grep -q '^workload: TTFT not measured' "$work/embed-synthetic.txt" ||
  fail "embed with a synthetic context printed a TTFT: $(cat "$work/embed-synthetic.txt")"

say "embedding example under valgrind memcheck"
valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 \
  --suppressions="$src/tests/sdk/valgrind.supp" "$embed" >/dev/null 2>"$work/valgrind.txt" ||
  { cat "$work/valgrind.txt" >&2; fail "valgrind memcheck reports errors or leaks"; }
grep -E 'ERROR SUMMARY|definitely lost|in use at exit' "$work/valgrind.txt" | sed 's/^==[0-9]*== /sdk: valgrind: /'

say "done"
