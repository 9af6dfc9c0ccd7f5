"""Exploratory (not judged by the probe's rule): the probe's cv1 student, planning alone, at 0.9/0.7/0.5/0.3 on
runs/data/synth-val-l7; does the refused-plan rate come from the threshold? ``python runs/cvres/threshold_probe.py``"""

import json

import numpy as np
import torch

from wamdiff2_ros.evaluation import heldout
from wamdiff2_ros.model.loader import load_model

torch.set_num_threads(1)
out = {}
for name in ("s-res", "s-ctl"):
    vla = load_model(f"runs/cvres/{name}")
    rows = [r for r in heldout.split_rows(vla, "runs/data/synth-val-l7", "runs/cvres/score_cache") if r["task"] == "planning"]
    for threshold in (0.9, 0.7, 0.5, 0.3):
        recs = heldout.score(vla, rows, 32, threshold=threshold, progress=False)["records"]
        parsed = [r for r in recs if r["parsed"]]
        out[f"{name}@{threshold}"] = {
            "parsed": round(len(parsed) / len(recs), 3),
            "l2_all": round(float(np.mean([np.mean(r["l2_h"]) for r in recs])), 3),
            "l2_1s_parsed": round(float(np.mean([r["l2_h_pred"][0] for r in parsed])), 3) if parsed else None,
            "tokens_per_forward": round(sum(r["generated_tokens"] for r in recs) / sum(r["forwards"] for r in recs), 2)}
        print(name, threshold, out[f"{name}@{threshold}"], flush=True)
json.dump(out, open("runs/cvres/threshold_probe.json", "w"), indent=2)
