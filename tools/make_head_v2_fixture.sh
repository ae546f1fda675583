#!/bin/sh
# Per-seed results of `demo --table attention-sweep` on a fixed set of configurations, 10 steps
# each, as tests/data/head_v2/*.csv (the arguments beside each in *.args). Made once with the
# version-2 head (one input, products as chains of separately rounded multiplies and adds),
# which tests/test_attention_sweep.cpp's AttentionSweep.OneInputEqualsTheVersion2Head compares
# the fused multiply-add head against. Short runs: over hundreds of steps a training amplifies
# the products' rounding differences (by 1e4 and more where it is slow to converge, to O(1)
# where it is chaotic), so that longer runs compare the rounding of the dynamics, not the math.
# Usage: tools/make_head_v2_fixture.sh DEMO OUTDIR
set -eu
demo=$1
out=$2
run() {
  name=$1
  shift
  "$demo" --table attention-sweep -q --seeds 0:32 --steps 10 "$@" --per-seed "$out/$name.csv" \
    --force >/dev/null
  printf '%s\n' "--seeds 0:32 --steps 10 $*" > "$out/$name.args"
}
run lesson-qkv --task lesson
run lesson-qk --task lesson --train qk
run lesson-numeric --task lesson --words 3 --d-model 3 --d-k 3 --grad numeric
run previous-causal --task previous --words 5 --d-model 5 --d-k 5 --causal
run previous-qk-heads --task previous --words 6 --d-model 6 --d-k 8 --heads 2 --train qk --causal --scale none
run reverse-qkvo-adam --task reverse --words 4 --d-model 4 --d-k 4 --d-v 6 --train qkvo --optimizer adam --lr 0.05
run random-8x16 --task random --words 8 --d-model 16 --d-k 16
run random-heads-causal-simultaneous --task random --words 4 --d-model 6 --d-k 4 --d-v 6 --heads 2 --causal --scale 0.6 --schedule simultaneous --lr 0.05
run random-adam-qkvo-3-heads --task random --task-seed 3 --words 5 --d-model 4 --d-k 6 --d-v 6 --heads 3 --train qkvo --optimizer adam --lr 0.02
run random-qk-none --task random --words 3 --d-model 5 --d-k 2 --train qk --scale none --lr 0.05
