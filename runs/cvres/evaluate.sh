#!/usr/bin/env bash
# The residual-plan probe's scoring (docs/runs/paper.yaml, "Residual-plan probe"): the four fine-tunes on the new
# validation split runs/data/synth-val-l7 (two scorers at a time, one thread each; tokens/s are not the question),
# then the two students in closed loop on new route seed 6, then the checks (runs/cvres/judge.py).
set -euo pipefail
cd /work/main
PY=.venv/bin/python
bash runs/cvres/data.sh
ln -sfn ../cruise/ft-ctl runs/cvres/s-ctl  # the student's fixed1 arm, run by the cruise probe
score() {  # two scorers into one store (its writes are locked; rows already scored are skipped)
  $PY -m wamdiff2_ros.evaluation.paper_table score --registry runs/cvres/registry.yaml --runs runs/cvres \
    --split runs/data/synth-val-l7 --name val-l7 --store runs/cvres/val_l7.json --train runs/data8/synth-train \
    --cache runs/cvres/score_cache --mixed-scenes 0 --quiet --rows "$@" > "runs/cvres/log_score_$1.txt" 2>&1
}
echo "$(date -u +%T) scoring"
score s-res a-res &
P=$!
score s-ctl a-ctl
wait $P
echo "$(date -u +%T) closed loop"
[ -f runs/cvres/cl_seed6.json ] || $PY -m wamdiff2_ros.cli eval closed-loop --baselines constant-velocity --model s-res=runs/cvres/s-res \
  --model s-ctl=runs/cvres/s-ctl --routes 20 --seed 6 --threads 1 --workers 2 --confidence-threshold 0.3 \
  --json runs/cvres/cl_seed6.json --report runs/cvres/cl_seed6 > runs/cvres/log_cl.txt 2>&1
$PY runs/cvres/judge.py --closed-loop runs/cvres/cl_seed6.json | tee runs/cvres/judge.json
echo "$(date -u +%T) done"
