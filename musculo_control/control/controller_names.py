"""The controllers' names (what ``make_controller`` accepts), importable without the controllers."""

from __future__ import annotations

#: Controller names accepted by :func:`musculo_control.control.controller.make_controller`.
CONTROLLER_NAMES = ("osc", "osc-no-nullspace", "joint-stiffness", "muscle-stiffness")
