"""Hardware logic and the mock arm, all ROS-free.

- ``calibration``: raw <-> SI per joint and per actuator (``hardware.yaml``);
- ``potentiometer``: counts -> joint angle, filtered velocity, faults;
- ``tendon_driver``: tension commands -> clamped, rate-limited driver units with a watchdog;
  encoder and load-cell counts -> muscle length, speed and tension;
- ``mujoco_arm``: the MuJoCo model built in code from the URDF and muscles file;
- ``mock_arm``: that model with actuator lag, motor envelope, friction, model error, raw sensors
  and a force gauge.
"""
