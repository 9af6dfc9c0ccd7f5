#!/usr/bin/env bash
# Shipping rule v7 (docs/runs/paper.yaml) on validation data, after runs/paper8/drive.sh: (1) the candidate's
# planning threshold, the lowest of 0.3, 0.5, 0.7, 0.9 at which its plans parse >= 0.98 on runs/data/synth-val-l7
# (written into a copy, runs/paper8/candidate, with perception and the rationale at 0.7); (2) the shipped pair and the
# candidate pair open loop on runs/data/synth-val-l8; (3) both students in closed loop on route seed 7, each at its
# own thresholds; (4) the rule as code (evaluation.world_choice --ar-rows). A step whose output exists is skipped.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
OUT=runs/v7
mkdir -p $OUT
bash runs/paper8/data.sh
[ -f $OUT/thresholds.json ] || $PY runs/cvres/threshold_probe.py --model cand=runs/paper8/tiny-b32-s3 \
  --thresholds 0.3,0.5,0.7,0.9 --cache $OUT/cache --json $OUT/thresholds.json
T=$($PY - <<'PYEOF'
import json
rows = sorted(json.load(open("runs/v7/thresholds.json")).values(), key=lambda r: r["threshold"])
ok = [r["threshold"] for r in rows if r["parsed"] >= 0.98]
print(ok[0] if ok else "none")
PYEOF
)
echo "planning threshold: $T"
[ "$T" != none ] || { echo "no threshold parses 0.98 of the plans: rule v7 does not ship the candidate"; exit 0; }
if [ ! -f runs/paper8/candidate/config.json ]; then
  rm -rf runs/paper8/candidate && cp -r runs/paper8/tiny-b32-s3 runs/paper8/candidate
  rm -rf runs/paper8/candidate/checkpoint
  $PY -c "from wamdiff2_ros.model.checkpoints import write_own_threshold as w; w('runs/paper8/candidate', $T, {'understanding': 0.7, 'perception': 0.7})"
fi
cat > $OUT/registry.yaml <<YAML
# Shipping rule v7's open-loop rows on runs/data/synth-val-l8 (runs/paper8/evaluate.sh writes this file).
rows:
  - {key: shipped, label: "the shipped student", run: checkpoints/wamdiff2-tiny-b32, block_size: 32, lineage: [],
     threshold: 0.3, task_thresholds: {understanding: 0.7, perception: 0.7}, baseline: shipped-ar}
  - {key: shipped-ar, label: "the shipped AR", run: checkpoints/wamdiff2-tiny-ar, block_size: 1, lineage: []}
  - {key: cand, label: "residual-plan lineage: stage III student at $T", run: runs/paper8/candidate, block_size: 32,
     lineage: [], threshold: $T, task_thresholds: {understanding: 0.7, perception: 0.7}, baseline: cand-ar}
  - {key: cand-ar, label: "residual-plan lineage: its equal-compute AR", run: runs/paper8/tiny-ar-equal, block_size: 1,
     lineage: []}
YAML
score() {  # two scorers into one store (its writes are locked; rows already scored are skipped)
  $PY -m wamdiff2_ros.evaluation.paper_table score --registry $OUT/registry.yaml --runs . \
    --split runs/data/synth-val-l8 --name val-l8 --store $OUT/val_l8.json --train runs/data8/synth-train \
    --cache $OUT/cache --mixed-scenes 0 --quiet --rows "$@" > "$OUT/log_score_$1.txt" 2>&1
}
echo "$(date -u +%T) open loop"
score cand cand-ar &
P=$!
score shipped shipped-ar
wait $P
echo "$(date -u +%T) closed loop"
[ -f $OUT/cl_seed7.json ] || $PY -m wamdiff2_ros.cli eval closed-loop --baselines constant-velocity \
  --model shipped=checkpoints/wamdiff2-tiny-b32 --model cand=runs/paper8/candidate --routes 20 --seed 7 --threads 1 \
  --workers 2 --json $OUT/cl_seed7.json --report $OUT/cl_seed7 > $OUT/log_cl.txt 2>&1
$PY -m wamdiff2_ros.evaluation.world_choice --store $OUT/val_l8.json --shipped-store $OUT/val_l8.json \
  --split-name val-l8 --closed-loop $OUT/cl_seed7.json --shipped shipped=shipped --candidate cand=cand \
  --ar-rows cand-ar=shipped-ar --json $OUT/choice.json
echo "$(date -u +%T) done"
