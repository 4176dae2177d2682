#!/usr/bin/env bash
# libFuzzer targets built with clang (AddressSanitizer + UndefinedBehaviorSanitizer + leak checks),
# each run for 60 s; any crash, leak or sanitizer report fails CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/fuzz/run_fuzzers.sh 60
