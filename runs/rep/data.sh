#!/usr/bin/env bash
# The replication rule's split (docs/runs/paper.yaml): runs/data/synth-rep, 12 logs x 40 frames, world seed 14 (new),
# front camera, 256x128, the default world rules; made after the rule was written. Skipped if present.
set -euo pipefail
cd /work/main
source runs/paper6/split.sh
split runs/data synth-rep 12 40 14 0 60 CAM_F0
