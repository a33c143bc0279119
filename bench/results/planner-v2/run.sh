#!/bin/bash
# Planner medians: version 1's bench_planner against the current one,
# alternated, each under a real-time priority (root).  As run for the CSVs
# beside this script:
#   run.sh V1_BENCH_PLANNER CURRENT_BENCH_PLANNER OUT_DIR
# (V1: bench/bench_planner built at git cbd3bc0.)
set -eu
V1="chrt -f 10 $1"
CUR="chrt -f 10 $2"
out=$3
for i in 1 2 3; do
  uptime >> "$out/load.txt"
  $V1 --reps 200 --max-axes 4 --csv "$out/v1_4_$i.csv" > /dev/null
  $CUR --reps 200 --max-axes 4 --even --objective bytes --csv "$out/b_4_$i.csv" > /dev/null
  $CUR --reps 200 --max-axes 4 --even --csv "$out/t_4_$i.csv" > /dev/null
done
for i in 1 2; do
  uptime >> "$out/load.txt"
  $V1 --reps 50 --max-axes 6 --csv "$out/v1_6_$i.csv" > /dev/null
  $CUR --reps 50 --max-axes 6 --even --objective bytes --csv "$out/b_6_$i.csv" > /dev/null
  $CUR --reps 50 --max-axes 6 --even --csv "$out/t_6_$i.csv" > /dev/null
done
uptime >> "$out/load.txt"
