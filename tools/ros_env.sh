#!/usr/bin/env bash
# Run a command inside the project's environment: the venv plus the colcon install
# space (generated messages, node executables). Usage: tools/ros_env.sh CMD [ARGS...]
set -eo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
. .venv/bin/activate
# shellcheck disable=SC1091
. install/setup.bash
export AMENT_PREFIX_PATH="$AMENT_PREFIX_PATH:$VIRTUAL_ENV"
# Stay on this machine: nodes of parallel runs must not hear each other across hosts.
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
export WAMDIFF2_REQUIRE_ROS=1
exec "$@"
