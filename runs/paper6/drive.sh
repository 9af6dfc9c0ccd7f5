#!/usr/bin/env bash
# World-rules lineage (shipping rule v5, docs/runs/paper.yaml): the 8-camera recipe on data written with
# COMMAND_HORIZON=4 LAMP_VISOR=35. Resumable: a phase whose last run has its train_summary.json is skipped; a killed
# run resumes from its checkpoint (start this script again).
set -euo pipefail
cd /work/main
export RUNS=runs/paper6 DATA=runs/data8w DATA_CAMERAS=all COMMAND_HORIZON=4 LAMP_VISOR=35 AR_START=tiny-ar-restyled
export AR_EQUAL_STEPS=3800 CONVERGED_FROM=runs/paper2/tiny-ar
export OVERRIDES="data.plan_style=fixed1 data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0] data.camera_subsets=keep_first"
R=tools/.recipe_paper6.sh
done_run() { [ -f "$RUNS/$1/train_summary.json" ]; }
phase() {  # phase NAME LAST_RUN
  if done_run "$2"; then echo "skip $1 ($2 done)"; else echo "$(date +%T) $1"; $R "$1" >> "$RUNS/log_$1.txt" 2>&1; fi
}
$R data >> "$RUNS/log_data.txt" 2>&1
$R converged
phase restyle tiny-ar-restyled
phase stage1 tiny-b32
phase stage2 tiny-b32-s2 &
S2=$!
phase teacher deep-b32
wait $S2
phase stage3 tiny-b32-s3
phase ar-equal-compute tiny-ar-equal
echo ALLDONE "$(date +%T)"
