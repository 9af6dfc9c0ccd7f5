#!/usr/bin/env bash
# The cruise-telemetry probe (docs/runs/paper.yaml, "Cruise-telemetry probe", written before these runs): the shipped
# weights fine-tuned 500 steps at B=32 with half the planning prompts' acceleration reported as (0, 0) (cruise) and
# without (ctl), the two side by side (one core each), then both and the shipped student on route seed 4.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
bash runs/cruise/data.sh
DATA="data.logs_dir=runs/data8/synth-train data.cache_dir=runs/cruise/cache data.plan_style=fixed1 \
data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0] data.camera_subsets=keep_first"
ft() {  # ft NAME FRACTION
  [ -f "runs/cruise/ft-$1/train_summary.json" ] || $PY -m wamdiff2_ros.cli train adapt \
    --config config/train/paper/adapt_b32.yaml output_dir="runs/cruise/ft-$1" init=checkpoints/wamdiff2-tiny-b32 \
    steps=500 lr=3.0e-4 progress=false $DATA data.cruise_telemetry="$2" > "runs/cruise/log_ft-$1.txt" 2>&1
}
echo "$(date +%T) fine-tunes"
ft cruise 0.5 &
CRUISE=$!
ft ctl 0.0
wait $CRUISE
echo "$(date +%T) closed loop"
$PY -m wamdiff2_ros.cli eval closed-loop --baselines student --model cruise=runs/cruise/ft-cruise \
  --model ctl=runs/cruise/ft-ctl --routes 20 --seed 4 --threads 1 --workers 2 --json runs/cruise/cl_seed4.json \
  --report runs/cruise/cl_seed4 > runs/cruise/log_cl.txt 2>&1
echo "$(date +%T) done"
