#!/usr/bin/env bash
# The replication rule end to end (docs/runs/paper.yaml): the shipped pair on an unseen split (runs/data/synth-rep),
# scored once into docs/results_paper.json as `rep`; the speed targets timed interleaved there at 1 and 2 threads; and
# issue 16's closed-loop table on unseen route seed 8. Each step is skipped when its output exists. One CPU-heavy job
# at a time: run it with nothing else on the machine.
set -euo pipefail
cd /work/main
PY=.venv/bin/python
bash runs/rep/data.sh
for row in cam8-b32-s3-t03p07u07 cam8-ar-equal; do
  echo "$(date -u +%T) scoring $row"
  $PY -m wamdiff2_ros.evaluation.paper_table score --runs runs/paper --split runs/data/synth-rep --name rep \
    --cache runs/rep/score_cache --quiet --rows "$row" > "runs/rep/log_score_$row.txt" 2>&1
done
echo "$(date -u +%T) paired speed"
[ -f runs/rep/paired_rep.json ] || $PY bench/paired_speed.py --model student=checkpoints/wamdiff2-tiny-b32 \
  --model ar=checkpoints/wamdiff2-tiny-ar --baseline ar --split runs/data/synth-rep --scenes 40 --repeats 3 \
  --threads 1,2 --json runs/rep/paired_rep.json --store docs/results_paper.json --name rep \
  --row student=cam8-b32-s3-t03p07u07 --row ar=cam8-ar-equal --quiet > runs/rep/log_speed.txt 2>&1
echo "$(date -u +%T) closed loop, route seed 8"
[ -f runs/rep/closed_loop_seed8.json ] || $PY -m wamdiff2_ros.cli eval closed-loop \
  --baselines autopilot,constant-velocity,ar,student,student+gate --routes 20 --seed 8 \
  --json runs/rep/closed_loop_seed8.json --report runs/rep/closed_loop_seed8 --workers 2 --threads 1 --plan-hz 2.0 \
  --physics-hz 20.0 --pdm-every 2 --image-size 256x128 --cameras CAM_F0 --max-new-tokens 128 --engine fast \
  --device cpu > runs/rep/log_closed_loop.txt 2>&1
echo "$(date -u +%T) done"
