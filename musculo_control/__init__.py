"""musculo_control: biomimetic operational space control for tendon-driven arms.

Everything in this package except :mod:`musculo_control.nodes` is ROS-free and works on numpy
arrays; the ROS 2 nodes are thin shells over it.
"""

__version__ = "0.1.0"
