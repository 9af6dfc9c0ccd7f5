"""Installs the ROS-free core and the `wamdiff2` command (`pip install .`).

The ROS 2 side (messages, node executables, launch and config files) is built by
colcon from CMakeLists.txt; see README.md.
"""

import re
from pathlib import Path

from setuptools import find_packages, setup

# the version is written once, in wamdiff2_ros/__init__.py (read as text: no import of the package here)
VERSION = re.search(r'^__version__ = "([^"]+)"', (Path(__file__).parent / "wamdiff2_ros" / "__init__.py").read_text(),
                    re.MULTILINE).group(1)

setup(
    name="wamdiff2_ros",
    version=VERSION,
    description="WAM-Diff2 block-diffusion driving VLA as a ROS 2 package",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["wamdiff2_ros", "wamdiff2_ros.*"], exclude=["wamdiff2_ros.msg"]),
    # files the package reads at run time (the tokenizer a fresh model is built with); presets are Python
    package_data={"wamdiff2_ros.model": ["assets/*"]},
    install_requires=[
        "torch>=2.4",
        "transformers>=4.57",
        "tokenizers",
        "safetensors",
        "numpy",
        "opencv-python-headless",
        "pyyaml",
        "tqdm",
        "matplotlib",
        "rosbags",
        "rosbags-image",
        "pycocotools",
    ],
    extras_require={"gpu": ["flashinfer-python"], "test": ["pytest", "hypothesis", "ruff"]},
    entry_points={"console_scripts": ["wamdiff2 = wamdiff2_ros.cli:main"]},
)
