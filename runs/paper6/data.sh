#!/usr/bin/env bash
# The splits shipping rule v5 reads (docs/runs/paper.yaml), written with the recipe's data-phase settings
# (tools/paper_recipe.sh data: 256x128, all 8 cameras, the same world seeds): runs/data8w synth-train (24 logs x 60
# frames, seed 1) and synth-val-l2 (12 x 40, seed 6) under the world rules COMMAND_HORIZON=4 LAMP_VISOR=35, and
# runs/data8/synth-val-l2 (12 x 40, seed 6) under the old rules (0 and 60) for the shipped student. `test` writes
# runs/data8w/synth-val (4 x 40, seed 2) and synth-test (8 x 40, seed 4), the paper table's splits under these rules,
# only once the candidate ships (the test split is then scored once). Two processes; a split already
# written is skipped.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
source runs/paper6/split.sh
if [ "${1:-}" = test ]; then split runs/data8w synth-val 4 40 2 4 35; split runs/data8w synth-test 8 40 4 4 35; exit; fi
split runs/data8w synth-train 24 60 1 4 35 &
TRAIN=$!
split runs/data8w synth-val-l2 12 40 6 4 35
split runs/data8 synth-val-l2 12 40 6 0 60
wait $TRAIN
