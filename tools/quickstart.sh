#!/usr/bin/env bash
# Quick start for Debian 12: installs what is missing, builds, and either runs the main job on the
# embedded default config (`run`) or runs the whole test suite (`test`).
#   bash tools/quickstart.sh run     # build + switchyard run configs/default.yaml
#   bash tools/quickstart.sh test    # build + ctest
# BUILD_DIR (default: build) selects the build folder; JOBS the parallel build jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

# python3 runs the ABI 1.0 compatibility suite and the performance-table test.
packages=(build-essential cmake pkg-config libyaml-dev libinih-dev check libopenblas-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "quickstart: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B "$build" ${CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"

case "$mode" in
  run)
    exec "$build/bin/switchyard" run configs/default.yaml ;;
  test)
    exec ctest --test-dir "$build" --output-on-failure -j "$jobs" ;;
  *)
    echo "usage: $0 run|test" >&2; exit 2 ;;
esac
