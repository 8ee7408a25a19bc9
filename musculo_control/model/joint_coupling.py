"""Joints coupled by MuJoCo joint equality constraints, as reduced coordinates.

A joint equality constraint of an MJCF (``<equality><joint joint1="y" joint2="x"
polycoef="a0 a1 a2 a3 a4"/>``) ties joint ``y`` to joint ``x`` by a polynomial in MuJoCo's
convention (``engine_core_constraint.c``), both measured from their ``qpos0`` values:

    y - y0 = a0 + a1 d + a2 d^2 + a3 d^3 + a4 d^4,    d = x - x0;

without ``joint2`` the joint is held at ``y0 + a0``. MyoSuite's MyoArm moves its shoulder girdle
this way: 10 clavicle and scapula angles follow ``shoulder_elv`` linearly, and
``shoulder1_r2 = -elv_angle``.

The controller works in the independent joints ``u`` (every hinge or slide joint that is not a
``joint1``): the whole configuration is ``q = phi(u)``, its velocity ``qd = G(u) ud`` with
``G = dq/du``, its acceleration ``qdd = G udd + Gd ud`` (:meth:`JointCoupling.convective`). The
reduced dynamics, their derivation and their check are in doc/mjcf_models.md. A coupled joint
may follow another coupled joint (the chain is followed in order); a joint coupled twice, a
cycle, or any other kind of equality constraint (connect, weld, tendon, flex) is refused.

The joint limits of ``u`` are the independent joints' own, narrowed where a coupled joint would
leave its range (:meth:`JointCoupling.limits`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
import numpy.typing as npt

from musculo_control.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Joint types a controller coordinate can be.
_ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
#: Points per independent joint's range where the coupled joints' limits are checked.
_LIMIT_GRID = 2001


@dataclass(frozen=True)
class _Level:
    """Coupled joints whose driving joints are all known before this level: one vector step."""

    qpos: IntArray  # (k,) qpos address of each coupled joint
    dof: IntArray  # (k,) its dof address
    parent_qpos: IntArray  # (k,) qpos address of its driving joint (itself when none)
    parent_dof: IntArray  # (k,) dof address of the driving joint
    has_parent: npt.NDArray[np.bool_]  # (k,) False: held at y0 + a0
    y0: FloatArray  # (k,) qpos0 of the coupled joint
    x0: FloatArray  # (k,) qpos0 of the driving joint
    coef: FloatArray  # (5, k) a0..a4, a1..a4 zero where held (its slope is zero)
    offset: FloatArray  # (k,) y0 + a0
    linear: bool  # a2 = a3 = a4 = 0 for every joint of the level


class JointCoupling:
    """The map ``u -> q`` of an MJCF's joint equality constraints (module docstring).

    ``independent``: MuJoCo joint ids of the coordinates ``u``, in MuJoCo's order.
    """

    def __init__(self, model: mujoco.MjModel, file: str) -> None:
        self.model = model
        self.file = str(file)
        problems = []
        for j in range(model.njnt):
            if int(model.jnt_type[j]) not in _ONE_DOF:
                problems.append(f"joint '{model.joint(j).name}' of type "
                                f"{mujoco.mjtJoint(model.jnt_type[j]).name}")
        driver: dict[int, tuple[int, int]] = {}  # coupled joint -> (driving joint or -1, eq id)
        for e in range(model.neq):
            name = model.equality(e).name or f"#{e}"
            kind = int(model.eq_type[e])
            if not model.eq_active0[e]:
                continue  # switched off in the model: MuJoCo does not enforce it either
            if kind != int(mujoco.mjtEq.mjEQ_JOINT):
                problems.append(f"equality constraint '{name}' ({mujoco.mjtEq(kind).name}): "
                                f"only joint couplings (mjEQ_JOINT) can be reduced")
                continue
            y, x = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
            if y in driver:
                problems.append(f"joint '{model.joint(y).name}' coupled twice (equality "
                                f"constraints '{model.equality(driver[y][1]).name}' and "
                                f"'{name}')")
                continue
            driver[y] = (x, e)
        if problems:
            raise ConfigError(file, "<model>", "a fixed-base arm of hinge and slide joints, "
                              "coupled at most by joint equality constraints", problems)
        order = self._ordered(driver, file)
        self.independent: tuple[int, ...] = tuple(
            j for j in range(model.njnt) if j not in driver)
        self.coupled: tuple[int, ...] = tuple(order)
        #: MuJoCo joint id -> (driving joint id or -1, equality id), for reports
        self.driver: dict[int, tuple[int, int]] = driver
        self.n = len(self.independent)
        self.qpos_adr: IntArray = np.array([model.jnt_qposadr[j] for j in self.independent],
                                           dtype=np.int64)
        self.dof_adr: IntArray = np.array([model.jnt_dofadr[j] for j in self.independent],
                                          dtype=np.int64)
        self._levels = self._make_levels(order, driver)
        #: True when no joint is coupled: q is u padded, G selects columns
        self.trivial = not order
        # G of the independent joints: a unit column per coordinate; coupled rows come later
        self._g0 = np.zeros((model.nv, self.n))
        self._g0[self.dof_adr, np.arange(self.n)] = 1.0
        #: every coupling linear: G is constant and the convective term zero (MyoArm's)
        self.linear = all(lv.linear for lv in self._levels)
        self._g_linear: FloatArray | None = None
        if self.linear:
            self._g_linear = self.basis(np.array(model.qpos0))
            self._g_linear.flags.writeable = False

    # -- set-up ---------------------------------------------------------------------------------
    def _ordered(self, driver: dict[int, tuple[int, int]], file: str) -> list[int]:
        """Coupled joints so that each comes after the joint driving it."""
        done: set[int] = set()
        order: list[int] = []
        for start in driver:
            path: list[int] = []
            j = start
            while j in driver and j not in done:
                if j in path:
                    names = [self.model.joint(k).name for k in path]
                    raise ConfigError(file, "<model>", "joint couplings without a cycle",
                                      names)
                path.append(j)
                j = driver[j][0]
            for k in reversed(path):
                done.add(k)
                order.append(k)
        return order

    def _make_levels(self, order: list[int], driver: dict[int, tuple[int, int]]
                     ) -> list[_Level]:
        m = self.model
        depth: dict[int, int] = {}
        for j in order:
            x = driver[j][0]
            depth[j] = depth.get(x, -1) + 1 if x in driver else 0
        levels = []
        for level in range(max(depth.values(), default=-1) + 1):
            js = [j for j in order if depth[j] == level]
            xs = [driver[j][0] for j in js]
            eqs = [driver[j][1] for j in js]
            has = np.array([x >= 0 for x in xs], dtype=bool)
            parent = [x if x >= 0 else j for x, j in zip(xs, js)]
            coef = np.array([m.eq_data[e, :5] for e in eqs]).T.copy()
            coef[1:, ~has] = 0.0  # held: no slope (and its "driver" is itself)
            y0 = np.array([m.qpos0[m.jnt_qposadr[j]] for j in js])
            levels.append(_Level(
                qpos=np.array([m.jnt_qposadr[j] for j in js], dtype=np.int64),
                dof=np.array([m.jnt_dofadr[j] for j in js], dtype=np.int64),
                parent_qpos=np.array([m.jnt_qposadr[x] for x in parent], dtype=np.int64),
                parent_dof=np.array([m.jnt_dofadr[x] for x in parent], dtype=np.int64),
                has_parent=has,
                y0=y0,
                x0=np.array([m.qpos0[m.jnt_qposadr[x]] for x in parent]),
                coef=coef,
                offset=y0 + coef[0],
                linear=not np.any(coef[2:]),
            ))
        return levels

    # -- the map --------------------------------------------------------------------------------
    @staticmethod
    def _poly(level: _Level, d: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(p(d), p'(d), p''(d)) of each coupled joint of ``level`` (a held joint's
        coefficients beyond a0 are zero, so its slope is too)."""
        a = level.coef
        p = a[0] + d * (a[1] + d * (a[2] + d * (a[3] + d * a[4])))
        dp = a[1] + d * (2.0 * a[2] + d * (3.0 * a[3] + d * 4.0 * a[4]))
        ddp = 2.0 * a[2] + d * (6.0 * a[3] + d * 12.0 * a[4])
        return p, dp, ddp

    def fill_qpos(self, qpos: FloatArray, u: FloatArray) -> None:
        """Write ``q = phi(u)`` into ``qpos`` (nq,) in place: the independent joints, then each
        coupled one from its driver. Other entries of ``qpos`` are left as they are. Batches:
        ``qpos`` (..., nq) and ``u`` (..., n)."""
        qpos[..., self.qpos_adr] = u
        for lv in self._levels:
            d = qpos[..., lv.parent_qpos] - lv.x0
            if lv.linear:  # the control loop's case: one multiply-add
                qpos[..., lv.qpos] = lv.offset + lv.coef[1] * d
            else:
                qpos[..., lv.qpos] = lv.y0 + self._poly(lv, d)[0]

    def qpos(self, u: FloatArray) -> FloatArray:
        """(nq,) the whole configuration at ``u``, MuJoCo's ``qpos0`` where no joint is."""
        q = np.array(self.model.qpos0)
        self.fill_qpos(q, u)
        return q

    def basis(self, qpos: FloatArray) -> FloatArray:
        """(nv, n) ``G = dq/du`` at the configuration ``qpos`` (already filled from ``u``);
        read-only and shared when every coupling is linear."""
        if self._g_linear is not None:
            return self._g_linear
        G = self._g0.copy()
        for lv in self._levels:
            dp = self._poly(lv, qpos[lv.parent_qpos] - lv.x0)[1]
            G[lv.dof] = dp[:, None] * G[lv.parent_dof]
        return G

    def velocity(self, qpos: FloatArray, ud: FloatArray, qvel: FloatArray) -> None:
        """Write ``qd = G ud`` into ``qvel`` (nv,) in place."""
        qvel[self.dof_adr] = ud
        for lv in self._levels:
            slope = lv.coef[1] if lv.linear else self._poly(lv, qpos[lv.parent_qpos] - lv.x0)[1]
            qvel[lv.dof] = slope * qvel[lv.parent_dof]

    def convective(self, qpos: FloatArray, qvel: FloatArray) -> FloatArray:
        """(nv,) ``Gd ud``: the acceleration of every joint when ``udd = 0``, at a consistent
        ``qpos`` and ``qvel``. Per coupled joint ``p'(d) a_x + p''(d) qd_x^2`` (chain rule)."""
        acc = np.zeros(self.model.nv)
        if self.linear:
            return acc
        for lv in self._levels:
            _, dp, ddp = self._poly(lv, qpos[lv.parent_qpos] - lv.x0)
            xd = qvel[lv.parent_dof]
            acc[lv.dof] = dp * acc[lv.parent_dof] + ddp * xd * xd
        return acc

    # -- limits ---------------------------------------------------------------------------------
    def limits(self) -> tuple[FloatArray, FloatArray, list[str]]:
        """(lower, upper) of ``u`` [rad or m] and one note per narrowed joint.

        Each independent joint keeps its range (unlimited: +-pi for a hinge, +-1 m for a slide),
        narrowed to the largest interval of it in which every coupled joint it drives stays in
        its own range (checked on a grid of the range, the others at their qpos0).
        """
        m = self.model
        lo, hi, notes = [], [], []
        limited = [c for c in self.coupled if m.jnt_limited[c]]
        u0 = np.array(m.qpos0[self.qpos_adr])
        for k, j in enumerate(self.independent):
            hinge = int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
            a, b = (m.jnt_range[j] if m.jnt_limited[j]
                    else ((-np.pi, np.pi) if hinge else (-1.0, 1.0)))
            grid = np.linspace(a, b, _LIMIT_GRID)
            u = np.tile(u0, (_LIMIT_GRID, 1))
            u[:, k] = grid
            qpos = np.tile(np.array(m.qpos0), (_LIMIT_GRID, 1))
            self.fill_qpos(qpos, u)
            ok = np.ones(_LIMIT_GRID, dtype=bool)
            offenders = set()
            for c in limited:
                values = qpos[:, m.jnt_qposadr[c]]
                lo_c, hi_c = m.jnt_range[c]
                inside = (values >= lo_c - 1e-9) & (values <= hi_c + 1e-9)
                if np.ptp(values) > 0.0 and not inside.all():
                    offenders.add(m.joint(c).name)
                    ok &= inside
            if ok.all():
                lo.append(float(a))
                hi.append(float(b))
                continue
            best, start = (0, 0), None
            for i, flag in enumerate(np.r_[ok, False]):
                if flag and start is None:
                    start = i
                elif not flag and start is not None:
                    if i - start > best[1] - best[0]:
                        best = (start, i)
                    start = None
            if best[1] == best[0]:
                raise ConfigError(self.file, f"joint '{m.joint(j).name}' range",
                                  f"a range of joint '{m.joint(j).name}' in which the joints it "
                                  f"drives stay in theirs", sorted(offenders))
            new = (self._edge(k, grid, best[0] - 1, best[0], limited),
                   self._edge(k, grid, best[1], best[1] - 1, limited))
            lo.append(new[0])
            hi.append(new[1])
            notes.append(f"{m.joint(j).name} narrowed from [{a:+.3f}, {b:+.3f}] to "
                         f"[{new[0]:+.3f}, {new[1]:+.3f}] to keep {', '.join(sorted(offenders))} "
                         f"in range")
        return np.array(lo), np.array(hi), notes

    def _inside(self, k: int, x: float, limited: list[int]) -> bool:
        m = self.model
        u = np.array(m.qpos0[self.qpos_adr])
        u[k] = x
        q = self.qpos(u)
        return all(m.jnt_range[c, 0] - 1e-9 <= q[m.jnt_qposadr[c]] <= m.jnt_range[c, 1] + 1e-9
                   for c in limited)

    def _edge(self, k: int, grid: FloatArray, out: int, inside: int, limited: list[int]
              ) -> float:
        """The boundary between grid points ``out`` (outside; may be off the grid) and
        ``inside``, by bisection to 1e-12."""
        if out < 0 or out >= len(grid):
            return float(grid[inside])
        a, b = float(grid[inside]), float(grid[out])
        for _ in range(60):
            mid = 0.5 * (a + b)
            if self._inside(k, mid, limited):
                a = mid
            else:
                b = mid
            if abs(b - a) < 1e-12:
                break
        return a

    def describe(self) -> list[str]:
        """One line per coupled joint: ``y = y0 + p(x - x0)``, for reports."""
        m = self.model
        out = []
        for c in self.coupled:
            x, e = self.driver[c]
            a = m.eq_data[e, :5]
            terms = " ".join(f"{v:+.4g} d^{i}" if i else f"{v:+.4g}"
                             for i, v in enumerate(a) if v != 0.0 or i == 0)
            if x < 0:
                out.append(f"{m.joint(c).name} held at qpos0 {terms} "
                           f"(equality '{m.equality(e).name}')")
            else:
                out.append(f"{m.joint(c).name} = qpos0 + ({terms}), d = {m.joint(x).name} - "
                           f"qpos0 (equality '{m.equality(e).name}')")
        return out
