"""The node suite against the MuJoCo mock arm (mock_hardware_node behind the raw hw/ topics).

    ros2 launch musculo_control mock_arm.launch.py [controller:=osc] [use_sim_time:=true]
        [use_rviz:=false] [use_robot_state_publisher:=false] [goal_mode:=trajectory]

``ros2 launch musculo_control mock_arm.launch.py --show-args`` lists every argument.

Discovery stays on this computer (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``; Humble:
``ROS_LOCALHOST_ONLY=1``) unless the environment sets either variable.
"""

from musculo_control.nodes.launch_builder import generate


def generate_launch_description():
    return generate(mock=True)
