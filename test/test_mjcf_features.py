"""The MJCF features of the field's models, each on a small model written for these tests
(test/mjcf/): a coupled joint pair (a polynomial joint equality constraint), a body with two
hinges, chains of joint-less bodies, wrapping tendons.

The controller's rigid-body terms in reduced coordinates (model/mujoco_body.py) are checked
against oracles that do not share their derivation: MuJoCo's own constrained forward dynamics
(its solver enforces the coupling; ours eliminates it), the kinetic and potential energy MuJoCo
computes, and finite differences of frame poses and tendon lengths.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from musculo_control.model.joint_coupling import JointCoupling
from musculo_control.model.mujoco_body import MujocoBody
from musculo_control.model.mujoco_tendons import MujocoTendonGeometry, compile_spec, mjcf_spec

MODELS = Path(__file__).parent / "mjcf"
FEATURES = ("coupled_pair", "two_hinge_body", "jointless_chain", "wrapping_tendon")


class Backend:
    """The controller's MuJoCo backend of one test model, and a reference MjModel.

    ``coupled_pair_linear``: the coupled pair with a linear polynomial (MyoArm's kind), which
    takes the coupling's fast path (constant G, no convective term).
    """

    def __init__(self, name: str, folder: Path | None = None) -> None:
        self.path = MODELS / f"{name}.xml"
        if name == "coupled_pair_linear":
            self.path = Path(folder or MODELS) / f"{name}.xml"
            text = (MODELS / "coupled_pair.xml").read_text()
            self.path.write_text(text.replace('polycoef="0.1 0.4 0.2 0 0"',
                                              'polycoef="0.1 0.4 0 0 0"'))
        self.model = compile_spec(mjcf_spec(self.path), self.path)
        self.model.dof_damping[:] = 0.0  # the oracles integrate no friction
        self.coupling = JointCoupling(self.model, str(self.path))
        self.body = MujocoBody(self.model, self.coupling)
        self.frame = self.body.find_frame("palm", np.zeros(3))
        tendons = tuple(self.model.tendon(t).name for t in range(self.model.ntendon))
        self.geometry = MujocoTendonGeometry(self.body, self.path, tendons, tendons, "test")
        self.n = self.coupling.n
        # MuJoCo's own dynamics of the same file, its muscle actuators taken out (their force
        # needs the length ranges the controller's compile skips): the oracle
        spec = mjcf_spec(self.path)
        for actuator in spec.actuators:
            spec.delete(actuator)
        self.oracle = compile_spec(spec, self.path)
        self.oracle.dof_damping[:] = 0.0

    def poses(self, count: int, seed: int) -> np.ndarray:
        lo, hi = self.body.lower_rad + 0.05, self.body.upper_rad - 0.05
        return lo + (hi - lo) * np.random.default_rng(seed).random((count, self.n))

    def speeds(self, count: int, seed: int) -> np.ndarray:
        return np.random.default_rng(seed + 100).uniform(-2.0, 2.0, (count, self.n))


@pytest.fixture(scope="module", params=(*FEATURES, "coupled_pair_linear"))
def backend(request, tmp_path_factory):
    return Backend(request.param, tmp_path_factory.mktemp("linear"))


def test_the_models_have_their_feature():
    coupled = Backend("coupled_pair")
    assert [coupled.model.joint(j).name for j in coupled.coupling.coupled] == ["wrist"]
    assert coupled.n == 2 and coupled.model.nv == 3
    two = Backend("two_hinge_body")
    assert two.model.body_jntnum[two.model.body("upper_arm").id] == 2
    chain = Backend("jointless_chain")
    jointless = [chain.model.body(b).name for b in range(1, chain.model.nbody)
                 if chain.model.body_jntnum[b] == 0]
    assert jointless == ["torso", "clavicle", "scapula", "carpal", "metacarpal"]
    wrap = Backend("wrapping_tendon")
    kinds = set(wrap.model.wrap_type.tolist())
    assert {int(mujoco.mjtWrap.mjWRAP_SPHERE), int(mujoco.mjtWrap.mjWRAP_CYLINDER)} <= kinds
    assert int(mujoco.mjtTrn.mjTRN_JOINT) not in wrap.model.actuator_trntype.tolist()


def test_the_coupling_basis_and_convective_term_match_finite_differences():
    """G = dq/du and Gd ud = d2q/dt2 at udd = 0, against differences of q = phi(u)."""
    b = Backend("coupled_pair")
    c = b.coupling
    h = 1e-5
    for u, ud in zip(b.poses(20, 1), b.speeds(20, 1)):
        q = c.qpos(u)
        G = c.basis(q)
        fd = np.column_stack([(c.qpos(u + h * e) - c.qpos(u - h * e)) / (2 * h)
                              for e in np.eye(b.n)])
        np.testing.assert_allclose(G, fd, atol=1e-9)
        qvel = np.zeros(b.model.nv)
        c.velocity(q, ud, qvel)
        np.testing.assert_allclose(qvel, G @ ud, atol=1e-12)
        second = (c.qpos(u + h * ud) - 2 * q + c.qpos(u - h * ud)) / h**2
        np.testing.assert_allclose(c.convective(q, qvel), second, atol=1e-4)
        # the MJCF's polynomial itself: wrist = 0.1 + 0.4 d + 0.2 d^2, d = elbow
        elbow, wrist = q[b.model.joint("elbow").qposadr[0]], q[b.model.joint("wrist").qposadr[0]]
        assert wrist == pytest.approx(0.1 + 0.4 * elbow + 0.2 * elbow**2, abs=1e-14)


def test_the_reduced_dynamics_are_mujocos_constrained_dynamics(backend):
    """Torques on the independent joints at a consistent (q, qd): MuJoCo's forward dynamics
    (its constraint solver, soft but stiff here) against the reduced equations,
    udd = M_u^-1 (tau_u - g_u - (C qd)_u), qdd = G udd + Gd ud. Without couplings this is exact.

    MuJoCo's solver asks J_eq qdd = a_ref of a joint coupling, leaving out the constraint's
    d(J_eq)/dt qd; its acceleration is therefore the reduced one without the convective term
    M Gd ud in (C qd)_u, and with no Gd ud added. That term is taken here from second
    differences of phi (not from the code under test)."""
    b = backend
    m, data = b.oracle, mujoco.MjData(b.oracle)
    ws = b.body.workspace()
    rng = np.random.default_rng(3)
    coupled = not b.coupling.trivial
    full = np.zeros((m.nv, m.nv))
    h = 1e-4
    for u, ud in zip(b.poses(15, 2), b.speeds(15, 2)):
        tau = rng.uniform(-5.0, 5.0, b.n)
        terms = b.body.dynamics(ws, u, ud, b.frame)
        b.coupling.fill_qpos(data.qpos, u)
        b.coupling.velocity(data.qpos, ud, data.qvel)
        data.qfrc_applied[:] = 0.0
        data.qfrc_applied[b.coupling.dof_adr] = tau
        mujoco.mj_forward(m, data)
        G = b.coupling.basis(data.qpos)
        convective = (b.coupling.qpos(u + h * ud) - 2 * b.coupling.qpos(u) +
                      b.coupling.qpos(u - h * ud)) / h**2
        mujoco.mj_fullM(m, data, full)
        torque = tau - terms.gravity_torque - terms.coriolis_torque + G.T @ full @ convective
        expected = G @ (terms.mass_matrix_inverse @ torque)
        scale = np.abs(expected).max()
        tol = 1e-3 * scale if coupled else 1e-9 * scale
        np.testing.assert_allclose(data.qacc, expected, atol=tol)
        # and the exact reduced acceleration is MuJoCo's plus the convective terms
        udd = terms.mass_matrix_inverse @ (tau - terms.gravity_torque - terms.coriolis_torque)
        exact = G @ udd + b.coupling.convective(data.qpos, data.qvel)
        np.testing.assert_allclose(exact, expected + convective -
                                   G @ terms.mass_matrix_inverse @ G.T @ full @ convective,
                                   atol=1e-4 * scale)


def test_the_reduced_mass_matrix_is_the_kinetic_energy(backend):
    """0.5 ud^T M_u ud equals MuJoCo's kinetic energy at qd = d phi(u + s ud)/ds."""
    b = backend
    m, data = b.oracle, mujoco.MjData(b.oracle)
    m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    ws = b.body.workspace()
    h = 1e-6
    for u, ud in zip(b.poses(10, 4), b.speeds(10, 4)):
        M = b.body.dynamics(ws, u, ud, b.frame).mass_matrix
        np.testing.assert_allclose(M, M.T, atol=1e-14)
        data.qpos[:] = b.coupling.qpos(u)
        data.qvel[:] = (b.coupling.qpos(u + h * ud) - b.coupling.qpos(u - h * ud)) / (2 * h)
        mujoco.mj_forward(m, data)
        assert 0.5 * ud @ M @ ud == pytest.approx(data.energy[1], rel=1e-7)


def test_the_gravity_torque_is_the_gradient_of_the_potential_energy(backend):
    b = backend
    m, data = b.oracle, mujoco.MjData(b.oracle)
    m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    ws = b.body.workspace()
    h = 1e-6

    def potential(u: np.ndarray) -> float:
        data.qpos[:] = b.coupling.qpos(u)
        mujoco.mj_forward(m, data)
        return float(data.energy[0])

    for u in b.poses(10, 5):
        g = b.body.gravity_torque(ws, u)
        fd = np.array([(potential(u + h * e) - potential(u - h * e)) / (2 * h)
                       for e in np.eye(b.n)])
        np.testing.assert_allclose(g, fd, atol=1e-6 * max(1.0, np.abs(g).max()))


def _rotation_vector(R: np.ndarray) -> np.ndarray:
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, R.reshape(-1))
    vel = np.zeros(3)
    mujoco.mju_quat2Vel(vel, quat, 1.0)
    return vel


def test_the_frame_jacobian_matches_finite_differences(backend):
    """[v; w] columns of the palm site against differences of its position and orientation."""
    b = backend
    ws = b.body.workspace()
    h = 1e-6
    for u in b.poses(10, 6):
        J = b.body.jacobians(ws, u, (b.frame,))[0]
        fd = np.zeros((6, b.n))
        for k, e in enumerate(np.eye(b.n)):
            (p1, R1), = b.body.poses(ws, u + h * e, (b.frame,))
            (p0, R0), = b.body.poses(ws, u - h * e, (b.frame,))
            fd[:3, k] = (p1 - p0) / (2 * h)
            fd[3:, k] = _rotation_vector(R1 @ R0.T) / (2 * h)
        np.testing.assert_allclose(J, fd, atol=1e-7)
        # the twist is the Jacobian times the speed
        ud = np.ones(b.n)
        p, R, v, w = b.body.twist(ws, u, ud, b.frame)
        np.testing.assert_allclose(np.r_[v, w], J @ ud, atol=1e-12)


def test_tendon_lengths_and_moment_arms_match_finite_differences(backend):
    """dl/du of every tendon (wrapping, fixed, over coupled joints) against differences."""
    b = backend
    h = 1e-7
    for u in b.poses(15, 7):
        kin = b.geometry.kinematics_at(u)
        fd = np.column_stack([(b.geometry.lengths_at(u + h * e) -
                               b.geometry.lengths_at(u - h * e)) / (2 * h)
                              for e in np.eye(b.n)])
        np.testing.assert_allclose(kin.jacobian, fd, atol=1e-6)
        np.testing.assert_array_equal(kin.length_m, b.geometry.lengths_at(u))


def test_a_linear_coupling_takes_the_fast_path_and_agrees_with_the_general_one(tmp_path):
    b = Backend("coupled_pair_linear", tmp_path)
    assert b.coupling.linear
    u, ud = b.poses(1, 9)[0], b.speeds(1, 9)[0]
    q = b.coupling.qpos(u)
    np.testing.assert_array_equal(b.coupling.convective(q, np.ones(b.model.nv)), 0.0)
    G = b.coupling.basis(q)
    assert not G.flags.writeable  # shared, constant
    h = 1e-6
    fd = np.column_stack([(b.coupling.qpos(u + h * e) - b.coupling.qpos(u - h * e)) / (2 * h)
                          for e in np.eye(b.n)])
    np.testing.assert_allclose(G, fd, atol=1e-9)
    qvel = np.zeros(b.model.nv)
    b.coupling.velocity(q, ud, qvel)
    np.testing.assert_allclose(qvel, G @ ud, atol=1e-14)


def test_joint_ranges_of_coupled_joints_narrow_their_driver(tmp_path):
    """The wrist's range [-0.5, 1.5] ends the elbow where 0.1 + 0.4 d + 0.2 d^2 = 1.5."""
    b = Backend("coupled_pair")
    k = b.body.joint_names.index("elbow")
    root = (-0.4 + np.sqrt(0.16 + 4 * 0.2 * 1.4)) / (2 * 0.2)
    assert b.body.upper_rad[k] == pytest.approx(min(root, 2.0), abs=1e-9)
    assert any("elbow narrowed" in note for note in b.body.limit_notes) == (root < 2.0)


@pytest.mark.parametrize("edit, expected", [
    ('<joint name="again" joint1="wrist" joint2="shoulder"/>', "coupled twice"),
    ('<joint name="loop" joint1="elbow" joint2="wrist"/>', "without a cycle"),
    ('<weld body1="hand"/>', "WELD"),
])
def test_couplings_that_cannot_be_reduced_are_refused(tmp_path, edit, expected):
    from musculo_control.errors import ConfigError

    text = (MODELS / "coupled_pair.xml").read_text()
    path = tmp_path / "arm.xml"
    path.write_text(text.replace("</equality>", f"{edit}</equality>"))
    model = compile_spec(mjcf_spec(path), path)
    with pytest.raises(ConfigError) as info:
        JointCoupling(model, str(path))
    assert expected in str(info.value)
