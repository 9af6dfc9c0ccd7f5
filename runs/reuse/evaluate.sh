#!/usr/bin/env bash
# The reused-keys rule end to end (docs/runs/paper.yaml): the split, both rows scored into one store, the paired
# speed (the student without, the student with, and the AR, interleaved; 1 thread), then the checks (judge.py).
set -euo pipefail
cd /work/main
PY=.venv/bin/python
bash runs/reuse/data.sh
ln -sfn ../../checkpoints/wamdiff2-tiny-b32 runs/reuse/student
candidate() {  # candidate DIR TASKS: the shipped checkpoint with the option for TASKS (comma list) in its config
  [ -f "$1/model.safetensors" ] && return
  mkdir -p "$1"
  cp checkpoints/wamdiff2-tiny-b32/*.json checkpoints/wamdiff2-tiny-b32/*.jinja \
     checkpoints/wamdiff2-tiny-b32/model.safetensors "$1/"
  $PY -c "import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['reuse_kv_tasks']=sys.argv[2].split(','); \
open(p,'w').write(json.dumps(d, indent=2)+'\n')" "$1/generation_config.json" "$2"
}
candidate runs/reuse/candidate perception,understanding
candidate runs/reuse/candidate-u understanding  # reported beside it, not judged: the rationale alone
score() {  # one scorer at a time into one store (rows already scored are skipped)
  $PY -m wamdiff2_ros.evaluation.paper_table score --registry runs/reuse/registry.yaml --runs runs/reuse \
    --split runs/data/synth-val-l9 --name val-l9 --store runs/reuse/val_l9.json --train runs/data8/synth-train \
    --cache runs/reuse/score_cache --mixed-scenes 0 --quiet --rows "$@" > "runs/reuse/log_score_$1.txt" 2>&1
}
echo "$(date -u +%T) scoring"
score exact
score reuse
[ "${SCORE_ONLY:-0}" = 1 ] && exit 0  # the timing wants the machine to itself: run it again when it is idle
echo "$(date -u +%T) paired speed"
[ -f runs/reuse/paired_val_l9.json ] || $PY bench/paired_speed.py --model exact=checkpoints/wamdiff2-tiny-b32 \
  --model reuse=runs/reuse/candidate --model reuse-u=runs/reuse/candidate-u --model ar=checkpoints/wamdiff2-tiny-ar \
  --baseline exact \
  --split runs/data/synth-val-l9 --scenes 40 --repeats 3 --threads 1 --json runs/reuse/paired_val_l9.json --quiet \
  > runs/reuse/log_speed.txt 2>&1
$PY runs/reuse/judge.py | tee runs/reuse/judge.json
echo "$(date -u +%T) done"
