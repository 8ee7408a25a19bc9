"""The test side: what exercises the controller and its nodes, never what runs the robot.

The nodes that run the arm (``musculo_control.nodes``) import nothing from here; the tests, the
benchmarks, the fault matrices and the soak on the node graph do:

- :mod:`~musculo_control.sim.faults`: the fault catalogue and the injector, shared by the
  ROS-free runner's fault matrix (:mod:`musculo_control.sim.fault_matrix`) and the node graph's;
- :mod:`~musculo_control.testing.node_injection`,
  :mod:`~musculo_control.testing.injecting_activation_qp_node`,
  :mod:`~musculo_control.testing.injecting_mock_hardware_node`: the same injector inside a
  running graph, through stand-ins of the controller and mock arm nodes that a graph launches
  in their place when it injects;
- :mod:`~musculo_control.testing.observer`: an rclpy node that watches a running graph from
  outside and acts as an operator;
- :mod:`~musculo_control.testing.graph_faults` and :mod:`~musculo_control.testing.graph_soak`:
  the fault matrix and the soak on the node graph (``musculo simulate faults --graph``,
  ``musculo soak --graph``);
- :mod:`~musculo_control.testing.machine_load`: busy loops that load the machine on purpose.

The modules that start or watch nodes need rclpy; the others are ROS-free.
"""
