#!/usr/bin/env bash
# One prepared GPU decode benchmark (H200 or any CUDA GPU): the 2b-shape preset
# (Qwen3-VL-2B dimensions, random weights) in bf16, forwards/s and tokens/s for
# B = 1, 4, 8, 16, 32; fast engine with and without CUDA graphs, SDPA vs FlashInfer,
# plus the reference engine for the parity check. Results: $OUT/gpu_decode.json,
# $OUT/gpu_decode.png and $OUT/gpu_decode.log (OUT defaults to ./bench-out).
#
#   PYTHON=.venv/bin/python FLASHINFER_WHEEL=wheels/flashinfer_python-*.whl bash bench/gpu_decode.sh
#
# FlashInfer variants are skipped (and the reason logged) when flashinfer cannot be
# imported; without network, carry its wheel and point FLASHINFER_WHEEL at it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
LOG="$OUT/gpu_decode.log"
exec > >(tee -a "$LOG") 2>&1

echo "== $(date -u +%FT%TZ) gpu_decode.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PYTHON" -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__); assert torch.cuda.is_available(), "no CUDA device"'

if [[ -n "${FLASHINFER_WHEEL:-}" ]]; then
  "$PYTHON" -m pip install --no-deps --no-index "$FLASHINFER_WHEEL" || echo "flashinfer wheel install failed"
fi
ENGINES="reference,fast:sdpa+nographs,fast:sdpa+graphs"
if "$PYTHON" -c 'import flashinfer' 2>/dev/null; then
  ENGINES="$ENGINES,fast:flashinfer+nographs,fast:flashinfer+graphs"
else
  echo "flashinfer not importable: FlashInfer variants skipped"
fi

"$PYTHON" bench/decode.py --model "${MODEL:-2b-shape}" --device cuda --dtype bfloat16 \
  --blocks "${BLOCKS:-1,4,8,16,32}" --engines "${ENGINES_OVERRIDE:-$ENGINES}" \
  --samples "${SAMPLES:-4}" --max-new-tokens "${MAX_NEW_TOKENS:-128}" --threshold 0.9 \
  --json "$OUT/gpu_decode.json" --plot "$OUT/gpu_decode.png"
echo "== done $(date -u +%FT%TZ)"
