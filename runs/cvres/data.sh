#!/usr/bin/env bash
# The residual-plan probe's validation split (docs/runs/paper.yaml, "Residual-plan probe"): runs/data/synth-val-l7,
# 12 logs x 40 frames, world seed 11 (new), front camera, 256x128, the default world rules. Skipped if present.
set -euo pipefail
cd /work/main
source runs/paper6/split.sh
split runs/data synth-val-l7 12 40 11 0 60 CAM_F0
