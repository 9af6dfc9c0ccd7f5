#!/usr/bin/env bash
# The whole WAM-Diff2 ladder on synthetic data, from nothing to docs/RESULTS.md:
#   synthetic NAVSIM logs -> stage 0 AR (tiny and small) -> stage I B=1->4->8->16->32 (both)
#   -> stage II block distillation (tiny, B=4 teacher -> B=32) -> stage III model distillation
#   (small B=32 -> tiny B=32) -> held-out evaluation -> docs/RESULTS.md (+ docs/images/ plots).
# Then the continued runs (`long`: AR +2000 steps, the stage III student +1500 steps at B=32) and the
# `v2` chain (stage I again from the continued AR, a long B=32 stage, stage II forked at step 1000), and the
# `v3` runs (the v2 B=32 model trained on the AR teacher's answers, without and with certainty forcing), and the
# `v4` runs (the shipped v3 student, certainty 1.0, on the training scenes and on twice as many teacher-labelled
# scenes), and the `v5` run (v4 on the training scenes continued on twice as many at certainty 2.0).
# The runs of the tiny, small and final phases (and their order, configs, starts, teachers), the final comparison's
# rows and what the page shows are data: docs/runs/index.yaml.
# Usage: tools/reproduce.sh [all|data|train|long|v2|v3|v4|v5|eval|final-eval|tiny|small|final]
#   (env: PY, RUNS, NPROC, EVAL_LIMIT, SHIP=1 copies checkpoints)
# The small-teacher chain runs concurrently with the tiny chain (two single-thread processes).
# NPROC>1 runs every stage under torchrun (DDP, gloo on CPU, NCCL on GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
NPROC=${NPROC:-1}
EVAL_LIMIT=${EVAL_LIMIT:-30}
PHASE=${1:-all}
CFG=config/train

train() {  # train SUBCOMMAND CONFIG [overrides...]
  local sub=$1 cfg=$2; shift 2
  local name; name=$(basename "$cfg" .yaml)
  echo "=== $(date +%T) $sub $name"
  local cmd=("$PY" -m wamdiff2_ros.cli)
  if [ "$NPROC" -gt 1 ]; then cmd=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m wamdiff2_ros.cli); fi
  "${cmd[@]}" train "$sub" --config "$CFG/$cfg" \
    "data.logs_dir=$RUNS/data/synth-train" "data.cache_dir=$RUNS/cache" progress=false "$@"
}

paths() {  # rewrite the configs' runs/ paths under $RUNS
  local out=$1 init=${2:-} teacher=${3:-}
  echo "output_dir=$RUNS/$out"
  if [ -n "$init" ]; then echo "init=$RUNS/$init"; fi
  if [ -n "$teacher" ]; then echo "teacher=$RUNS/$teacher"; fi
}

data() {
  "$PY" - "$RUNS" <<'PYEOF'
import sys
from pathlib import Path
from wamdiff2_ros.data.synth import synthesize
runs = Path(sys.argv[1])
# synth-train-x2: the training worlds plus as many more (seed 3), for the teacher to label (v4)
for split, logs, frames, seed in (("synth-train", 24, 60, 1), ("synth-heldout", 4, 40, 2),
                                  ("synth-train-x2", 24, 60, 1), ("synth-train-x2", 24, 60, 3)):
    if not (runs / "data" / split / "navsim_logs" / "synthetic" / f"synthetic_s{seed}_0000.pkl").is_file():
        synthesize(runs / "data" / split, num_logs=logs, num_frames=frames, seed=seed, size=(256, 128))
PYEOF
}

index() {  # the run registry docs/runs/index.yaml: --chain PHASE (its runs in order) | --final (row keys)
  "$PY" -m wamdiff2_ros.evaluation.ladder_index "$@"
}

chain() {  # chain PHASE: train the phase's runs of the index in order, each from its `after` run (and teacher)
  local text spec specs run sub cfg after teacher
  text=$(index --chain "$1")
  mapfile -t specs <<< "$text"
  for spec in "${specs[@]}"; do
    read -r run sub cfg after teacher <<< "$spec"
    mapfile -t p < <(paths "$run" "${after#-}" "${teacher#-}")
    train "$sub" "$cfg" "${p[@]}"
  done
}

small_chain() { chain small; }
tiny_chain() { chain tiny; }

train_all() {
  mkdir -p "$RUNS/logs"
  # Build the tokenised cache once before the two chains start.
  "$PY" - "$RUNS" <<'PYEOF'
import sys
from wamdiff2_ros.training.config import load_config
from wamdiff2_ros.data.tokenized import TokenizedDataset
from wamdiff2_ros.model.loader import init_model
runs = sys.argv[1]
cfg = load_config("config/train/ar.yaml", [f"data.logs_dir={runs}/data/synth-train", f"output_dir={runs}/tiny-ar"])
TokenizedDataset.build(cfg.data, init_model("tiny"), f"{runs}/cache")
PYEOF
  small_chain > "$RUNS/logs/small_chain.log" 2>&1 &
  local small=$!
  tiny_chain 2>&1 | tee "$RUNS/logs/tiny_chain.log"
  wait "$small" || { echo "small chain failed, see $RUNS/logs/small_chain.log"; exit 1; }
  final_stage 2>&1 | tee -a "$RUNS/logs/tiny_chain.log"
}

final_stage() {  # stage III: the small B=32 model teaches the tiny B=32 student
  chain final
}

model_files() {  # copy the model files of run $1's last checkpoint (not its trainer state) into folder $2
  mkdir -p "$RUNS/$2"
  find "$RUNS/$1/checkpoint" -maxdepth 1 -type f ! -name trainer_state.pt -exec cp {} "$RUNS/$2/" \;
}

promote() {  # a run stopped early (stop_after): its last checkpoint's model becomes the run's model
  model_files "$1" "$1"
}

long_runs() {  # the continued AR baseline and B=32 student (run side by side)
  mapfile -t p < <(paths tiny-ar-long tiny-ar)
  train ar ar.yaml "${p[@]}" steps=2800 stop_after=2000 lr=1e-3 warmup_steps=20 > "$RUNS/logs/ar_long.log" 2>&1 &
  local ar=$!
  mapfile -t p < <(paths tiny-b32-long tiny-b32-final)
  train adapt adapt_b32.yaml "${p[@]}" steps=1500 lr=5e-4 warmup_steps=20 2>&1 | tee "$RUNS/logs/b32_long.log"
  wait "$ar" || { echo "AR continuation failed, see $RUNS/logs/ar_long.log"; exit 1; }
  promote tiny-ar-long
}

v2_chain() {  # stage I from the continued AR with a long B=32 stage; stage II forked from its step-1000 model
  mapfile -t p < <(paths v2-b4 tiny-ar-long);   train adapt adapt_b4.yaml "${p[@]}" steps=150 lr=1e-3 warmup_steps=10 save_every=0
  mapfile -t p < <(paths v2-b8 v2-b4);          train adapt adapt_b8.yaml "${p[@]}" steps=80 lr=7e-4 save_every=0
  mapfile -t p < <(paths v2-b16 v2-b8);         train adapt adapt_b16.yaml "${p[@]}" steps=80 lr=7e-4 save_every=0
  mapfile -t p < <(paths v2-b32-s1000 v2-b16);  train adapt adapt_b32.yaml "${p[@]}" steps=4500 stop_after=1000 lr=7e-4 warmup_steps=20
  model_files v2-b32-s1000 v2-b32-s1000-model
  mapfile -t p < <(paths v2-b32-distill v2-b32-s1000-model v2-b4)
  train distill-block distill_block.yaml "${p[@]}" steps=2500 lr=5e-4 warmup_steps=20 save_every=250 \
    > "$RUNS/logs/v2_distill.log" 2>&1 &
  local distill=$!
  mv "$RUNS/v2-b32-s1000" "$RUNS/v2-b32"  # resume the same B=32 run to its end
  mapfile -t p < <(paths v2-b32 v2-b16);        train adapt adapt_b32.yaml "${p[@]}" steps=4500 lr=7e-4 warmup_steps=20
  wait "$distill" || { echo "stage II failed, see $RUNS/logs/v2_distill.log"; exit 1; }
}

v3_chain() {  # the v2 B=32 model trained on the AR teacher's answers (sequence-level KD), without / with certainty
  local targets="$RUNS/data/kd-targets-tiny-ar.json"
  "$PY" -m wamdiff2_ros.cli train relabel --teacher "$RUNS/tiny-ar-long" --config "$CFG/adapt_b32.yaml" \
    --out "$targets" "data.logs_dir=$RUNS/data/synth-train" "data.cache_dir=$RUNS/cache" "output_dir=$RUNS/v3-b32-kd"
  mapfile -t p < <(paths v3-b32-kd-cf v2-b32)
  train adapt adapt_b32.yaml "${p[@]}" "data.targets=$targets" certainty_weight=0.5 steps=3000 lr=3e-4 \
    warmup_steps=20 save_every=250 > "$RUNS/logs/v3_kd_cf.log" 2>&1 &
  local cf=$!
  mapfile -t p < <(paths v3-b32-kd v2-b32)
  train adapt adapt_b32.yaml "${p[@]}" "data.targets=$targets" steps=3500 lr=3e-4 warmup_steps=20 save_every=250
  wait "$cf" || { echo "v3 certainty run failed, see $RUNS/logs/v3_kd_cf.log"; exit 1; }
  # both continue the certainty run: at the same weight and at 1.0
  mapfile -t p < <(paths v3-b32-kd-cf2-w1 v3-b32-kd-cf)
  train adapt adapt_b32.yaml "${p[@]}" "data.targets=$targets" certainty_weight=1.0 steps=2700 lr=2e-4 \
    warmup_steps=20 save_every=250 > "$RUNS/logs/v3_kd_cf2_w1.log" 2>&1 &
  local w1=$!
  mapfile -t p < <(paths v3-b32-kd-cf2 v3-b32-kd-cf)
  train adapt adapt_b32.yaml "${p[@]}" "data.targets=$targets" certainty_weight=0.5 steps=2700 lr=2e-4 \
    warmup_steps=20 save_every=250
  wait "$w1" || { echo "v3 certainty 1.0 run failed, see $RUNS/logs/v3_kd_cf2_w1.log"; exit 1; }
}

v4_runs() {  # the shipped v3 student, certainty 1.0: on the training scenes / on twice as many (side by side)
  local targets="$RUNS/data/kd-targets-x2.json"
  "$PY" -m wamdiff2_ros.cli train relabel --teacher "$RUNS/tiny-ar-long" --config "$CFG/adapt_b32.yaml" \
    --out "$targets" "data.logs_dir=$RUNS/data/synth-train-x2" "data.cache_dir=$RUNS/cache" "output_dir=$RUNS/v4-b32-x2-w1"
  local common=("data.targets=$targets" certainty_weight=1.0 steps=3000 lr=2e-4 warmup_steps=20 save_every=250)
  mapfile -t p < <(paths v4-b32-w1 v3-b32-kd-cf2)
  train adapt adapt_b32.yaml "${p[@]}" "${common[@]}" > "$RUNS/logs/v4_w1.log" 2>&1 &
  local w1=$!
  mapfile -t p < <(paths v4-b32-x2-w1 v3-b32-kd-cf2)
  train adapt adapt_b32.yaml "${p[@]}" "${common[@]}" "data.logs_dir=$RUNS/data/synth-train-x2"
  wait "$w1" || { echo "v4 run failed, see $RUNS/logs/v4_w1.log"; exit 1; }
}

v5_run() {  # v4 (certainty 1.0, training scenes) continued on twice the teacher-labelled scenes at certainty 2.0
  mapfile -t p < <(paths v5-b32-x2-w2 v4-b32-w1)
  train adapt adapt_b32.yaml "${p[@]}" "data.targets=$RUNS/data/kd-targets-x2.json" certainty_weight=2.0 steps=2500 \
    lr=2e-4 warmup_steps=20 save_every=250 "data.logs_dir=$RUNS/data/synth-train-x2"
}

evaluate() {
  "$PY" -m wamdiff2_ros.evaluation.ladder_eval --runs "$RUNS" --heldout "$RUNS/data/synth-heldout" \
    --limit "$EVAL_LIMIT" --out docs/RESULTS.md --images docs/images
  final_eval
  if [ "${SHIP:-0}" = 1 ]; then
    "$PY" -m wamdiff2_ros.training.ship --runs "$RUNS"
  fi
}

final_eval() {  # the index's final rows (the shipped AR, the v3 to v5 students) on every held-out sample, timed together
  local rows
  rows=$(index --final)
  # shellcheck disable=SC2086  # one word per row key
  "$PY" -m wamdiff2_ros.evaluation.ladder_eval --runs "$RUNS" --heldout "$RUNS/data/synth-heldout" --limit 50 --only \
    --final $rows --final-speed 116 --speed-threads 1,2 --out docs/RESULTS.md --images docs/images
}

case "$PHASE" in
  data) data ;;
  train) train_all ;;
  tiny) tiny_chain ;;    # the parts of `train`, one at a time
  small) small_chain ;;
  final) final_stage ;;
  long) long_runs ;;
  v2) v2_chain ;;
  v3) v3_chain ;;
  v4) v4_runs ;;
  v5) v5_run ;;
  eval) evaluate ;;
  final-eval) final_eval ;;
  all) data; train_all; long_runs; v2_chain; v3_chain; v4_runs; v5_run; evaluate ;;
  *) echo "usage: $0 [all|data|train|long|v2|v3|v4|v5|eval|final-eval|tiny|small|final]"; exit 2 ;;
esac
