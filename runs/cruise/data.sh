#!/usr/bin/env bash
# The cruise-telemetry probe's training split (docs/runs/paper.yaml, "Cruise-telemetry probe"): runs/data8/synth-train,
# the shipped 8-camera student's own training worlds (24 logs x 60 frames, seed 1, all 8 cameras, 256x128, the world's
# default rules command_horizon_s 0, lamp_visor_deg 60), as tools/paper_recipe.sh data writes it. Skipped if present.
set -euo pipefail
cd /work/main
.venv/bin/python - <<'PYEOF'
from pathlib import Path
from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.model.prompts import CAMERAS
out = Path("runs/data8/synth-train")
if (out / "navsim_logs" / "synthetic" / "synthetic_s1_0023.pkl").is_file():
    print(f"{out}: present")
else:
    synthesize(out, num_logs=24, num_frames=60, seed=1, cameras=tuple(CAMERAS), size=(256, 128), progress=False,
               command_horizon_s=0.0, lamp_visor_deg=60.0)
    print(f"{out}: written")
PYEOF
