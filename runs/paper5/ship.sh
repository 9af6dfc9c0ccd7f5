#!/usr/bin/env bash
# Ship the 8-camera pair (shipping rule v4 passed, docs/runs/paper.yaml), once cam8-ar-equal has finished.
# Steps (run one at a time, nothing else on the machine for the timed ones):
#   1. compute parity: the AR's core-min >= the student lineage's (else continue the AR)
#   2. docs/runs/paper.yaml: the cam8 rows (runs/paper5/rows.patch), the shipped row cam8-b32-s3-t03u07, shipped: entries
#   3. synth-val for every cam8 row, then the test split ONCE for the cam8 rows
#   4. ship_paper both, ladder_report, plots
set -euo pipefail
cd /work/main
PY=.venv/bin/python
$PY -m wamdiff2_ros.evaluation.compute --runs runs/paper5 --baseline tiny-ar \
    --lineage tiny-ar tiny-b4 tiny-b8 tiny-b16 tiny-b32 tiny-b32-s2 tiny-b32-s3 || true
echo "AR: $(python3 -c "import json; d=json.load(open('runs/paper5/tiny-ar-equal/train_summary.json')); print(d['steps_done'], d['wall_time_s'] / 60)") steps, core-min"
[ "${1:-}" = go ] || { echo "check the compute above, edit docs/runs/paper.yaml (step 2), then: $0 go"; exit 0; }
ROWS="cam8-ar-equal cam8-b4 cam8-b8 cam8-b16 cam8-b32 cam8-b32-s2 cam8-b32-s3 cam8-b32-s3-t03u07 cam8-deep-b32"
# shellcheck disable=SC2086
# the student rows' val scores were taken while the AR trained (runs/paper5/log_ship_val.txt): only the AR's here
$PY -m wamdiff2_ros.evaluation.paper_table score --split runs/data/synth-val --name val --rows cam8-ar-equal cam8-b32-s3-t03u07 --quiet
# shellcheck disable=SC2086
$PY -m wamdiff2_ros.evaluation.paper_table score --split runs/data/synth-test --name test --final --rows $ROWS --quiet
$PY -m wamdiff2_ros.training.ship_paper --row cam8-b32-s3-t03u07 --name wamdiff2-tiny-b32 --split test
$PY -m wamdiff2_ros.training.ship_paper --row cam8-ar-equal --name wamdiff2-tiny-ar --split test
$PY -m wamdiff2_ros.evaluation.ladder_report
for sp in test val; do $PY -m wamdiff2_ros.evaluation.paper_plot --split $sp --out docs/images/paper_$sp.png; done
