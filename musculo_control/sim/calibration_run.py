"""``musculo calibrate --sim``: the calibration procedure on the mock arm, without ROS.

The mock arm (:class:`~musculo_control.sim.mock_arm.MockArm`) stands where the real arm
would: it is held at ``hold_pose_rad`` (by default the calibration pose; elsewhere to see the
procedure refuse) while the :class:`~musculo_control.hardware.calibrator.Calibrator` wants the
arm held, then let go; its raw samples at the sensor rate feed the calibrator, whose tensions go
back in driver units, as the graph path sends them on hw/tendon_commands.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from musculo_control.hardware.calibrator import Calibrator
from musculo_control.loop.timing import divisor
from musculo_control.sim.mock_arm import MockArm


def calibrate_on_mock(mock: MockArm, calibrator: Calibrator, sensor_rate_hz: float,
                      hold_pose_rad: npt.ArrayLike | None = None,
                      file: str = "hardware.yaml") -> Calibrator:
    """Run ``calibrator`` to its end on ``mock`` (sampled at ``sensor_rate_hz`` [Hz])."""
    cal = calibrator.cal
    q0 = cal.calibration_pose_rad if hold_pose_rad is None else np.asarray(hold_pose_rad, float)
    mock.reset(q0, 0.0)
    div = divisor(sensor_rate_hz, mock.dt_s, file, "rates.sensor_rate_hz")
    limit_steps = int(2.0 * calibrator.duration_s() / mock.dt_s) + 10 * div
    for _ in range(0, limit_steps, div):
        pot = mock.read_potentiometers()
        enc, cell = mock.read_tendons()
        calibrator.offer(mock.time_s, pot, enc, cell)
        if calibrator.finished:  # the arm is left as it is (held, if it was refused held)
            break
        mock.held = calibrator.held
        mock.set_command(cal.n_to_driver(calibrator.command_n()))
        for _ in range(div):
            mock.step()
    return calibrator
