"""Planning alone at several confidence thresholds: plans parsed, L2 and tokens per forward per model and threshold.

Exploratory for the residual-plan probe (``python runs/cvres/threshold_probe.py``: its two students on
runs/data/synth-val-l7); shipping rule v7's planning-threshold choice (runs/paper8/evaluate.sh) runs it on the
lineage's student with ``--model cand=runs/paper8/tiny-b32-s3 --json ...``.
"""

import argparse
import json

import numpy as np
import torch

from wamdiff2_ros.evaluation import heldout
from wamdiff2_ros.model.loader import load_model

parser = argparse.ArgumentParser()
parser.add_argument("--model", action="append", default=None, metavar="NAME=DIR")
parser.add_argument("--split", default="runs/data/synth-val-l7")
parser.add_argument("--thresholds", default="0.9,0.7,0.5,0.3")
parser.add_argument("--cache", default="runs/cvres/score_cache")
parser.add_argument("--json", default="runs/cvres/threshold_probe.json")
args = parser.parse_args()
models = args.model or ["s-res=runs/cvres/s-res", "s-ctl=runs/cvres/s-ctl"]
torch.set_num_threads(1)
out = {}
for name, path in (m.split("=", 1) for m in models):
    vla = load_model(path)
    rows = [r for r in heldout.split_rows(vla, args.split, args.cache) if r["task"] == "planning"]
    for threshold in (float(t) for t in args.thresholds.split(",")):
        recs = heldout.score(vla, rows, int(vla.block_size), threshold=threshold, progress=False)["records"]
        parsed = [r for r in recs if r["parsed"]]
        out[f"{name}@{threshold}"] = {
            "model": name, "threshold": threshold, "parsed": round(len(parsed) / len(recs), 4),
            "l2_all": round(float(np.mean([np.mean(r["l2_h"]) for r in recs])), 3),
            "l2_1s_parsed": round(float(np.mean([r["l2_h_pred"][0] for r in parsed])), 3) if parsed else None,
            "tokens_per_forward": round(sum(r["generated_tokens"] for r in recs) / sum(r["forwards"] for r in recs), 2)}
        print(name, threshold, out[f"{name}@{threshold}"], flush=True)
json.dump(out, open(args.json, "w"), indent=2)
