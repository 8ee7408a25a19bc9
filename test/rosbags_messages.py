"""The rosbags message factory, for the tests (it lives in the package: the run logs use it)."""

from musculo_control.sim.rosbag_log import RosbagsMessages

__all__ = ["RosbagsMessages"]
