#!/usr/bin/env bash
# A Release build (-O3) of the cpu targets, compile only: the optimizer's deeper analysis finds
# warnings (format truncation, array bounds) that the RelWithDebInfo build of the test job does
# not, and warnings are errors for whoever builds Release.
set -euo pipefail
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSY_WITH_CUDA=OFF -DSY_WITH_HIP=OFF >/dev/null
cmake --build build-release -j 2
