"""Diagnostic: how much a model's plan (at 1 s, what the closed loop's speed control reads, and at 4 s) follows the prompt's acceleration vs the scene (no rule, no choice)."""
import sys, cv2, numpy as np
from wamdiff2_ros.data.navsim import NavsimLogs
from wamdiff2_ros.data.tokenized import DataConfig, resolve_dirs
from wamdiff2_ros.data.samples import _image_list
from wamdiff2_ros.model import prompts
from wamdiff2_ros.evaluation.closed_loop.policies import ModelPolicy
from wamdiff2_ros.agent import EgoMotion
split = sys.argv[1]
models = sys.argv[2:]
logs_dir, blobs = resolve_dirs(DataConfig(logs_dir=split))
logs = NavsimLogs(logs_dir, blobs, frame_interval=1)
rows = []
for i in range(0, len(logs), 7):
    s = logs[i]
    f = s.current_frame
    v = tuple(float(x) for x in f.ego_status.ego_velocity)
    a = tuple(float(x) for x in f.ego_status.ego_acceleration)
    if v[0] < 2.0:
        continue
    gt = s.future_trajectory(prompts.NUM_WAYPOINTS)
    img = cv2.cvtColor(cv2.imread(_image_list(s, ("CAM_F0",), 1)[0]), cv2.COLOR_BGR2RGB)
    rows.append((v, a, prompts.command_from_one_hot(f.ego_status.driving_command), img, gt))
    if len(rows) >= 40:
        break
print(f"{len(rows)} moving scenes from {split}")
for m in models:
    pol = ModelPolicy(m)
    res = {"real": [], "zero": [], "brake": [], "gt": [], "cv": []}
    one = {"real": [], "zero": [], "brake": [], "gt": [], "cv": []}
    for v, a, cmd, img, gt in rows:
        for key, acc in (("real", a), ("zero", (0.0, 0.0)), ("brake", (-3.0, 0.0))):
            out = pol.agent.step({"CAM_F0": img}, EgoMotion(v, acc), cmd)
            res[key].append(float(np.asarray(out.trajectory)[-1, 0]))
            one[key].append(float(np.asarray(out.trajectory)[1, 0]))
        res["gt"].append(float(gt[-1, 0])); res["cv"].append(4.0 * v[0])
        one["gt"].append(float(gt[1, 0])); one["cv"].append(1.0 * v[0])
    r = {k: np.array(x) for k, x in res.items()}
    err = lambda k: float(np.mean(np.abs(r[k] - r["gt"])))
    print(f"{m}: x@4s mean real {r['real'].mean():.2f} zero {r['zero'].mean():.2f} brake(-3) {r['brake'].mean():.2f} "
          f"gt {r['gt'].mean():.2f} cv {r['cv'].mean():.2f} | |x-gt| real {err('real'):.2f} zero {err('zero'):.2f} cv {err('cv'):.2f} "
          f"| corr(real-zero, a_x) {np.corrcoef(r['real'] - r['zero'], [row[1][0] for row in rows])[0, 1]:.2f}")
    o = {k: np.array(x) for k, x in one.items()}
    e1 = lambda k: float(np.mean(np.abs(o[k] - o["gt"])))
    print(f"  x@1s mean real {o['real'].mean():.2f} zero {o['zero'].mean():.2f} brake(-3) {o['brake'].mean():.2f} "
          f"gt {o['gt'].mean():.2f} cv {o['cv'].mean():.2f} | |x-gt| real {e1('real'):.2f} zero {e1('zero'):.2f} cv {e1('cv'):.2f}")
