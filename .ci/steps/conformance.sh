#!/usr/bin/env bash
# The conformance suite on the cpu backend against its own reference plugins: a check of the
# harness (every case must pass, bit for bit or at the tolerances of docs/conformance.md). Runs
# after the test suites, with the main build in ./build; the quick shape list keeps it to seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT
build/bin/switchyard conformance --backend cpu --quick --json "$report/conformance-cpu.json"
