#!/usr/bin/env bash
# The residual-plan probe's validation split (docs/runs/paper.yaml, "Residual-plan probe"): runs/data/synth-val-l7,
# 12 logs x 40 frames, world seed 11 (new), front camera, 256x128, the default world rules. Skipped if present.
set -euo pipefail
cd /work/main
.venv/bin/python - <<'PYEOF'
from pathlib import Path
from wamdiff2_ros.data.synth import synthesize
out = Path("runs/data/synth-val-l7")
if (out / "navsim_logs" / "synthetic" / "synthetic_s11_0011.pkl").is_file():
    print(f"{out}: present")
else:
    synthesize(out, num_logs=12, num_frames=40, seed=11, cameras=("CAM_F0",), size=(256, 128), progress=False)
    print(f"{out}: written")
PYEOF
