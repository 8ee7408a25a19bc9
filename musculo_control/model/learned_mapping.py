"""A joint-muscle mapping learned from the robot's own recordings: the third geometry backend.

On a real tendon-driven arm nobody knows the muscle routes to the millimetre; the paper's robot
learned l(q) from its own sensors (the paper's section IV, after Kawaharazuka et al., IROS
2018). Here l(q) is, per muscle, a polynomial in the joints that muscle spans, fitted by
:mod:`musculo_control.model.mapping_fit` (doc/learned_mapping.md says why a polynomial and not a
network).

**Function class.** Joint angles are scaled to the recorded joint box, ``x = (q - c) / h`` in
[-1, 1]; the basis is tensor products of Chebyshev polynomials ``phi_k(x) = prod_j
T_{e_kj}(x_j)`` of total degree ``sum_j e_kj <= d`` (the exponent rows ``e_k`` are the union of
what the muscles use: a muscle's coefficients are zero on the joints it does not span). With
``C`` (m x K) the coefficients, ``l(q) = C phi(x)``.

**Segment terms, for routes that bend sharply.** A via-point route's length is a sum of straight
segments, each the distance between two points fixed to two links: its square is a smooth
(trigonometric) function of the joints between them, but the distance itself has a kink (a
cone) where the two points meet, and a near-kink where they nearly do (the biceps's last
segment at full flexion: its moment arm turns from -4 to +4 cm/rad within 0.1 rad). No
polynomial of useful degree follows that; a square root of one does. So a muscle may carry one
segment term over the joints of one group, ``l_i(q) = C_i phi(x) + sqrt(P_i(x))`` with ``P_i =
S_i phi(x)`` in the same basis (the fit keeps it only where the held-out error says so), and
``dl_i/dx_j = C_i D_j phi + S_i D_j phi / (2 sqrt(P_i))``: still the exact derivative. ``P`` is
floored at ``segment_floor_m`` squared (a cone's tip: there the term is flat).

**The Jacobian is the exact derivative.** ``dT_a/dx = sum_{b<a} D_ab T_b`` (``numpy.polynomial.
chebyshev.chebder``), so ``d phi_k / d x_j`` is a fixed combination of other basis functions
and ``Jm[:, j] = (C D_j phi(x)) / h_j`` with a constant (m x K) matrix ``C D_j``. Lengths and
Jacobian are therefore one product ``[C; C D_1; ...; C D_n] phi(x)`` (SPEC section 2:
``Jm = dl/dq``); the tests compare it with finite differences.

**Outside the recorded joint box** the polynomial is never evaluated (it grows fast away from
its data). :class:`LearnedGeometry` evaluates at the nearest point ``q_b`` of the box and
continues to first order, ``l = l(q_b) + Jm(q_b) (q - q_b)``, ``Jm = Jm(q_b)``; beyond
``outside_tolerance_rad`` it warns (:class:`RecordedRangeWarning`, once per excursion, counted
in :attr:`LearnedGeometry.excursions`), and beyond ``refuse_beyond_rad`` it refuses with an
:class:`~musculo_control.errors.InputError` (the dynamics stage then publishes no snapshot and
the supervisor holds minimum tension). :meth:`LearnedGeometry.excursion` tells any caller (the
safety supervisor) how far a pose is outside, and why.

The model file (``musculo learn-mapping``) is an ``.npz`` of format
``musculo_learned_mapping_v2`` (see :func:`save_mapping`); files of ``v1`` (no segment terms)
are read as they are.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pinocchio as pin
from numpy.polynomial import chebyshev

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.geometry import MuscleGeometry, MuscleKinematics
from musculo_control.model.mapping_recording import read_npz, write_npz_atomic

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FORMAT = "musculo_learned_mapping_v2"
FORMATS_READ = ("musculo_learned_mapping_v1", FORMAT)  # v1: without segment terms


@dataclass(frozen=True, kw_only=True)
class MuscleGeometryConfig:
    """``robot.yaml`` key ``muscle_geometry``: which l(q) the controller, the dynamics and the
    markers use."""

    learned_model: str | None = spec(
        None, doc="model file of `musculo learn-mapping` (.npz), relative to the config folder "
                  "(given with --set: to the working folder); absent: the description's "
                  "geometry (URDF via-points or MJCF tendons)")
    outside_tolerance_rad: float = spec(
        0.05, ge=0.0, doc="a joint this far outside the recorded joint box is evaluated by "
                          "first-order continuation from the box without a warning [rad]")
    refuse_beyond_rad: float = spec(
        0.3, gt=0.0, doc="further outside than this, the learned mapping refuses to evaluate "
                         "(the QP gets no snapshot; minimum tension) [rad]")

    def check(self, file: str, key: str) -> None:
        if self.refuse_beyond_rad <= self.outside_tolerance_rad:
            where = f"{key}.refuse_beyond_rad" if key else "refuse_beyond_rad"
            raise ConfigError(file, where, f"more than outside_tolerance_rad = "
                                           f"{self.outside_tolerance_rad} rad",
                              self.refuse_beyond_rad)


class RecordedRangeWarning(UserWarning):
    """A pose outside the joint box of the recording the mapping was learned from."""


# -- the basis -------------------------------------------------------------------------------------
def total_degree_exponents(n: int, degree: int) -> IntArray:
    """(K, n) exponent rows of all Chebyshev products of total degree <= ``degree``, ordered by
    degree (so the terms of degree <= d' < d are a leading block)."""
    rows: list[tuple[int, ...]] = [()]
    for _ in range(n):
        rows = [r + (e,) for r in rows for e in range(degree + 1 - sum(r))]
    out = np.array(sorted(rows, key=lambda r: (sum(r), r)), dtype=np.int64)
    return out.reshape(-1, n)


def chebyshev_table(x: FloatArray, degree: int) -> FloatArray:
    """(..., n, degree + 1) values T_0 ... T_degree at each entry of ``x`` (|x| <= 1)."""
    return np.asarray(chebyshev.chebvander(x, degree))


def basis_features(x: FloatArray, exponents: IntArray) -> FloatArray:
    """(N, K) basis values at N scaled poses ``x`` (N, n)."""
    degree = int(exponents.max(initial=0))
    table = chebyshev_table(np.clip(x, -1.0, 1.0), degree)  # (N, n, d + 1)
    out = np.ones((x.shape[0], exponents.shape[0]))
    for j in range(x.shape[1]):
        if exponents[:, j].any():
            out *= table[:, j, exponents[:, j]]
    return out


def derivative_coefficients(coefficients: FloatArray, exponents: IntArray) -> list[FloatArray]:
    """Per joint j, the (m, K) matrix ``C D_j`` with ``d(C phi)/dx_j = C D_j phi`` (exact)."""
    degree = int(exponents.max(initial=0))
    # cheb[a] = coefficients of dT_a/dx in T_0 .. T_{a-1}
    cheb = [chebyshev.chebder(np.eye(degree + 1)[a]) if a else np.zeros(0)
            for a in range(degree + 1)]
    index = {tuple(row): k for k, row in enumerate(exponents.tolist())}
    out = []
    for j in range(exponents.shape[1]):
        a_j = np.zeros_like(coefficients)
        for k, row in enumerate(exponents.tolist()):
            a = row[j]
            if a == 0:
                continue
            for b, weight in enumerate(cheb[a]):
                if weight == 0.0:
                    continue
                target = list(row)
                target[j] = b
                # a lower power of one joint: always a row of a total-degree-closed union
                a_j[:, index[tuple(target)]] += weight * coefficients[:, k]
        out.append(a_j)
    return out


# -- the model -------------------------------------------------------------------------------------
@dataclass
class LearnedMapping:
    """A fitted l(q): basis, coefficients, the recorded joint box and lengths, the fit's record.

    Lengths are in the frame of the recording's first encoder session; later sessions differ
    by ``session_offset_m``.
    """

    joint_names: tuple[str, ...]
    muscle_names: tuple[str, ...]
    exponents: IntArray  # (K, n)
    coefficients: FloatArray  # (m, K) [m]
    lower_rad: FloatArray  # (n,) the recorded joint box
    upper_rad: FloatArray  # (n,)
    l_min_m: FloatArray  # (m,) shortest and longest length over the recorded poses [m]
    l_max_m: FloatArray  # (m,)
    session_offset_m: FloatArray  # (S, m) each session's encoder offset vs session 0 [m]
    meta: dict[str, Any] = field(default_factory=dict)  # fit record, versions, recording
    path: str = "<mapping>"
    #: (m, K) coefficients S of the segment terms sqrt(S phi) [m^2]; zero rows: none
    segment_coefficients: FloatArray | None = None
    segment_floor_m: float = 1.0e-4  # P is floored at this squared [m]

    def __post_init__(self) -> None:
        self.centre_rad = 0.5 * (self.lower_rad + self.upper_rad)
        half = 0.5 * (self.upper_rad - self.lower_rad)
        self._inv_half = 1.0 / half
        self.m, self.n = len(self.muscle_names), len(self.joint_names)
        self.degree = int(self.exponents.max(initial=0))
        self._orders = np.arange(self.degree + 1, dtype=float)
        # flat indices into the (n, d + 1) table, per term and joint
        self._flat = self.exponents + (self.degree + 1) * np.arange(self.n)
        if self.segment_coefficients is None:
            self.segment_coefficients = np.zeros_like(self.coefficients)
        #: muscles with a segment term
        self.segment_rows = np.flatnonzero(np.any(self.segment_coefficients != 0.0, axis=1))
        seg = self.segment_coefficients[self.segment_rows]
        # one product for all: [C; C D_1; ...; C D_n; S; S D_1; ...; S D_n] (S: theirs only)
        blocks = [self.coefficients, *derivative_coefficients(self.coefficients,
                                                               self.exponents),
                  seg, *derivative_coefficients(seg, self.exponents)]
        self._stack = np.ascontiguousarray(np.vstack(blocks))  # ((m + k) (n + 1), K)
        self._floor2 = self.segment_floor_m ** 2

    def features(self, q: FloatArray) -> FloatArray:
        """(K,) basis values at ``q`` inside the box."""
        x = (q - self.centre_rad) * self._inv_half
        np.clip(x, -1.0, 1.0, out=x)
        # T_k(x) = cos(k arccos x) on [-1, 1]: one table for all joints and orders
        table = np.cos(np.multiply.outer(np.arccos(x), self._orders))
        return table.ravel()[self._flat].prod(axis=1)

    def evaluate(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(l (m,) [m], Jm (m, n) [m/rad]) at ``q`` inside the recorded box."""
        out = self._stack @ self.features(q)
        m, n = self.m, self.n
        end = m * (n + 1)
        length, jac = out[:m], out[m:end].reshape(n, m).T
        k = self.segment_rows.size
        for t in range(k):  # few muscles have one: scalar work, no array temporaries
            row, p = self.segment_rows[t], float(out[end + t])
            root = math.sqrt(max(p, self._floor2))
            length[row] += root
            if p > self._floor2:  # flat below the floor (a cone's tip), else the exact slope
                jac[row] += out[end + k + t::k] * (0.5 / root)
        return length, jac * self._inv_half

    def lengths_batch(self, q: FloatArray) -> FloatArray:
        """(N, m) lengths at N poses inside the box [m]."""
        x = (np.atleast_2d(q) - self.centre_rad) * self._inv_half
        phi = basis_features(x, self.exponents)
        out = phi @ self.coefficients.T
        if self.segment_rows.size:
            assert self.segment_coefficients is not None
            p = phi @ self.segment_coefficients[self.segment_rows].T
            out[:, self.segment_rows] += np.sqrt(np.maximum(p, self._floor2))
        return out


def save_mapping(mapping: LearnedMapping, path: Path) -> Path:
    """Write the model file atomically: arrays ``exponents``, ``coefficients``,
    ``segment_coefficients`` (zero rows: no segment term), ``lower_rad``, ``upper_rad``,
    ``l_min_m``, ``l_max_m``, ``session_offset_m`` and the JSON ``meta`` (format, names,
    ``segment_floor_m``, the recording, per-muscle joints, degree and fit errors, versions)."""
    meta = {**mapping.meta, "format": FORMAT, "joint_names": list(mapping.joint_names),
            "muscle_names": list(mapping.muscle_names), "basis": "chebyshev_total_degree",
            "frame": "lengths in the recording's first encoder session",
            "segment_floor_m": mapping.segment_floor_m}
    assert mapping.segment_coefficients is not None  # set by __post_init__
    arrays = {"exponents": mapping.exponents, "coefficients": mapping.coefficients,
              "segment_coefficients": mapping.segment_coefficients,
              "lower_rad": mapping.lower_rad, "upper_rad": mapping.upper_rad,
              "l_min_m": mapping.l_min_m, "l_max_m": mapping.l_max_m,
              "session_offset_m": mapping.session_offset_m}
    write_npz_atomic(Path(path), arrays, meta)
    return Path(path)


def load_mapping(path: Path) -> LearnedMapping:
    """Read a model file written by :func:`save_mapping` (errors name the file and field)."""
    meta, arrays = read_npz(Path(path), FORMATS_READ, "learned mapping")
    what = f"learned mapping {path}"
    names = {}
    for key in ("joint_names", "muscle_names"):
        value = meta.get(key)
        if not isinstance(value, list) or not value:
            raise InputError(f"{what}: meta.{key}", "a list of names", value)
        names[key] = tuple(str(v) for v in value)
    n, m = len(names["joint_names"]), len(names["muscle_names"])
    need = {"exponents": (None, n), "coefficients": (m, None), "lower_rad": (n,),
            "upper_rad": (n,), "l_min_m": (m,), "l_max_m": (m,), "session_offset_m": (None, m)}
    if meta["format"] != FORMATS_READ[0]:  # v1 files have no segment terms
        need["segment_coefficients"] = (m, None)
    for key, shape in need.items():
        if key not in arrays:
            raise InputError(what, f"an array '{key}'", f"arrays {sorted(arrays)}")
        got = arrays[key].shape
        if len(got) != len(shape) or any(s is not None and s != g for s, g in zip(shape, got)):
            raise InputError(f"{what}: {key}", f"shape {shape} (None: any)", got)
        if not np.all(np.isfinite(arrays[key])):
            raise InputError(f"{what}: {key}", "finite values", "non-finite entries")
    for key in ("coefficients", "segment_coefficients"):
        if key in need and arrays["exponents"].shape[0] != arrays[key].shape[1]:
            raise InputError(f"{what}: {key}", f"{arrays['exponents'].shape[0]} columns (one "
                                               f"per basis term)", arrays[key].shape[1])
    floor = meta.get("segment_floor_m", 1.0e-4)
    if not isinstance(floor, (int, float)) or not floor > 0.0:
        raise InputError(f"{what}: meta.segment_floor_m", "a length > 0 [m]", floor)
    if not np.all(arrays["upper_rad"] > arrays["lower_rad"]):
        raise InputError(f"{what}: upper_rad", "above lower_rad for every joint",
                         arrays["upper_rad"].tolist())
    rest = {k: v for k, v in meta.items() if k not in ("joint_names", "muscle_names")}
    segments = arrays.get("segment_coefficients")
    return LearnedMapping(names["joint_names"], names["muscle_names"],
                          arrays["exponents"].astype(np.int64),
                          arrays["coefficients"].astype(float), arrays["lower_rad"].astype(float),
                          arrays["upper_rad"].astype(float), arrays["l_min_m"].astype(float),
                          arrays["l_max_m"].astype(float),
                          arrays["session_offset_m"].astype(float), rest, str(path),
                          None if segments is None else segments.astype(float), float(floor))


# -- the geometry backend --------------------------------------------------------------------------
class Excursion(NamedTuple):
    """How far a pose lies outside the recorded joint box."""

    distance_rad: float  # largest excursion of any joint [rad]
    message: str  # which joints, by how much, against which box


class LearnedGeometry:
    """Implements :class:`~musculo_control.model.geometry.MuscleGeometry` with a learned
    mapping (see the module docstring). ``drawing``: the description's geometry, whose routes
    the markers draw (a learned l(q) has no route); its ``peak_force_n`` (MJCF) is kept."""

    def __init__(self, mapping: LearnedMapping, config: MuscleGeometryConfig,
                 drawing: MuscleGeometry | None = None) -> None:
        self.mapping = mapping
        self.config = config
        self.names = mapping.muscle_names
        self.source = f"learned mapping {Path(mapping.path).name}"
        self.lower_rad = mapping.lower_rad
        self.upper_rad = mapping.upper_rad
        self._drawing = drawing
        peak = getattr(drawing, "peak_force_n", None)
        if peak is not None:
            self.peak_force_n = peak
        self._tol = config.outside_tolerance_rad
        self._refuse = config.refuse_beyond_rad
        self._joints = mapping.joint_names
        #: excursions beyond outside_tolerance_rad so far (each warned once)
        self.excursions = 0
        self._outside = threading.local()

    def excursion(self, q: FloatArray) -> Excursion | None:
        """``None`` inside the recorded box (plus ``outside_tolerance_rad``), else how far
        outside and a sentence saying so."""
        below = self.lower_rad - q
        above = q - self.upper_rad
        beyond = np.maximum(np.maximum(below, above), 0.0)
        worst = float(beyond.max())
        if not worst > self._tol:
            return None
        parts = [f"{self._joints[j]} {q[j]:+.3f} rad (recorded "
                 f"[{self.lower_rad[j]:+.3f}, {self.upper_rad[j]:+.3f}])"
                 for j in np.flatnonzero(beyond > self._tol)]
        return Excursion(worst, "pose outside the joint box of the learned mapping's recording "
                                f"({Path(self.mapping.path).name}): " + ", ".join(parts))

    def _evaluate(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        q = np.asarray(q, dtype=float)
        inside = np.minimum(np.maximum(q, self.lower_rad), self.upper_rad)
        length, jac = self.mapping.evaluate(inside)
        step = q - inside
        if not step.any():
            self._outside.active = False
            return length, jac
        worst = float(np.abs(step).max())
        if not math.isfinite(worst):
            raise InputError("learned mapping q_rad", "finite joint angles", q.tolist())
        if worst > self._tol:
            found = self.excursion(q)
            text = found.message if found is not None else ""
            if worst > self._refuse:
                raise InputError("learned mapping", f"a pose within {self._refuse} rad of the "
                                                    f"recorded joint box (muscle_geometry."
                                                    f"refuse_beyond_rad)", text)
            if not getattr(self._outside, "active", False):
                self._outside.active = True
                self.excursions += 1
                warnings.warn(RecordedRangeWarning(
                    text + "; continued to first order from the box's edge"), stacklevel=3)
        else:
            self._outside.active = False
        return length + jac @ step, jac

    def lengths_at(self, q: FloatArray) -> FloatArray:
        """(m,) muscle lengths at ``q`` [m] (first-order continuation outside the box)."""
        return self._evaluate(q)[0]

    def kinematics_at(self, q: FloatArray) -> MuscleKinematics:
        """Lengths and the exact derivative of the fitted l(q) at ``q``."""
        length, jac = self._evaluate(q)
        return MuscleKinematics(length, jac)

    def kinematics_after_jacobians(self, q: FloatArray, data: pin.Data) -> MuscleKinematics:
        """As :meth:`kinematics_at`; a learned mapping needs only ``q``."""
        return self.kinematics_at(q)

    def paths_at(self, q: FloatArray) -> list[FloatArray]:
        """The description's routes (what a viewer draws); empty without one."""
        if self._drawing is None:
            return [np.zeros((0, 3)) for _ in self.names]
        return self._drawing.paths_at(q)
