"""The Stage II teacher probe's rule (docs/runs/paper.yaml), read from runs/s2t/check.json and runs/s2t/val_l10.json."""

import json

import numpy as np

from wamdiff2_ros.evaluation.paper_table import _plan_l2, matched
from wamdiff2_ros.evaluation.stats import paired_bootstrap

check = json.load(open("runs/s2t/check.json"))["models"]
out = {"check0": {k: v["masked_acc"] for k, v in check.items()}}
out["check0_holds"] = check["t16"]["masked_acc"] > check["student"]["masked_acc"]
split = json.load(open("runs/s2t/val_l10.json"))["val-l10"]
plans = {k: {r["id"]: r for r in split[k]["records"] if r["task"] == "planning"} for k in ("b32", "s2", "s2t")}


def paired(a, b):  # a minus b, every sample (fallback in)
    ids = [i for i in plans[a] if i in plans[b]]
    ref = [_plan_l2(plans[b][i]) for i in ids]
    return paired_bootstrap([_plan_l2(plans[a][i]) - r for i, r in zip(ids, ref, strict=True)], reference=ref)


parsed = {k: float(np.mean([r["parsed"] for r in v.values()])) for k, v in plans.items()}
l2 = {k: float(np.mean([_plan_l2(r) for r in v.values()])) for k, v in plans.items()}
a, b = paired("s2t", "s2"), paired("s2t", "b32")
out.update(parsed=parsed, l2_every_sample=l2, s2t_minus_s2=a, s2t_minus_b32=b,
           matched={f"{x}/{y}": {k: matched(split[x]["records"], split[y]["records"])[k] for k in ("n", "mean_a", "mean_b")}
                    for x, y in (("s2t", "s2"), ("s2t", "b32"), ("s2", "b32"))},
           qa={k: split[k]["aggregate"]["understanding"].get("accuracy") for k in plans})
out["a"] = a["high"] < 0
out["b"] = b["mean"] <= 0
out["c"] = parsed["s2t"] >= parsed["s2"] - 0.02
out["adopted"] = bool(out["check0_holds"] and out["a"] and out["b"] and out["c"])
json.dump(out, open("runs/s2t/judge.json", "w"), indent=1)
print(json.dumps(out, indent=1))
