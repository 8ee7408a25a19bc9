"""``musculo bench``: timing the control tick on the computer that will run it.

A user feature, installed with the package: a lab times its own computer (the 125 Hz tick with
each solver, the dynamics snapshot, both fused, a set-up-every-tick baseline, larger synthetic
arms) against the targets of its config folder's ``bench.yaml``, from the same virtual
environment that runs the controller. Nothing here is part of the controller; the controller
imports none of it.

- :mod:`~musculo_control.tick_benchmark.config`: ``bench.yaml``;
- :mod:`~musculo_control.tick_benchmark.measure`: timing statistics, the machine's load and the
  verdicts it allows, the reports;
- :mod:`~musculo_control.tick_benchmark.tick`: the tick benchmark itself;
- :mod:`~musculo_control.tick_benchmark.fresh_qp`: its baselines, the QP set up from scratch
  every tick.

The repository's ``benchmarks/`` scripts (dynamics, mock arm, runner, node graph, solver field)
share ``config`` and ``measure``; what only they use stays with them in ``benchmarks/``.
"""
