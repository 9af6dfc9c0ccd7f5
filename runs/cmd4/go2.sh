#!/usr/bin/env bash
# Probe 2 (exploratory, no rule: it ships nothing): the horizon-rule data with turning plans repeated 4x, 1500 steps
# from the shipped weights; then the seed-1 validation routes. Does a longer fine-tune that sees many turns steer?
set -euo pipefail
cd /work/main
PY=.venv/bin/python
[ -f runs/cmd4/fix1-s3-cmd4t4/train_summary.json ] || $PY -m wamdiff2_ros.cli train adapt --config config/train/paper/adapt_b32.yaml \
  output_dir=runs/cmd4/fix1-s3-cmd4t4 data.logs_dir=runs/data_cmd4/synth-train data.cache_dir=runs/cmd4/cache progress=false \
  init=runs/paper4/tiny-b32-s3 data.plan_style=fixed1 data.oversample_turns=4 steps=1500 lr=3.0e-4 > runs/cmd4/log_ft2.txt 2>&1
while pgrep -f "cl_seed1.json" > /dev/null; do sleep 10; done
echo "$(date +%T) closed loop"
$PY -m wamdiff2_ros.cli eval closed-loop --baselines '' --model cmd4t4=runs/cmd4/fix1-s3-cmd4t4 --routes 20 --seed 1 \
  --workers 1 --json runs/cmd4/cl2_seed1.json --report runs/cmd4/cl2_seed1 > runs/cmd4/log_cl2.txt 2>&1
echo "$(date +%T) done"
