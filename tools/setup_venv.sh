#!/usr/bin/env bash
# Create .venv with the locked dependencies and install this package (editable) into it.
# Idempotent: pip skips what is already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
echo "[setup] installing locked dependencies (requirements.lock)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
echo "[setup] installing wamdiff2_ros (editable) and the wamdiff2 command"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  -e . --config-settings editable_mode=compat
