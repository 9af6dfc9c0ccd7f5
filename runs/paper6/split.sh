# split ROOT NAME LOGS FRAMES SEED HORIZON VISOR [CAMERAS]: writes ROOT/NAME with the recipe's data-phase settings
# (tools/paper_recipe.sh data: all 8 cameras, 256x128; CAMERAS, comma-separated, for fewer) under the world rules
# HORIZON (command_horizon_s) and VISOR (lamp_visor_deg); a split already written is skipped. Sourced by
# runs/paper6/data.sh, runs/cruise/data.sh, runs/paper7/evaluate.sh, runs/cvres/data.sh and runs/paper8/data.sh (PY:
# the python, default .venv/bin/python).
split() {
  "${PY:-.venv/bin/python}" - "$@" <<'PYEOF'
import sys
from pathlib import Path
from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.model.prompts import CAMERAS
root, name, logs, frames, seed, horizon, visor = sys.argv[1:8]
cameras = tuple(sys.argv[8].split(",")) if len(sys.argv) > 8 else tuple(CAMERAS)
out = Path(root) / name
if (out / "navsim_logs" / "synthetic" / f"synthetic_s{seed}_{int(logs) - 1:04d}.pkl").is_file():
    print(f"{out}: present")
    sys.exit(0)
synthesize(out, num_logs=int(logs), num_frames=int(frames), seed=int(seed), cameras=cameras, size=(256, 128),
           progress=False, command_horizon_s=float(horizon), lamp_visor_deg=float(visor))
print(f"{out}: written")
PYEOF
}
