#!/usr/bin/env bash
# scaling.sh: how much faster two MPI ranks finish a bulk table than one (ideally 2x,
# given two free cores). Each rank gets one thread (--threads 1), so -np 2 uses two
# cores and -np 1 one. Whole-process wall clock (mpirun included), median of 3 alternating runs;
# the two outputs are also compared byte for byte. Not a timed test: the machine may be shared.
#
#   bench/scaling.sh [DEMO]      (default build/cpu/demo; needs mpirun, a build with MPI)
set -euo pipefail
demo=${1:-build/cpu/demo}
mpirun=(mpirun --allow-run-as-root --oversubscribe)
cases=(
  "dk-std|--table dk-std --rng philox --d-k 512 --samples 2e6|normals|2e9"
  "training-sweep|--table training-sweep --seeds 0:20000 --grad analytic|model-steps|1.2e8"
)
now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
echo "| table | work | -np 1 --threads 1 | -np 2 --threads 1 | speed-up | same bytes |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  IFS='|' read -r name args unit work <<<"$c"
  one=() two=()
  for _ in 1 2 3; do
    t0=$(now); "${mpirun[@]}" -np 1 "$demo" $args --threads 1 --format csv -q >/tmp/scaling-1.csv
    t1=$(now); "${mpirun[@]}" -np 2 "$demo" $args --threads 1 --format csv -q >/tmp/scaling-2.csv
    t2=$(now)
    one+=("$(awk "BEGIN{print $t1 - $t0}")") two+=("$(awk "BEGIN{print $t2 - $t1}")")
  done
  m1=$(median "${one[@]}") m2=$(median "${two[@]}")
  same=$(cmp -s /tmp/scaling-1.csv /tmp/scaling-2.csv && echo yes || echo NO)
  printf '| %s | %s %s | %.2f s | %.2f s | %.2fx | %s |\n' "$name" "$work" "$unit" "$m1" "$m2" \
    "$(awk "BEGIN{print $m1 / $m2}")" "$same"
done
rm -f /tmp/scaling-1.csv /tmp/scaling-2.csv
