"""Write requirements.lock: exact versions of the venv's installed distributions.

`pip freeze` also lists the `*.egg-info` folders that the ROS 2 wheels ship inside
them (e.g. `action_msgs`), which are not PyPI distributions; only `.dist-info`
entries are real installs, so only those are locked.
"""

from __future__ import annotations

import importlib.metadata as md
import sys

SKIP = {"wamdiff2-ros", "wamdiff2_ros", "pip"}


def main() -> int:
    pins = {}
    for dist in md.distributions():
        path = str(getattr(dist, "_path", ""))
        name = dist.metadata["Name"]
        if not path.endswith(".dist-info") or not name or name.lower() in SKIP:
            continue
        version = dist.version.split("+")[0] if name.lower() == "torch" else dist.version
        pins[name.lower()] = f"{name}=={version}"
    print("# Generated from requirements.in by `make lock`. Python 3.11, x86_64. Do not edit.")
    for key in sorted(pins):
        print(pins[key])
    return 0


if __name__ == "__main__":
    sys.exit(main())
