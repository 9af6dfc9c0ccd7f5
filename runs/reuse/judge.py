"""The reused-keys rule's checks (docs/runs/paper.yaml): per task, reuse against exact decoding on synth-val-l9."""

import json
from pathlib import Path

HERE = Path(__file__).parent
split = json.loads((HERE / "val_l9.json").read_text())["val-l9"]
off, on = split["exact"]["aggregate"], split["reuse"]["aggregate"]
speed = json.loads((HERE / "paired_val_l9.json").read_text())["runs"][0]["models"]
mixed = speed["reuse"]["workloads"]["mixed"]["vs_baseline"]
checks = {
    "perception_map50": (on["perception"]["map_50"], off["perception"]["map_50"],
                         on["perception"]["map_50"] >= off["perception"]["map_50"] - 0.002),
    "perception_parsed": (on["perception"]["parse_rate"], off["perception"]["parse_rate"],
                          on["perception"]["parse_rate"] >= off["perception"]["parse_rate"] - 0.02),
    "qa": (on["understanding"]["accuracy"], off["understanding"]["accuracy"],
           on["understanding"]["accuracy"] >= off["understanding"]["accuracy"] - 0.02),
    "mixed_speed_vs_off": ([mixed["ratio"], mixed["low"], mixed["high"]], 1.0, mixed["low"] > 1.0),
}
ar = speed["ar"]["workloads"]["mixed"]["tokens_per_second"]
report = {
    "checks": {k: {"reuse": a, "exact": b, "holds": bool(h)} for k, (a, b, h) in checks.items()},
    "perception": all(checks[k][2] for k in ("perception_map50", "perception_parsed", "mixed_speed_vs_off")),
    "understanding": bool(checks["qa"][2] and checks["mixed_speed_vs_off"][2]),
    "reported": {
        "mixed_tokens_per_s": {n: speed[n]["workloads"]["mixed"]["tokens_per_second"] for n in speed},
        "mixed_x_ar": {n: speed[n]["workloads"]["mixed"]["tokens_per_second"] / ar for n in speed},
        "mixed_vs_exact": {n: speed[n]["workloads"]["mixed"]["vs_baseline"] for n in speed},
        "ms_per_forward": {n: {t: speed[n]["per_task"][t]["ms_per_forward"] for t in speed[n]["per_task"]}
                           for n in speed},
        "tokens_per_forward": {n: {t: speed[n]["per_task"][t]["tokens_per_forward"] for t in speed[n]["per_task"]}
                               for n in speed},
        "planning_l2": [on["planning"]["l2"], off["planning"]["l2"]],
    },
}
print(json.dumps(report, indent=2))
