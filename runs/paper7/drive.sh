#!/usr/bin/env bash
# The cruise-telemetry lineage (shipping rule v6, docs/runs/paper.yaml): the 8-camera recipe of runs/paper6/drive2.sh
# (its schedule and every run's settings) on the shipped student's own data and world rules (runs/data8, the defaults),
# with data.cruise_telemetry=0.5 for every stage and its equal-compute AR alike. Needs runs/paper2/tiny-ar (the
# converged AR, checkpoints/wamdiff2-tiny-ar of commit cb0e849) and runs/data8/synth-train (runs/cruise/data.sh).
# Resumable: start it again.
set -euo pipefail
cd /work/main
export RUNS=runs/paper7 DATA=runs/data8 DATA_CAMERAS=all AR_START=tiny-ar-restyled
export AR_EQUAL_STEPS=3800 CONVERGED_FROM=runs/paper2/tiny-ar
export OVERRIDES="data.plan_style=fixed1 data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0] data.camera_subsets=keep_first data.cruise_telemetry=0.5"
R=tools/.recipe_paper7.sh
[ -x "$R" ] || cp tools/paper_recipe.sh "$R"
done_run() { [ -f "$RUNS/$1/train_summary.json" ]; }
phase() {  # phase NAME LAST_RUN
  if done_run "$2"; then echo "skip $1 ($2 done)"; else echo "$(date +%T) $1"; $R "$1" >> "$RUNS/log_$1.txt" 2>&1; fi
}
bash runs/cruise/data.sh
$R converged
phase restyle tiny-ar-restyled
phase ar-equal-compute tiny-ar-equal &
AR=$!
phase stage1 tiny-b32
phase stage2 tiny-b32-s2 &
S2=$!
phase teacher deep-b32
wait $S2
phase stage3 tiny-b32-s3
echo "STUDENT DONE $(date +%T)"
wait $AR
echo ALLDONE "$(date +%T)"
