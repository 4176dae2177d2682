#!/usr/bin/env bash
# A/B of one plugin library on a machine with the GPU: the build's own library (A) against another
# build of the same library (B, e.g. from the commit before a kernel change), swapped in place and
# timed in alternation, so that both sides see the same machine, clocks and inputs.
#   bench/library_ab.sh BUILD_DIR B_LIBRARY OUT_DIR BENCH_CASE [ROUNDS] [CHECK]
# B_LIBRARY replaces the library of the same file name under BUILD_DIR/lib/switchyard/plugins (its
# cuda/ folder included) for side B. Each round runs `switchyard bench --backend cuda --case
# BENCH_CASE` with A, then with B (OUT_DIR/bench-{a,b}-ROUND.{txt,json}); CHECK, if given, is a
# program under BUILD_DIR/tests run first with side A (e.g. check_kv_attn_cuda). The build's library
# is put back at the end, and on any exit.
set -uo pipefail
build=${1:?usage: library_ab.sh BUILD_DIR B_LIBRARY OUT_DIR BENCH_CASE [ROUNDS] [CHECK]}
b_lib=${2:?usage: library_ab.sh BUILD_DIR B_LIBRARY OUT_DIR BENCH_CASE [ROUNDS] [CHECK]}
out=${3:?usage: library_ab.sh BUILD_DIR B_LIBRARY OUT_DIR BENCH_CASE [ROUNDS] [CHECK]}
bench_case=${4:?usage: library_ab.sh BUILD_DIR B_LIBRARY OUT_DIR BENCH_CASE [ROUNDS] [CHECK]}
rounds=${5:-2}
check=${6:-}
name=$(basename "$b_lib")
target=$(find "$build/lib/switchyard/plugins" -name "$name" -type f | head -n 1)
[ -n "$target" ] || { echo "library_ab: no $name under $build/lib/switchyard/plugins (B_LIBRARY must keep the" \
  "plugin library's own file name, e.g. a copy in another folder: old/libsy_attn_paged_cuda_device.so)" >&2; exit 2; }
mkdir -p "$out"
a_copy="$out/.a-$name"
cp "$target" "$a_copy"
trap 'cp "$a_copy" "$target"; rm -f "$a_copy"' EXIT
. "$(dirname "$0")/step.sh"
[ -n "$check" ] && step "check-a" "$build/tests/$check"
for round in $(seq 1 "$rounds"); do
  for side in a b; do
    if [ "$side" = a ]; then cp "$a_copy" "$target"; else cp "$b_lib" "$target"; fi
    step "bench-$side-$round" "$build/bin/switchyard" bench --backend cuda --case "$bench_case" \
      --json "$out/bench-$side-$round.json"
  done
done
exit $failed
