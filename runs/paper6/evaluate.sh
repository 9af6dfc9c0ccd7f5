#!/usr/bin/env bash
# Shipping rule v5 (docs/runs/paper.yaml) on validation data, each model in its own world:
#   the shipped student: closed loop on route seed 3 and open loop on runs/data8/synth-val-l2 (old rules);
#   the candidate (runs/paper6/tiny-b32-s3): the same routes under its checkpoint's world_rules and open loop on
#   runs/data8w/synth-val-l2 (its rules); then evaluation.world_choice. Both at the shipped thresholds (0.3;
#   understanding 0.7). A step whose output exists is skipped. WORKERS: closed-loop processes (default 2).
set -euo pipefail
cd /work/main
PY=.venv/bin/python
OUT=runs/v5
mkdir -p $OUT
W=${WORKERS:-2}
CL=(--baselines '' --routes 20 --seed 3 --threads 1 --workers "$W")
score=(-m wamdiff2_ros.evaluation.paper_table score --registry runs/paper6/registry.yaml --runs . --name val-l2
       --train runs/data8w/synth-train --mixed-scenes 0 --quiet)
[ -f $OUT/cl_seed3_shipped.json ] || $PY -m wamdiff2_ros.cli eval closed-loop "${CL[@]}" \
  --model shipped=checkpoints/wamdiff2-tiny-b32 --json $OUT/cl_seed3_shipped.json --report $OUT/cl_seed3_shipped
[ -f $OUT/val_l2_old.json ] || $PY "${score[@]}" --split runs/data8/synth-val-l2 --store $OUT/val_l2_old.json \
  --rows shipped --cache $OUT/cache_old
[ -f $OUT/cl_seed3_world.json ] || $PY -m wamdiff2_ros.cli eval closed-loop "${CL[@]}" \
  --model world=runs/paper6/tiny-b32-s3 --json $OUT/cl_seed3_world.json --report $OUT/cl_seed3_world
[ -f $OUT/val_l2_new.json ] || $PY "${score[@]}" --split runs/data8w/synth-val-l2 --store $OUT/val_l2_new.json \
  --rows world --cache $OUT/cache_new
$PY -m wamdiff2_ros.evaluation.world_choice --store $OUT/val_l2_new.json --shipped-store $OUT/val_l2_old.json \
  --split-name val-l2 --closed-loop $OUT/cl_seed3_shipped.json --closed-loop $OUT/cl_seed3_world.json \
  --shipped shipped=shipped --candidate world=world --json $OUT/choice.json
