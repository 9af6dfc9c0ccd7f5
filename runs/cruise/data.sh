#!/usr/bin/env bash
# The cruise-telemetry probe's training split (docs/runs/paper.yaml, "Cruise-telemetry probe"): runs/data8/synth-train,
# the shipped 8-camera student's own training worlds (24 logs x 60 frames, seed 1, all 8 cameras, 256x128, the world's
# default rules command_horizon_s 0, lamp_visor_deg 60), as tools/paper_recipe.sh data writes it. Skipped if present.
set -euo pipefail
cd /work/main
source runs/paper6/split.sh
split runs/data8 synth-train 24 60 1 0 60
