#!/usr/bin/env bash
# Issue 16 point 6 probe: the driving command announced over the plan's horizon (WorldConfig.command_horizon_s=4).
# The fix1 stage III student (the shipped weights) fine-tuned 500 steps at B=32 on the new commands, and a control
# fine-tuned the same way on the old (20 m) commands; both judged on the seed-1 validation routes with the shipped one.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
while pgrep -f "output_dir=runs/cmd4/fix1-s3-cmd4" > /dev/null; do sleep 10; done
$PY -c "from wamdiff2_ros.model.checkpoints import write_world_rules as w; w('runs/cmd4/fix1-s3-cmd4', {'command_horizon_s': 4.0})"  # (trained before save_final wrote it)
[ -f runs/cmd4/fix1-s3-cmd0/train_summary.json ] || $PY -m wamdiff2_ros.cli train adapt --config config/train/paper/adapt_b32.yaml \
  output_dir=runs/cmd4/fix1-s3-cmd0 data.logs_dir=runs/data/synth-train data.cache_dir=runs/paper4/cache progress=false \
  init=runs/paper4/tiny-b32-s3 data.plan_style=fixed1 steps=500 lr=3.0e-4 > runs/cmd4/log_ft0.txt 2>&1
echo "$(date +%T) closed loop"
$PY -m wamdiff2_ros.cli eval closed-loop --baselines student --model cmd4=runs/cmd4/fix1-s3-cmd4 \
  --model cmd0=runs/cmd4/fix1-s3-cmd0 --routes 20 --seed 1 --workers 1 --json runs/cmd4/cl_seed1.json \
  --report runs/cmd4/cl_seed1 > runs/cmd4/log_cl.txt 2>&1
echo "$(date +%T) done"
