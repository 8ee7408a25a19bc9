"""``musculo identify``: the mock arm's unknowns fitted from the robot's own bags.

- :mod:`.config`: ``identify.yaml`` (which parameters, their physical bounds, the windows, the
  residual scales, the thresholds that call a parameter determined);
- :mod:`.recording`: a bag of the graph's topics as numpy arrays (joint angles and rates,
  measured tensions, commanded tensions on one clock);
- :mod:`.windows`: the mock arm with a parameter vector, started from the recorded state and
  driven by the recorded commands over short windows (the prediction);
- :mod:`.fit`: the bounded robust least-squares fit, its covariance and what it determined;
- :mod:`.report`: the prediction error over horizons, default mock against identified;
- :mod:`.overlay`: the ``mock_arm.yaml`` overlay with the fitted values and their uncertainty.

Everything here is ROS-free and takes numpy arrays; the bag is read with ``rosbags``.
"""
