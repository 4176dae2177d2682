#!/usr/bin/env bash
# Builds the fuzzers with clang and runs each for SECONDS (default 60): the config loaders on a corpus
# seeded from configs/, the safetensors reader on files its seed writer makes. Exits non-zero on a crash, leak or sanitizer report; the reproducer is left in OUT.
#   bash tests/fuzz/run_fuzzers.sh [SECONDS]
# BUILD_DIR (default build-fuzz) and OUT (default $BUILD_DIR/fuzz-out) can be overridden.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
build=${BUILD_DIR:-build-fuzz}
out=${OUT:-$build/fuzz-out}
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DSY_BUILD_FUZZERS=ON -DSY_BUILD_TESTS=ON \
  -DSY_WITH_CUDA=OFF -DSY_WITH_HIP=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target fuzz_config_yaml fuzz_config_ini fuzz_safetensors fuzz_safetensors_seeds
for syntax in yaml ini; do
  corpus="$out/corpus-$syntax"
  mkdir -p "$corpus" "$out/artifacts-$syntax"
  for f in configs/*."$syntax"; do cp "$f" "$corpus/"; done
  # JSON is YAML too: show --format json output belongs in the YAML corpus.
  [ "$syntax" = yaml ] && printf '{"backend": "cpu", "kv_cache": {"layout": "vectorized_5d", "k_scale": "unit"}}\n' >"$corpus/show.json"
  echo "fuzzing the $syntax loader for ${seconds}s"
  "$build/fuzz/fuzz_config_$syntax" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$out/artifacts-$syntax/" "$corpus" 2>&1 | tail -n 25
done
corpus="$out/corpus-safetensors"
mkdir -p "$corpus" "$out/artifacts-safetensors"
"$build/fuzz/fuzz_safetensors_seeds" "$corpus"
echo "fuzzing the safetensors reader for ${seconds}s"
"$build/fuzz/fuzz_safetensors" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$out/artifacts-safetensors/" "$corpus" 2>&1 | tail -n 25
