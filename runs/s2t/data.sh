#!/usr/bin/env bash
# The Stage II teacher probe's validation split (docs/runs/paper.yaml): runs/data/synth-val-l10, 12 logs x 40 frames,
# world seed 15 (new), front camera, 256x128, the default world rules. Skipped if present.
set -euo pipefail
cd /work/main
source runs/paper6/split.sh
split runs/data synth-val-l10 12 40 15 0 60 CAM_F0
