#!/usr/bin/env bash
# The Stage II teacher probe (docs/runs/paper.yaml): t16 = runs/paper8/tiny-b16 continued 800 steps at B=16, then s2t =
# stage II from runs/paper8/tiny-b32 taught by t16; the residual-plan lineage's data settings. Resumable: start again.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
OV=(data.plan_style=cv1 "data.cameras=[CAM_F0,CAM_L0,CAM_L1,CAM_L2,CAM_R0,CAM_R1,CAM_R2,CAM_B0]" data.camera_subsets=keep_first
    data.logs_dir=runs/data8/synth-train data.cache_dir=runs/paper8/cache progress=false)
done_run() { [ -f "runs/s2t/$1/train_summary.json" ] && grep -q '"finished": true' "runs/s2t/$1/train_summary.json"; }
done_run t16 || { echo "$(date +%T) t16"; $PY -m wamdiff2_ros.cli train adapt --config config/train/paper/adapt_b16.yaml \
  output_dir=runs/s2t/t16 init=runs/paper8/tiny-b16 steps=800 "${OV[@]}"; }
done_run s2t || { echo "$(date +%T) s2t"; $PY -m wamdiff2_ros.cli train distill-block --config config/train/paper/distill_block.yaml \
  output_dir=runs/s2t/s2t init=runs/paper8/tiny-b32 teacher=runs/s2t/t16 "${OV[@]}"; }
echo "DONE $(date +%T)"
