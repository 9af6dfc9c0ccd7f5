#!/usr/bin/env bash
# The Stage II teacher probe (docs/runs/paper.yaml) on runs/data/synth-val-l10: check 0 (training.teacher_check),
# then rows b32, s2, s2t scored at 0.9 into runs/s2t/val_l10.json (ROWS picks rows; rows already scored are skipped),
# then the rule (runs/s2t/judge.py).
set -euo pipefail
cd /work/main
PY=.venv/bin/python
OUT=runs/s2t
export OMP_NUM_THREADS=1
[ -f $OUT/check.json ] || $PY -m wamdiff2_ros.training.teacher_check --student runs/paper8/tiny-b32 \
  --model t16=runs/s2t/t16:16 --model b16=runs/paper8/tiny-b16:16 --model s2=runs/paper8/tiny-b32-s2:32 \
  --model s2t=runs/s2t/s2t:32 --split runs/data/synth-val-l10 --plan-style cv1 --cache $OUT/cache_val \
  --json $OUT/check.json > $OUT/log_check.txt 2>&1
$PY -m wamdiff2_ros.evaluation.paper_table score --registry $OUT/registry.yaml --runs . \
  --split runs/data/synth-val-l10 --name val-l10 --store $OUT/val_l10.json --train runs/data8/synth-train \
  --cache $OUT/cache --mixed-scenes 0 --quiet --threads 1 --rows ${ROWS:-b32 s2 s2t} >> "$OUT/log_score.txt" 2>&1
[ -n "${ROWS:-}" ] || $PY $OUT/judge.py
