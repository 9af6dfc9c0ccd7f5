#!/usr/bin/env bash
# The perception threshold rule's run: every row of runs/perc6/registry.yaml on synth-val-l6, into its own store.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python -m wamdiff2_ros.evaluation.paper_table score --registry runs/perc6/registry.yaml --runs runs/perc6 \
  --split runs/data/synth-val-l6 --name val-l6 --store runs/perc6/val_l6.json --train runs/data8/synth-train \
  --mixed-scenes 0 --quiet "$@"
