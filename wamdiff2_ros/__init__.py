"""wamdiff2_ros: drive a car with WAM-Diff2, a block-causal discrete-diffusion VLA.

The core (``model``, ``decoding``, ``training``, ``data``, ``evaluation``) never
imports ROS; ``ros`` holds the rclpy nodes. The generated message module
``wamdiff2_ros.msg`` comes from the colcon build (``install/``): the package path is
extended so that a source checkout and the colcon install space form one package.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

__version__ = "0.1.0"  # the one place the version is written (setup.py reads it; package.xml must match)
