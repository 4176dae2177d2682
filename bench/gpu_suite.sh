#!/usr/bin/env bash
# The GPU checks of one backend, in one go, on a machine with the GPU: conformance of every plugin
# against the cpu reference, the tiny model on the GPU against the cpu run, gpt-oss-120b on the GPU
# with weights generated on the device, and the memory / race checkers on the quick conformance.
#   bench/gpu_suite.sh BUILD_DIR OUT_DIR [BACKEND]     (BACKEND defaults to cuda)
# Each step's output goes to OUT_DIR; the script goes on after a failing step and exits non-zero at
# the end if any step failed.
set -uo pipefail
build=${1:?usage: gpu_suite.sh BUILD_DIR OUT_DIR [BACKEND]}
out=${2:?usage: gpu_suite.sh BUILD_DIR OUT_DIR [BACKEND]}
backend=${3:-cuda}
sy="$build/bin/switchyard"
mkdir -p "$out"
. "$(dirname "$0")/step.sh"
tiny_workload=(--set workload.batch=2 --set workload.input_len=40 --set workload.output_len=16
               --set workload.prefill_chunk=16 --set workload.warmup=0 --set workload.repeat=1)
step conformance "$sy" conformance --backend "$backend" --json "$out/conformance-$backend.json"
step tiny-cpu "$sy" run configs/default.yaml "${tiny_workload[@]}" --json "$out/tiny-cpu.json"
step tiny-gpu "$sy" run configs/default.yaml --set backend="$backend" "${tiny_workload[@]}" --json "$out/tiny-$backend.json"
step tiny-tokens-equal sh -c "grep token_checksum '$out/tiny-cpu.json'; grep token_checksum '$out/tiny-$backend.json'; \
  [ \"\$(grep token_checksum '$out/tiny-cpu.json')\" = \"\$(grep token_checksum '$out/tiny-$backend.json')\" ]"
for layout in nhd vectorized_5d; do
  step "gpt-oss-120b-$layout" "$sy" run "configs/gpt-oss-120b-$layout.yaml" --set backend="$backend" \
    --set workload.batch=4 --set workload.input_len=256 --set workload.output_len=8 --set workload.warmup=0 \
    --set workload.repeat=1 --json "$out/gpt-oss-120b-$layout-$backend.json"
done
if command -v compute-sanitizer >/dev/null; then
  step memcheck compute-sanitizer --tool memcheck --report-api-errors no "$sy" conformance --backend "$backend" --quick
  step racecheck compute-sanitizer --tool racecheck --report-api-errors no "$sy" conformance --backend "$backend" --quick
fi
exit $failed
