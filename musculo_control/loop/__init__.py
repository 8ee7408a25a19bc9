"""The one control loop, stage by stage, without ROS.

Every executable of the node graph holds one stage object from this package, and the ROS-free
runner (:mod:`musculo_control.sim.runner`) composes the very same objects in simulated time:

- :class:`~musculo_control.loop.potentiometer_stage.PotentiometerStage`: raw counts -> joint
  states (``potentiometer_node``);
- :class:`~musculo_control.loop.tendon_stage.TendonStage`: tension commands -> driver units, raw
  tendon counts -> muscle states (``tendon_driver_node``);
- :class:`~musculo_control.loop.dynamics_stage.DynamicsStage`: joint states -> the 20 Hz
  dynamics snapshot (``dynamics_node``);
- :class:`~musculo_control.loop.control_step.ControlStep`: the newest inputs and the goal ->
  the 125 Hz tension command and its safety report (``activation_qp_node``);
- :class:`~musculo_control.sim.mock_stage.MockStage`: the MuJoCo arm behind the raw topics
  (``mock_hardware_node``).

A node only converts messages, keeps time and publishes; what a stage decides (which input it
refuses, when it falls back to minimum tension, what it reports) is decided here, once.
:mod:`~musculo_control.loop.timing` holds the tick schedule both use, and
:mod:`~musculo_control.loop.build` builds every stage from a config folder.
:mod:`musculo_control.nodes.graph` describes the node graph itself, once.
"""
