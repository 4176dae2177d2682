#!/usr/bin/env bash
# The A/B HTML report in a real browser: installs Debian's chromium when it is missing, then runs the
# ab_html suite of the main build (BUILD_DIR, default build), which renders the report headless,
# checks every table and chart in the rendered DOM and writes a screenshot to
# $BUILD_DIR/ab-report.png. In the main test run the suite is skipped where chromium is absent;
# here a skip is a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
if ! command -v chromium >/dev/null; then
  echo "ab_html: installing chromium"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq chromium >/dev/null
fi
cmake --build "$build" -j "${JOBS:-2}" --target ab_html
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ctest --test-dir "$build" --output-on-failure -R '^ab_html$' 2>&1 | tee "$log"
if grep -q "Skipped" "$log" || ! grep -q "100% tests passed" "$log"; then
  echo "ab_html: the suite did not run and pass" >&2
  exit 1
fi
echo "ab_html: screenshot at $build/ab-report.png"
