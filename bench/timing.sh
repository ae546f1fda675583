#!/usr/bin/env bash
# The clock's promises (tests/test_timing.cpp, ctest label `timing`): Ctrl-C within a second,
# the estimate within the first seconds, refusals at once, progress lines off a terminal at most
# every 10 s, checkpoints at their interval. Not part of CI (their outcome depends on the
# machine's load); run on a quiet machine after building the cpu preset.
#   bench/timing.sh [PRESET]      (default: cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-cpu}
cmake --build --preset "$preset" --target test_timing demo
ctest --test-dir "build/$preset" -L timing --output-on-failure
