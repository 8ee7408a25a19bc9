"""The loop's topic names, named once (the stages, the nodes and the lockstep use these)."""

from __future__ import annotations

POTENTIOMETERS = "hw/potentiometers"  # raw ADC counts per joint (arm -> potentiometer node)
TENDON_STATES = "hw/tendon_states"  # encoder and load-cell counts (arm -> tendon driver)
TENDON_COMMANDS = "hw/tendon_commands"  # driver units per actuator (tendon driver -> arm)
JOINT_STATES = "joint_states"  # rad, rad/s (potentiometer node -> dynamics, QP)
MUSCLE_STATES = "muscle_states"  # length, speed, tension (tendon driver -> QP)
MUSCLE_COMMANDS = "muscle_commands"  # tension [N] (QP -> tendon driver)
DYNAMICS = "dynamics"  # the 20 Hz snapshot (dynamics node -> QP)
CONTROLLER_ACTIVATIONS = "controller/activations"  # the QP's activations, with its tick's stamp
