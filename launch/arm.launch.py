"""The node suite against the real arm (its drivers publish and take the raw hw/ topics).

    ros2 launch musculo_control arm.launch.py [controller:=osc] [use_rviz:=false] ...

``ros2 launch musculo_control arm.launch.py --show-args`` lists every argument.
"""

from musculo_control.nodes.launch_builder import generate


def generate_launch_description():
    return generate(mock=False)
