"""The node suite against the real arm (its drivers publish and take the raw hw/ topics).

    ros2 launch musculo_control arm.launch.py [controller:=osc] [use_rviz:=false] ...

``ros2 launch musculo_control arm.launch.py --show-args`` lists every argument.

Discovery is left as the environment says. On a lab network, before launching: a
``ROS_DOMAIN_ID`` of this robot's own; ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` (Humble:
``ROS_LOCALHOST_ONLY=1``) when every node and the arm's drivers run on this computer, else
``SUBNET`` with ``ROS_STATIC_PEERS`` naming the other computers; and ``secure:=true`` with a
keystore (doc/ros.md "Command authority", "SROS2").
"""

from musculo_control.nodes.launch_builder import generate


def generate_launch_description():
    return generate(mock=False)
