#!/usr/bin/env bash
# The residual-plan lineage (shipping rule v7, docs/runs/paper.yaml): the 8-camera recipe on runs/paper6/drive2.sh's
# schedule and settings, on the shipped student's own data and world rules (runs/data8, the defaults), with
# data.plan_style=cv1 (plans as residuals to the constant-velocity plan) for every stage and its equal-compute AR
# alike. Needs runs/paper2/tiny-ar (the converged AR, checkpoints/wamdiff2-tiny-ar of commit cb0e849). Resumable: start
# it again.
set -euo pipefail
cd /work/main
export RUNS=runs/paper8 DATA=runs/data8 COMMAND_HORIZON=0 LAMP_VISOR=60
export OVERRIDES="data.plan_style=cv1 data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0] data.camera_subsets=keep_first"
bash runs/cruise/data.sh
exec bash runs/paper6/drive2.sh
