#!/usr/bin/env bash
# The residual-plan probe (docs/runs/paper.yaml, "Residual-plan probe", written before these runs): the shipped
# weights fine-tuned 500 steps on the 8-camera training split, student (B=32) and AR, plans written as residuals to
# the constant-velocity plan (cv1) and, for the AR, as before (fixed1; the student's fixed1 arm is runs/cruise/ft-ctl).
# Three jobs on the two cores, one thread each. Skips what is done.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
bash runs/cruise/data.sh
DATA="data.logs_dir=runs/data8/synth-train data.cache_dir=runs/cvres/cache \
data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0] data.camera_subsets=keep_first"
ft() {  # ft NAME STAGE CONFIG INIT STYLE WARMUP
  [ -f "runs/cvres/$1/train_summary.json" ] || $PY -m wamdiff2_ros.cli train "$2" --config "config/train/paper/$3.yaml" \
    output_dir="runs/cvres/$1" init="checkpoints/$4" steps=500 lr=3.0e-4 warmup_steps="$6" progress=false \
    $DATA data.plan_style="$5" > "runs/cvres/log_$1.txt" 2>&1
}
echo "$(date -u +%T) fine-tunes"
ft s-res adapt adapt_b32 wamdiff2-tiny-b32 cv1 10 &
S=$!
ft a-res ar ar wamdiff2-tiny-ar cv1 20 &
A=$!
ft a-ctl ar ar wamdiff2-tiny-ar fixed1 20
wait $S $A
echo "$(date -u +%T) done"
