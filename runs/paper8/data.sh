#!/usr/bin/env bash
# Shipping rule v7's validation split (docs/runs/paper.yaml): runs/data/synth-val-l8, 12 logs x 40 frames, world seed
# 12 (new), front camera, 256x128, the default world rules; made after the rule was written. Skipped if present.
set -euo pipefail
cd /work/main
.venv/bin/python - <<'PYEOF'
from pathlib import Path
from wamdiff2_ros.data.synth import synthesize
out = Path("runs/data/synth-val-l8")
if (out / "navsim_logs" / "synthetic" / "synthetic_s12_0011.pkl").is_file():
    print(f"{out}: present")
else:
    synthesize(out, num_logs=12, num_frames=40, seed=12, cameras=("CAM_F0",), size=(256, 128), progress=False)
    print(f"{out}: written")
PYEOF
