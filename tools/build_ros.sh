#!/usr/bin/env bash
# Build this package's messages, nodes, launch and config files with colcon into install/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck disable=SC1091
. .venv/bin/activate
export AMENT_PREFIX_PATH=$VIRTUAL_ENV CMAKE_PREFIX_PATH=$VIRTUAL_ENV
# CMake refuses to export include directories that lie in the source tree, and the
# venv (hence numpy's headers) lives here: give CMake a path outside it.
LINK_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/wamdiff2_ros/$(printf %s "$ROOT" | sha1sum | cut -c1-12)
mkdir -p "$LINK_DIR"
ln -sfn "$(python -c 'import numpy; print(numpy.get_include())')" "$LINK_DIR/numpy-include"
python tools/fix_ros_cmake_paths.py "$VIRTUAL_ENV" "$LINK_DIR/numpy-include"
echo "[setup] colcon build (messages, nodes, launch, config) -> install/"
colcon --log-base log build --symlink-install \
  --cmake-args -DPython3_EXECUTABLE="$VIRTUAL_ENV/bin/python" \
  -DPython3_NumPy_INCLUDE_DIR="$LINK_DIR/numpy-include" -DBUILD_TESTING=OFF \
  > log/colcon-last.txt 2>&1 || { cat log/colcon-last.txt; exit 1; }
tail -n 2 log/colcon-last.txt
# Test-only interface packages (ackermann_msgs, carla_msgs: not on PyPI) into a prefix
# of their own under build/, which only the tests use; never part of install/.
echo "[setup] colcon build (test-only interfaces: test/interfaces) -> build/test_interfaces/install"
colcon --log-base log build --base-paths test/interfaces \
  --build-base build/test_interfaces/build --install-base build/test_interfaces/install \
  --cmake-args -DPython3_EXECUTABLE="$VIRTUAL_ENV/bin/python" \
  -DPython3_NumPy_INCLUDE_DIR="$LINK_DIR/numpy-include" -DBUILD_TESTING=OFF \
  > log/colcon-test-interfaces.txt 2>&1 || { cat log/colcon-test-interfaces.txt; exit 1; }
tail -n 2 log/colcon-test-interfaces.txt
