#!/usr/bin/env bash
# The world-rules lineage of drive.sh (shipping rule v5, docs/runs/paper.yaml), scheduled to fit one session: the
# data phase makes only the splits the rule reads (runs/data8w synth-train and synth-val-l2, and runs/data8
# synth-val-l2 for the shipped student, written beforehand with the data phase's settings), and the equal-compute AR
# runs beside stage I to III from the moment its start (the restyled AR) exists, instead of after them. The recipe and
# every run's settings are drive.sh's. Resumable like it: start it again. Another lineage on this schedule sets RUNS,
# DATA, COMMAND_HORIZON, LAMP_VISOR or OVERRIDES before it (runs/paper7/drive.sh); unset, they are rule v5's.
set -euo pipefail
cd /work/main
export RUNS=${RUNS:-runs/paper6} DATA=${DATA:-runs/data8w} COMMAND_HORIZON=${COMMAND_HORIZON:-4} LAMP_VISOR=${LAMP_VISOR:-35}
export DATA_CAMERAS=all AR_START=tiny-ar-restyled AR_EQUAL_STEPS=3800 CONVERGED_FROM=runs/paper2/tiny-ar
export OVERRIDES=${OVERRIDES:-"data.plan_style=fixed1 data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0] data.camera_subsets=keep_first"}
R=tools/.recipe_$(basename "$RUNS").sh
[ -x "$R" ] || cp tools/paper_recipe.sh "$R"
done_run() { [ -f "$RUNS/$1/train_summary.json" ]; }
phase() {  # phase NAME LAST_RUN
  if done_run "$2"; then echo "skip $1 ($2 done)"; else echo "$(date +%T) $1"; $R "$1" >> "$RUNS/log_$1.txt" 2>&1; fi
}
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
