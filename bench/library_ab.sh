#!/usr/bin/env bash
# A/B of plugin libraries on a machine with the GPU: the build's own libraries (A) against another
# build of them (B, e.g. from the commit before a kernel change), swapped in place and timed in
# alternation, so that both sides see the same machine, clocks and inputs.
#   bench/library_ab.sh BUILD_DIR B_LIBRARY OUT_DIR BENCH_CASE [ROUNDS] [CHECK]
# B_LIBRARY is one library or a folder of them; each replaces the library of the same file name
# under BUILD_DIR/lib/switchyard/plugins (its cuda/ folder included) for side B. A plugin is
# usually three libraries (host, cuda host, cuda device: libsy_moe_mxfp4_interleave.so,
# libsy_moe_mxfp4_interleave_cuda.so, cuda/libsy_moe_mxfp4_interleave_cuda_device.so), and both
# sides must share the plugin ABI. Each round runs `switchyard bench --backend cuda --case
# BENCH_CASE` with A, then with B (OUT_DIR/bench-{a,b}-ROUND.{txt,json}); with AB_RUN_CONFIG set
# to a run config, each side then also runs `switchyard run AB_RUN_CONFIG --set backend=cuda --set
# report.per_op=false AB_RUN_SETS...` (OUT_DIR/run-{a,b}-ROUND.{txt,json}; AB_RUN_SETS holds more
# --set KEY=VALUE words, e.g. "--set model.dtype=f32"). CHECK, if given, is a program under
# BUILD_DIR/tests run first with side A (e.g. check_kv_attn_cuda). The build's libraries are put
# back at the end, and on any exit. Last, bench/ab_summary.sh prints each case's median over the
# rounds of each side, their ranges and B / A (also OUT_DIR/summary.txt).
set -uo pipefail
usage="usage: library_ab.sh BUILD_DIR B_LIBRARY|B_FOLDER OUT_DIR BENCH_CASE [ROUNDS] [CHECK]"
build=${1:?$usage}
b_src=${2:?$usage}
out=${3:?$usage}
bench_case=${4:?$usage}
rounds=${5:-2}
check=${6:-}
if [ -d "$b_src" ]; then
  mapfile -t b_libs < <(find "$b_src" -maxdepth 1 -name '*.so' -type f | sort)
else
  b_libs=("$b_src")
fi
[ ${#b_libs[@]} -gt 0 ] || { echo "library_ab: no .so in $b_src" >&2; exit 2; }
targets=()
for lib in "${b_libs[@]}"; do
  name=$(basename "$lib")
  target=$(find "$build/lib/switchyard/plugins" -name "$name" -type f | head -n 1)
  [ -n "$target" ] || { echo "library_ab: no $name under $build/lib/switchyard/plugins (side B's libraries must" \
    "keep the plugin libraries' own file names, e.g. copies in another folder: old/libsy_attn_paged_cuda_device.so)" >&2
    exit 2; }
  targets+=("$target")
done
mkdir -p "$out/.a"
for i in "${!targets[@]}"; do cp "${targets[$i]}" "$out/.a/$(basename "${targets[$i]}")"; done
put() { # side: a or b
  local i
  for i in "${!targets[@]}"; do
    if [ "$1" = a ]; then cp "$out/.a/$(basename "${targets[$i]}")" "${targets[$i]}"; else cp "${b_libs[$i]}" "${targets[$i]}"; fi
  done
}
trap 'put a; rm -rf "$out/.a"' EXIT
. "$(dirname "$0")/step.sh"
[ -n "$check" ] && step "check-a" "$build/tests/$check"
read -r -a run_sets <<< "${AB_RUN_SETS:-}"
for round in $(seq 1 "$rounds"); do
  for side in a b; do
    put "$side"
    step "bench-$side-$round" "$build/bin/switchyard" bench --backend cuda --case "$bench_case" \
      --json "$out/bench-$side-$round.json"
    if [ -n "${AB_RUN_CONFIG:-}" ]; then
      step "run-$side-$round" "$build/bin/switchyard" run "$AB_RUN_CONFIG" --set backend=cuda \
        --set report.per_op=false "${run_sets[@]}" --json "$out/run-$side-$round.json"
    fi
  done
done
bash "$(dirname "$0")/ab_summary.sh" "$out" | tee "$out/summary.txt" || failed=1
exit $failed
