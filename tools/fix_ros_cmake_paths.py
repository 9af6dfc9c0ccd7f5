"""Point the PyPI ROS 2 wheels' exported CMake targets at this machine's Python and numpy.

The `ros-kilted-*` message wheels were built in a manylinux container; their
`*__rosidl_generator_pyExport.cmake` files name that container's include directories
(`/opt/python/cp311-cp311/...`), which do not exist here, so CMake refuses to
generate. This rewrites the include line of those files inside the venv only
(nothing under /opt is touched) to this interpreter's include directory and the
numpy include directory given on the command line. That numpy path must lie outside
the source tree: CMake refuses to export include directories inside it, and the
venv lives in the repository (tools/build_ros.sh, which runs this, links it from a
cache directory). Idempotent.

usage: python fix_ros_cmake_paths.py VENV_PREFIX NUMPY_INCLUDE_DIR
"""

from __future__ import annotations

import pathlib
import re
import sys
import sysconfig

LINE = re.compile(r'^(\s*INTERFACE_INCLUDE_DIRECTORIES\s+)"[^"\n]*"', re.MULTILINE)


def main(prefix: str, numpy_include: str) -> int:
    value = f"{sysconfig.get_paths()['include']};{numpy_include}"
    changed = 0
    for path in sorted(pathlib.Path(prefix, "share").glob("*/cmake/*__rosidl_generator_pyExport.cmake")):
        text = path.read_text()
        new = LINE.sub(lambda m: f'{m.group(1)}"{value}"', text)
        if new != text:
            path.write_text(new)
            changed += 1
    print(f"fix_ros_cmake_paths: {changed} CMake export file(s) rewritten under {prefix}/share")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
