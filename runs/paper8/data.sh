#!/usr/bin/env bash
# Shipping rule v7's validation split (docs/runs/paper.yaml): runs/data/synth-val-l8, 12 logs x 40 frames, world seed
# 12 (new), front camera, 256x128, the default world rules; made after the rule was written. Skipped if present.
set -euo pipefail
cd /work/main
source runs/paper6/split.sh
split runs/data synth-val-l8 12 40 12 0 60 CAM_F0
