#!/usr/bin/env bash
# Shipping rule v6 (docs/runs/paper.yaml) on validation data: the shipped student and the cruise-telemetry candidate
# (runs/paper7/tiny-b32-s3), both under the default world rules and at the shipped thresholds (0.3; understanding
# 0.7): closed loop on route seed 5 (new) and open loop on runs/data8/synth-val-l2 (written here if missing), then
# the rule as code (evaluation.world_choice: the same checks as rule v5, one split for both). A step whose output
# exists is skipped. WORKERS: closed-loop processes (default 2).
set -euo pipefail
cd /work/main
PY=.venv/bin/python
OUT=runs/v6
mkdir -p $OUT
W=${WORKERS:-2}
source runs/paper6/split.sh
split runs/data8 synth-val-l2 12 40 6 0 60
CL=(--baselines '' --routes 20 --seed 5 --threads 1 --workers "$W")
score=(-m wamdiff2_ros.evaluation.paper_table score --registry runs/paper7/registry.yaml --runs . --name val-l2
       --train runs/data8/synth-train --mixed-scenes 0 --quiet --split runs/data8/synth-val-l2)
[ -f $OUT/cl_seed5_shipped.json ] || $PY -m wamdiff2_ros.cli eval closed-loop "${CL[@]}" \
  --model shipped=checkpoints/wamdiff2-tiny-b32 --json $OUT/cl_seed5_shipped.json --report $OUT/cl_seed5_shipped
[ -f $OUT/cl_seed5_cruise.json ] || $PY -m wamdiff2_ros.cli eval closed-loop "${CL[@]}" \
  --model cruise=runs/paper7/tiny-b32-s3 --json $OUT/cl_seed5_cruise.json --report $OUT/cl_seed5_cruise
[ -f $OUT/val_l2.json ] || $PY "${score[@]}" --store $OUT/val_l2.json --rows shipped cruise --cache $OUT/cache
$PY -m wamdiff2_ros.evaluation.world_choice --store $OUT/val_l2.json --shipped-store $OUT/val_l2.json \
  --split-name val-l2 --closed-loop $OUT/cl_seed5_shipped.json --closed-loop $OUT/cl_seed5_cruise.json \
  --shipped shipped=shipped --candidate cruise=cruise --json $OUT/choice.json
