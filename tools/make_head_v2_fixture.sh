#!/bin/sh
# Per-seed results of `demo --table attention-sweep` on a fixed set of configurations, as
# tests/data/head_v2/*.csv. Made once with the version-2 head (one input, products as chains of
# separately rounded multiply and add), which tests/test_attention_sweep.cpp's
# AttentionSweep.OneInputEqualsTheVersion2HeadWhereNotRoundingSensitive compares the fused
# multiply-add head against. Usage: tools/make_head_v2_fixture.sh DEMO OUTDIR
set -eu
demo=$1
out=$2
run() {
  name=$1
  shift
  "$demo" --table attention-sweep -q --seeds 0:16 "$@" --per-seed "$out/$name.csv" --force >/dev/null
  printf '%s\n' "$*" > "$out/$name.args"
}
run lesson-qkv --task lesson
run lesson-qk --task lesson --train qk
run lesson-numeric --task lesson --words 3 --d-model 3 --d-k 3 --grad numeric --steps 200
run previous-causal --task previous --words 5 --d-model 5 --d-k 5 --causal --steps 1500
run previous-qk-heads --task previous --words 6 --d-model 6 --d-k 8 --heads 2 --train qk --causal --scale none --steps 600
run reverse-qkvo-adam --task reverse --words 4 --d-model 4 --d-k 4 --d-v 6 --train qkvo --optimizer adam --lr 0.05 --steps 300
run random-8x16 --task random --words 8 --d-model 16 --d-k 16 --steps 300
run random-heads-causal-simultaneous --task random --words 4 --d-model 6 --d-k 4 --d-v 6 --heads 2 --causal --scale 0.6 --schedule simultaneous --lr 0.05 --steps 300
run random-adam-qkvo-3-heads --task random --task-seed 3 --words 5 --d-model 4 --d-k 6 --d-v 6 --heads 3 --train qkvo --optimizer adam --lr 0.02 --steps 200
run random-qk-none --task random --words 3 --d-model 5 --d-k 2 --train qk --scale none --lr 0.05 --steps 200
