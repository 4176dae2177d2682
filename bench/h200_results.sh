#!/usr/bin/env bash
# Every measurement behind docs/performance.md's results table, in one go on a machine with the GPU:
# the kernel bench, the PyTorch peers, the gpt-oss-120b decode step (nhd, vectorized_5d, nhd with
# fuse_pad on; nhd with three q/k/v linears and nhd with f32 activations beside them; each without
# and with per-op events), and the correctness checks of the kernels they time (check_kv_attn,
# check_moe_norm_linear). Outputs are named as bench/results/ names them, for the date of the run:
#   bench/h200_results.sh BUILD_DIR OUT_DIR [GPU_TAG] [PART]     (GPU_TAG defaults to h200)
# PART runs one third of it, for machines that limit a command's time: kernels (the kernel bench and
# the peers), step (the decode step's variants) or checks; all (the default) runs every part.
# Then, on any machine:
#   bench/perf_table.py --kernels OUT/kernels-cuda-TAG-DATE.json --peers OUT/torch_peers-TAG-DATE.json \
#     --step OUT/run-...-nhd-... --step OUT/run-...-vectorized_5d-... --step OUT/run-...-nhd-fuse_pad-...
# A failing step is reported and the script goes on; the exit status is non-zero if any step failed.
set -uo pipefail
usage="usage: h200_results.sh BUILD_DIR OUT_DIR [GPU_TAG] [kernels|step|checks|all]"
build=${1:?$usage}
out=${2:?$usage}
tag=${3:-h200}
part=${4:-all}
case $part in kernels|step|checks|all) ;; *) echo "$usage" >&2; exit 2 ;; esac
runs() { [ "$part" = all ] || [ "$part" = "$1" ]; }
day=$(date +%F)
here=$(cd "$(dirname "$0")" && pwd)
sy="$build/bin/switchyard"
mkdir -p "$out"
. "$(dirname "$0")/step.sh"
if runs kernels; then
  step "kernels-cuda-$tag-$day" "$sy" bench --backend cuda --json "$out/kernels-cuda-$tag-$day.json"
  step "torch_peers-$tag-$day" python3 "$here/peers/torch_peers.py" --output "$out/torch_peers-$tag-$day.json"
fi
step_config="$here/../configs/gpt-oss-120b-decode-b128-ctx8192.yaml"
# variant: name, then its --set overrides of the config.
variants=("nhd" "vectorized_5d kv_cache.layout=vectorized_5d" "nhd-fuse_pad norm.fuse_pad=on"
          "nhd-qkv3 linear.fuse_qkv=off" "nhd-f32act model.dtype=f32")
runs step || variants=()
# Every variant without per-op events first: the target rows take those runs.
for per_op in false true; do
  for entry in "${variants[@]}"; do
    read -r variant overrides <<<"$entry"
    sets=()
    for kv in $overrides; do sets+=(--set "$kv"); done
    suffix=; [ "$per_op" = true ] && suffix=-per_op
    name="run-gpt-oss-120b-decode-b128-ctx8192-$variant$suffix-cuda-$tag-$day"
    step "$name" "$sy" run "$step_config" --set backend=cuda "${sets[@]}" --set report.per_op="$per_op" \
      --json "$out/$name.json"
  done
done
if runs checks; then
  step "check_kv_attn-$tag-$day" "$build/tests/check_kv_attn_cuda"
  step "check_moe_norm_linear-$tag-$day" "$build/tests/check_moe_norm_linear_cuda"
fi
exit $failed
