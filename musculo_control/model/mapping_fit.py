"""Fitting the joint-muscle mapping l(q) to a recording, the encoder offsets as unknowns.

Per muscle i the recording gives encoder lengths ``y = l_i(q) + o_{i,s}`` with ``o_{i,s}`` an
unknown offset per encoder session s (the first session's is absorbed in the constant term, so
the model's lengths are in that session's frame). The fit is linear least squares in the basis
of :mod:`musculo_control.model.learned_mapping` plus one indicator column per later session,
with a small ridge term, solved by SciPy (``scipy.linalg.solve``, assume_a="pos") on the
normal equations of each muscle:

**The wires' stretch**: an encoder counts the wire the winch has paid out, which an elastic
wire (EA over its free length: a stiffness ``k_i``) makes differ from the path length by the
stretch ``T_i / k_i`` at the muscle's tension ``T_i``. So with ``wire_compliance`` on, each
muscle's compliance ``c_i`` (m/N) is fitted first, its tension one more column beside the
screening basis (below) and the session offsets, and ``l_i`` is learned from ``y - c_i T_i``:
the path at zero tension, whose derivative is the moment arm (otherwise a tension that changes
with the pose bends the learned lengths by its stretch). A muscle whose tension hardly varies
(standard deviation below ``min_tension_std_n``) keeps ``c_i = 0``: its stretch is a constant.

Validation: the recording is cut into blocks of ``validation_block_s``; every
``validation_every``-th block is held out (blocks, not single samples: neighbouring samples of
a slow recording are nearly the same pose). Then, per muscle:

1. **Which joints it spans**, from the data: a screening fit over all joints at degree
   ``screening_degree`` gives candidates, the joints whose RMS moment arm over the recorded
   poses reaches ``min_moment_arm_m``; candidates are then dropped one by one, smallest moment
   arm first, while the held-out error stays within ``drop_tolerance`` of the best seen, each
   subset fitted at the highest degree of ``degrees`` that keeps it within
   ``selection_max_terms`` (so dropping a joint the data does not need buys the others a higher
   degree; a wrist muscle then has no shoulder terms to pick up noise with, while a 1 mm/rad
   moment arm that the data does show is kept).
2. **Additive splits**: joints are merged into groups strongest interaction first (the RMS
   cross derivative d2l/dq_j dq_k of a fit, single linkage), and each partition on the way is
   a candidate l = sum of one polynomial per group (a biarticular muscle whose path has one
   segment per joint: far fewer terms for the same degree).
3. **Its structure and degree**: each degree of ``degrees`` (up to ``max_terms``
   coefficients), for the full polynomial and the additive one, is fitted without the
   held-out blocks; of those within ``degree_tolerance`` of the best held-out RMS error, the
   one with the fewest terms wins (a cheaper and smoother l(q)).
4. **A segment term where the route bends sharply** (see
   :mod:`musculo_control.model.learned_mapping`): for each joint group of that choice, the
   same polynomial plus ``sqrt(P(x))``, ``P`` a polynomial of a degree of
   ``segment_degrees`` over the group's joints, is fitted without the held-out blocks
   (variable projection: Levenberg-Marquardt on ``P``, the polynomial and session offsets solved
   linearly inside, by SciPy's ``least_squares``; ``P`` starts as the square of the group's
   polynomial shifted to ``segment_start_m`` at its minimum; trials on about
   ``segment_trial_samples`` training samples, the middle degree on every group, then the
   other degrees on the best group if it promises half the gain). It is kept if its held-out RMS
   error is below ``1 - segment_gain`` times the polynomial's (a route that bends sharply
   gains an order of magnitude; a smooth one at most what a higher degree would). Kept, the
   polynomial's degree is chosen again as in 3, each degree fitted beside the segment term
   (without it the bend's error swamps every degree's, and the fewest terms won by default),
   then P's degree again beside that polynomial.
5. **The final fit** on every sample with that choice.

l_min and l_max (paper eq. 2-4) are the fitted lengths' extremes over the recorded poses.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import scipy.linalg
import scipy.optimize

from musculo_control.config.parser import spec
from musculo_control.errors import ConfigError, InputError
from musculo_control.model.learned_mapping import (
    LearnedMapping,
    basis_features,
    derivative_coefficients,
    total_degree_exponents,
)
from musculo_control.model.mapping_recording import Recording
from musculo_control.provenance import provenance

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, kw_only=True)
class FitConfig:
    """``mapping.yaml`` key ``fit``: how ``musculo learn-mapping`` fits l(q)."""

    degrees: tuple[int, ...] = spec((2, 3, 4, 5, 6, 7, 8, 9), min_length=1,
                                    doc="polynomial degrees tried per muscle [-]")
    screening_degree: int = spec(3, ge=1, doc="degree of the all-joint fit that finds the "
                                              "joints each muscle spans [-]")
    min_moment_arm_m: float = spec(3.0e-4, ge=0.0, doc="a joint whose RMS moment arm over the "
                                                       "recording is below this is not spanned "
                                                       "[m/rad]")
    selection_max_terms: int = spec(250, ge=1, doc="largest basis for judging a joint's "
                                                   "dropping [-]")
    max_terms: int = spec(300, ge=1, doc="most coefficients of one muscle's polynomial (the "
                                         "run-time cost grows with the union of all) [-]")
    degree_tolerance: float = spec(0.02, ge=0.0, doc="the lowest degree within this fraction "
                                                     "of the best held-out error wins [-]")
    drop_tolerance: float = spec(0.1, ge=0.0, doc="a joint is dropped while the held-out error "
                                                  "stays within this fraction of the best [-]")
    ridge: float = spec(1.0e-9, ge=0.0, doc="ridge weight, relative to the mean diagonal of "
                                            "the normal matrix [-]")
    validation_block_s: float = spec(2.0, gt=0.0, doc="length of a validation block [s]")
    validation_every: int = spec(5, ge=2, doc="every this many blocks, one is held out [-]")
    samples_per_unknown: float = spec(3.0, ge=1.0, doc="a degree is tried only with this many "
                                                       "distinct poses per coefficient [-]")
    min_poses: int = spec(50, ge=10, doc="fewest distinct poses a recording must have [-]")
    pose_spacing_rad: float = spec(0.01, gt=0.0, doc="samples closer than this (largest joint "
                                                     "change) to the previous pose are the same "
                                                     "pose [rad]")
    min_joint_range_rad: float = spec(0.1, gt=0.0, doc="every joint must move over at least "
                                                       "this range [rad]")
    min_length_range_m: float = spec(1.0e-4, gt=0.0, doc="every muscle's length must change by "
                                                         "at least this within a session [m]")
    segment_degrees: tuple[int, ...] = spec((4, 6, 8), doc="degrees of P tried for a segment "
                                                           "term sqrt(P) per muscle, up to the "
                                                           "largest of degrees; empty: none [-]")
    segment_gain: float = spec(0.5, ge=0.0, lt=1.0, doc="a segment term is kept if it lowers "
                                                        "the held-out RMS error by more than "
                                                        "this fraction [-]")
    segment_start_m: float = spec(5.0e-3, gt=0.0, doc="the segment's starting guess: its "
                                                      "shortest length over the recording [m]")
    segment_floor_m: float = spec(1.0e-4, gt=0.0, doc="P is floored at this squared (the "
                                                      "term is flat at a cone's tip) [m]")
    segment_trial_samples: int = spec(3000, ge=100, doc="the trial fits that choose a segment "
                                                        "term use every k-th training sample, "
                                                        "about this many [-]")
    wire_compliance: bool = spec(True, doc="fit each muscle's wire compliance (encoder length "
                                           "per newton of its tension) and learn l(q) from the "
                                           "lengths less the stretch [-]")
    min_tension_std_n: float = spec(1.0, ge=0.0, doc="a muscle whose tension varies less "
                                                     "(standard deviation) keeps compliance 0 "
                                                     "[N]")

    def check(self, file: str, key: str) -> None:
        for i, d in enumerate(self.degrees):
            if d < 1:
                raise ConfigError(file, f"{key}.degrees[{i}]" if key else f"degrees[{i}]",
                                  "a degree >= 1", d)
        for i, d in enumerate(self.segment_degrees):
            if d < 2:
                where = f"segment_degrees[{i}]"
                raise ConfigError(file, f"{key}.{where}" if key else where,
                                  "a degree >= 2 (a square's)", d)


@dataclass(frozen=True)
class MuscleFit:
    """What the fit found for one muscle."""

    joints: tuple[str, ...]  # the joints its polynomial spans
    degree: int
    terms: int  # basis terms (coefficients) of its polynomial
    rms_m: float  # residual over every sample at the final fit [m]
    max_m: float
    validation_rms_m: float  # on the held-out blocks, fitted without them [m]
    validation_max_m: float
    validation_by_degree_m: dict[int, float]  # held-out RMS per degree tried [m]
    groups: tuple[tuple[str, ...], ...] = ()  # additive groups: l = sum of one polynomial each
    segment_joints: tuple[str, ...] = ()  # joints of its segment term sqrt(P); () none
    segment_degree: int = 0
    polynomial_validation_rms_m: float = math.nan  # held-out RMS without the segment term [m]
    compliance_m_per_n: float = 0.0  # its wire's stretch per newton (0: not fitted) [m/N]


def distinct_poses(q: FloatArray, spacing_rad: float) -> int:
    """How many samples lie more than ``spacing_rad`` (largest joint change) from the previous
    counted pose, in time order."""
    count, last = 0, None
    for row in q:
        if last is None or float(np.abs(row - last).max()) > spacing_rad:
            count += 1
            last = row
    return count


def check_recording(rec: Recording, config: FitConfig,
                    joint_names: tuple[str, ...] | None = None,
                    muscle_names: tuple[str, ...] | None = None, robot_file: str = "") -> int:
    """Refuse a recording the fit cannot use, naming the recording, the signal and what was
    expected; returns its number of distinct poses."""
    where = f"recording {rec.path}"
    rec.check()
    for label, mine, theirs in (("joint_names", joint_names, rec.joint_names),
                                ("muscle_names", muscle_names, rec.muscle_names)):
        if mine is not None and tuple(mine) != tuple(theirs):
            raise InputError(f"{where}: {label}", f"the robot's {list(mine)}"
                             + (f" ({robot_file})" if robot_file else ""), list(theirs))
    poses = distinct_poses(rec.q_rad, config.pose_spacing_rad)
    if poses < config.min_poses:
        raise InputError(f"{where}: q_rad", f"at least {config.min_poses} distinct poses "
                                            f"(samples more than {config.pose_spacing_rad} rad "
                                            f"apart; mapping.yaml fit.min_poses)", poses)
    span = rec.q_rad.max(axis=0) - rec.q_rad.min(axis=0)
    for j, name in enumerate(rec.joint_names):
        if span[j] < config.min_joint_range_rad:
            raise InputError(f"{where}: q_rad[{name}]",
                             f"joint '{name}' moving over at least {config.min_joint_range_rad} "
                             f"rad (mapping.yaml fit.min_joint_range_rad)",
                             f"a range of {span[j]:.4f} rad")
    for s in np.unique(rec.session):
        rows = rec.session == s
        change = rec.length_m[rows].max(axis=0) - rec.length_m[rows].min(axis=0)
        for i, name in enumerate(rec.muscle_names):
            if change[i] < config.min_length_range_m:
                raise InputError(f"{where}: length_m[{name}] (session {int(s)})",
                                 f"the length of muscle '{name}' changing by at least "
                                 f"{config.min_length_range_m} m (mapping.yaml "
                                 f"fit.min_length_range_m)", f"{change[i]:.2e} m")
    return poses


def _blocks(stamp_s: FloatArray, session: IntArray, config: FitConfig) -> npt.NDArray[np.bool_]:
    """(N,) True for held-out samples: every ``validation_every``-th block of each session."""
    held = np.zeros(stamp_s.shape[0], dtype=bool)
    for s in np.unique(session):
        rows = np.flatnonzero(session == s)
        block = np.floor((stamp_s[rows] - stamp_s[rows[0]]) / config.validation_block_s)
        held[rows] = (block.astype(np.int64) % config.validation_every) == \
            config.validation_every - 1
    return held


def _solve(gram: FloatArray, rhs: FloatArray, ridge: float) -> FloatArray:
    """Ridge solution of the normal equations (the constant and offset columns unpenalised
    would change little; all columns share one small weight)."""
    k = gram.shape[0]
    weight = ridge * float(np.trace(gram)) / max(k, 1)
    return np.asarray(scipy.linalg.solve(gram + weight * np.eye(k), rhs, assume_a="pos"))


def wire_compliance(features: FloatArray, y: FloatArray, tension_n: FloatArray,
                    config: FitConfig) -> FloatArray:
    """(m,) each muscle's compliance [m/N]: the coefficient of its tension beside
    ``features`` (the screening basis and session columns) in one least-squares fit per muscle,
    the tension column scaled to unit RMS; 0 for a muscle whose tension varies less than
    ``min_tension_std_n``."""
    gram = features.T @ features
    out = np.zeros(y.shape[1])
    for i in range(y.shape[1]):
        t = tension_n[:, i]
        if float(np.std(t)) < config.min_tension_std_n:
            continue
        scale = float(np.sqrt(np.mean(t**2)))
        ts = t / scale
        b = features.T @ ts
        bordered = np.block([[gram, b[:, None]], [b[None, :], np.array([[ts @ ts]])]])
        rhs = np.concatenate([features.T @ y[:, i], [ts @ y[:, i]]])
        out[i] = _solve(bordered, rhs, config.ridge)[-1] / scale
    return out


def _session_columns(session: IntArray) -> FloatArray:
    """(N, S - 1) indicators of the sessions after the first."""
    ids = np.unique(session)
    return (session[:, None] == ids[None, 1:]).astype(float)


def _subset_exponents(n: int, joints: tuple[int, ...], degree: int) -> IntArray:
    """(K, n) total-degree exponents over ``joints`` only (zeros elsewhere)."""
    sub = total_degree_exponents(len(joints), degree)
    out = np.zeros((sub.shape[0], n), dtype=np.int64)
    out[:, list(joints)] = sub
    return out


def _largest_degree(degrees: tuple[int, ...], joints: int, sessions: int,
                    budget: float) -> int | None:
    usable = [d for d in degrees if math.comb(joints + d, d) + sessions <= budget]
    return max(usable) if usable else None


Groups = tuple[tuple[int, ...], ...]


def _group_exponents(n: int, groups: Groups, degree: int) -> IntArray:
    """(K, n) exponents of a sum of one total-degree polynomial per joint group (a single
    group: the full polynomial), constant term once, ordered by degree."""
    rows = np.unique(np.vstack([_subset_exponents(n, g, degree) for g in groups]), axis=0)
    return rows[np.lexsort(np.vstack([rows[:, ::-1].T, rows.sum(axis=1)]))]


def _group_terms(groups: Groups, degree: int) -> int:
    return 1 + sum(math.comb(len(g) + degree, degree) - 1 for g in groups)


class _Design:
    """Basis columns over joint groups, their normal matrices cached per (groups, degree), so
    fewer joints or a lower degree is a block of a bigger one."""

    def __init__(self, x: FloatArray, sessions: FloatArray, train: npt.NDArray[np.bool_],
                 held: npt.NDArray[np.bool_], ridge: float) -> None:
        self.x, self.sessions, self.train, self.held, self.ridge = x, sessions, train, held, ridge
        self._cache: dict[tuple[Groups, int], tuple[IntArray, FloatArray, FloatArray,
                                                    FloatArray]] = {}
        self.last_held_max = math.nan
        self._qr_key: tuple[Groups, int, int, bool] | None = None
        self._qr = np.zeros((0, 0))

    def _block(self, groups: Groups,
               degree: int) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
        key = (groups, degree)
        if key not in self._cache:
            if len(self._cache) > 8:  # bounded memory: (N, K) blocks are large
                self._cache.pop(next(iter(self._cache)))
            ex = _group_exponents(self.x.shape[1], groups, degree)
            big = np.hstack([basis_features(self.x, ex), self.sessions])
            gram_train = big[self.train].T @ big[self.train]
            # all samples = the training rows plus the held-out rows
            gram_all = gram_train + big[self.held].T @ big[self.held]
            self._cache[key] = (ex, big, gram_train, gram_all)
        return self._cache[key]

    def _columns(self, ex: IntArray, joints: tuple[int, ...], degree: int) -> IntArray:
        others = [j for j in range(ex.shape[1]) if j not in joints]
        keep = (ex.sum(axis=1) <= degree) & ~ex[:, others].any(axis=1)
        return np.concatenate([np.flatnonzero(keep),
                               ex.shape[0] + np.arange(self.sessions.shape[1])])

    def train_fit(self, groups: Groups, joints: tuple[int, ...], degree: int, y: FloatArray,
                  top_degree: int | None = None) -> tuple[IntArray, FloatArray, float]:
        """(exponent rows, coefficients then session offsets, held-out RMS error) of the fit
        over ``joints`` at ``degree`` without the held-out blocks (``groups``/``top_degree``:
        the cached block it is taken from)."""
        ex, big, gram_train, _ = self._block(groups, top_degree or degree)
        cols = self._columns(ex, joints, degree)
        sub = big[:, cols]
        w = _solve(gram_train[np.ix_(cols, cols)], sub[self.train].T @ y[self.train], self.ridge)
        err = sub[self.held] @ w - y[self.held]
        self.last_held_max = float(np.abs(err).max())
        n_terms = len(cols) - self.sessions.shape[1]
        return ex[cols[:n_terms]], w, float(np.sqrt(np.mean(err**2)))

    def held_out_rms(self, groups: Groups, joints: tuple[int, ...], degree: int, y: FloatArray,
                     top_degree: int | None = None) -> float:
        """RMS error on the held-out blocks of :meth:`train_fit`."""
        return self.train_fit(groups, joints, degree, y, top_degree)[2]

    def fit_all(self, groups: Groups, degree: int, y: FloatArray,
                top_degree: int) -> tuple[IntArray, FloatArray, FloatArray]:
        """(exponent rows, coefficients then session offsets, residuals) on every sample;
        :attr:`last_held_max` is then the largest held-out error at this degree."""
        joints = tuple(sorted(j for g in groups for j in g))
        self.held_out_rms(groups, joints, degree, y, top_degree)
        ex, big, _, gram_all = self._block(groups, top_degree)
        cols = self._columns(ex, joints, degree)
        sub = big[:, cols]
        w = _solve(gram_all[np.ix_(cols, cols)], sub.T @ y, self.ridge)
        n_terms = len(cols) - self.sessions.shape[1]
        return ex[cols[:n_terms]], w, sub @ w - y

    def segment_fit(self, groups: Groups, degree: int, top_degree: int, y: FloatArray,
                    group: tuple[int, ...], seg_degree: int, config: FitConfig,
                    on_all: bool = False, start: FloatArray | None = None,
                    ) -> tuple[IntArray, FloatArray, IntArray, FloatArray, float]:
        """The polynomial of ``groups`` at ``degree`` plus a segment term ``sqrt(P)``, ``P`` of
        ``seg_degree`` over ``group``: (polynomial exponent rows, its coefficients then session
        offsets, P's exponent rows, P's coefficients, held-out RMS error). Fitted without the
        held-out blocks, or on every sample (``on_all``); ``start``: P's first guess."""
        joints = tuple(sorted(j for g in groups for j in g))
        ex, big, _, _ = self._block(groups, top_degree)
        cols = self._columns(ex, joints, degree)
        if on_all:
            rows = np.ones(y.shape[0], dtype=bool)
        else:  # a trial: every k-th training sample (neighbours are nearly the same pose)
            rows = np.zeros(y.shape[0], dtype=bool)
            train = np.flatnonzero(self.train)
            rows[train[::max(1, train.size // config.segment_trial_samples)]] = True
        lin = big[rows][:, cols]
        key = (groups, degree, top_degree, on_all)
        if self._qr_key != key:  # the same linear part for every group and degree of P tried
            self._qr = np.linalg.qr(lin)[0]  # orthonormal columns spanning the linear part
            self._qr_key = key
        q_basis = self._qr

        def project(v: FloatArray) -> FloatArray:
            return v - q_basis @ (q_basis.T @ v)

        seg_ex = _subset_exponents(self.x.shape[1], group, seg_degree)
        phi = basis_features(self.x, seg_ex)
        phi_r = phi[rows]
        floor2 = config.segment_floor_m ** 2
        if start is None:
            # the group's share of the polynomial fit, shifted to a short segment at its minimum
            ex_p, w, _ = self.train_fit(groups, joints, degree, y, top_degree)
            others = [j for j in range(ex_p.shape[1]) if j not in group]
            mine = ex_p[:, group].any(axis=1) & ~ex_p[:, others].any(axis=1)
            share = basis_features(self.x[rows], ex_p[mine]) @ w[:ex_p.shape[0]][mine]
            guess = share - share.min() + config.segment_start_m
            start = np.linalg.lstsq(phi_r, guess**2, rcond=None)[0]
        target = y[rows]

        def residual(c: FloatArray) -> FloatArray:
            return project(target - np.sqrt(np.maximum(phi_r @ c, floor2)))

        def jacobian(c: FloatArray) -> FloatArray:
            p = phi_r @ c
            scale = np.where(p > floor2, 0.5 / np.sqrt(np.maximum(p, floor2)), 0.0)
            return -project(phi_r * scale[:, None])

        solved = scipy.optimize.least_squares(residual, start, jac=jacobian, method="lm",
                                              x_scale="jac")
        seg_c = np.asarray(solved.x)
        root = np.sqrt(np.maximum(phi @ seg_c, floor2))
        gram = lin.T @ lin
        w = _solve(gram, lin.T @ (target - root[rows]), self.ridge)
        n_terms = len(cols) - self.sessions.shape[1]
        err = big[self.held][:, cols] @ w + root[self.held] - y[self.held]
        self.last_held_max = float(np.abs(err).max())
        return ex[cols[:n_terms]], w, seg_ex, seg_c, float(np.sqrt(np.mean(err**2)))

    def interaction_groups(self, joints: tuple[int, ...], degree: int, y: FloatArray,
                           half: FloatArray) -> list[Groups]:
        """Candidate additive splits of ``joints``: with the RMS cross derivatives
        d2l/dq_j dq_k of a fit over the training poses as link strengths, joints are merged
        strongest link first (single linkage), from one group per joint; every partition on
        the way with more than one group is a candidate (the validation decides)."""
        ex, w, _ = self.train_fit((joints,), joints, degree, y)
        coef = w[None, :ex.shape[0]]
        first = derivative_coefficients(coef, ex)
        phi = basis_features(self.x[self.train], ex)
        links = []
        for a, j in enumerate(joints):
            second = derivative_coefficients(first[j], ex)
            for k in joints[a + 1:]:
                strength = float(np.sqrt(np.mean((phi @ second[k][0]) ** 2))) \
                    / (half[j] * half[k])
                links.append((strength, j, k))
        groups = [{j} for j in joints]
        splits: list[Groups] = [tuple((j,) for j in joints)]  # fully additive, to start
        for _, j, k in sorted(links, reverse=True):
            gj = next(g for g in groups if j in g)
            gk = next(g for g in groups if k in g)
            if gj is gk:
                continue
            groups = [g for g in groups if g is not gj and g is not gk] + [gj | gk]
            if len(groups) > 1:
                splits.append(tuple(sorted(tuple(sorted(g)) for g in groups)))
        return splits


class _Context(NamedTuple):
    """What the fits of every muscle of one recording share."""

    rec: Recording
    config: FitConfig
    x: FloatArray  # (N, n) the joint angles scaled to [-1, 1] over the recording
    half: FloatArray  # (n,) half of each joint's range [rad]
    sessions: FloatArray  # (N, S - 1) indicators of the sessions after the first
    train: npt.NDArray[np.bool_]  # (N,) the samples fitted on
    held: npt.NDArray[np.bool_]  # (N,) the held-out blocks
    poses: int  # distinct poses of the recording
    budget: float  # most coefficients a muscle may have


class _Muscle(NamedTuple):
    """One muscle's least-squares problem."""

    name: str
    target: FloatArray  # (N,) the lengths fitted [m]
    design: _Design  # its basis columns, with ``extras`` beside them
    extras: FloatArray  # (N, S - 1 [+ 1]) session indicators [and its tension / scale]
    scale: float  # the tension column's scale [N] (1.0: no tension column)


class _Choice(NamedTuple):
    """Step 3's choice of a muscle's structure and degree."""

    groups: Groups  # additive joint groups (one: the full polynomial)
    degree: int
    top: int  # the highest degree tried with these groups (the cached block)
    by_degree: dict[int, float]  # held-out RMS error per degree tried [m]


class _Segment(NamedTuple):
    """Step 4's segment term sqrt(P), kept for a muscle."""

    joints: tuple[int, ...]  # the group P spans
    degree: int  # P's degree
    start: FloatArray  # P's coefficients fitted without the held-out blocks (the final start)
    polynomial_degree: int  # the polynomial's degree beside it
    rms_m: float  # held-out RMS error of the two [m]
    held_max_m: float  # and largest [m]


class _Fitted(NamedTuple):
    """Step 5's final fit of one muscle."""

    fit: MuscleFit
    rows: IntArray  # (K, n) its polynomial's exponent rows
    coefficients: FloatArray  # (K,)
    segment_rows: IntArray  # (K_s, n) its segment term's rows (0 rows: none)
    segment_coefficients: FloatArray  # (K_s,)
    offsets: FloatArray  # (S - 1,) the later sessions' encoder offsets [m]


def fit_mapping(rec: Recording, config: FitConfig, *, joint_names: tuple[str, ...] | None = None,
                muscle_names: tuple[str, ...] | None = None, robot_file: str = "",
                progress: bool = False) -> tuple[LearnedMapping, list[MuscleFit]]:
    """Fit l(q) for every muscle of ``rec`` (see the module docstring): the screening fit
    (:func:`_screening`), steps 1-5 per muscle (:func:`_fit_muscle`), and the mapping over the
    union of their bases (:func:`_union_mapping`)."""
    poses = check_recording(rec, config, joint_names, muscle_names, robot_file)
    q = rec.q_rad
    lower, upper = q.min(axis=0), q.max(axis=0)
    centre, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
    held = _blocks(rec.stamp_s, rec.session, config)
    train = ~held
    if train.sum() < 1 or held.sum() < 1:
        raise InputError(f"recording {rec.path}: stamp_s",
                         f"a recording longer than {config.validation_every} validation blocks "
                         f"of {config.validation_block_s} s (mapping.yaml fit)",
                         f"{float(rec.stamp_s[-1] - rec.stamp_s[0]):.1f} s")
    ctx = _Context(rec, config, (q - centre) / half, half, _session_columns(rec.session), train,
                   held, poses, poses / config.samples_per_unknown)
    compliance, path, arms = _screening(ctx)
    design = _Design(ctx.x, ctx.sessions, train, held, config.ridge)
    fitted = []
    for i in range(rec.length_m.shape[1]):
        fitted.append(_fit_muscle(ctx, _muscle(ctx, i, design, compliance, path), arms[i],
                                  float(compliance[i])))
        if progress:
            _print_progress(rec.muscle_names[i], fitted[-1].fit)
    offsets = np.zeros((ctx.sessions.shape[1] + 1, len(fitted)))
    for i, one in enumerate(fitted):
        offsets[1:, i] = one.offsets
    mapping = _union_mapping(ctx, fitted, lower, upper, offsets)
    fits = [one.fit for one in fitted]
    mapping.meta = _fit_meta(ctx, fits, offsets)
    return mapping, fits


def _screening(ctx: _Context) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The all-joint screening fit at ``screening_degree`` (step 1's candidates): (each
    muscle's wire compliance (m,) [m/N] (:func:`wire_compliance`; zeros without
    ``wire_compliance``), the path (N, m): the encoder's lengths less the wires' stretch [m],
    each muscle's RMS moment arm about each joint over the recorded poses (m, n) [m/rad])."""
    rec, config = ctx.rec, ctx.config
    y = rec.length_m
    n, m = ctx.x.shape[1], y.shape[1]
    screen = total_degree_exponents(n, config.screening_degree)
    n_sessions = ctx.sessions.shape[1]
    if screen.shape[0] + n_sessions > ctx.budget:
        need = math.ceil((screen.shape[0] + n_sessions) * config.samples_per_unknown)
        raise InputError(f"recording {rec.path}: q_rad",
                         f"at least {need} distinct poses for the screening fit over {n} joints "
                         f"at degree {config.screening_degree} (mapping.yaml "
                         f"fit.samples_per_unknown)", ctx.poses)
    features = np.hstack([basis_features(ctx.x, screen), ctx.sessions])
    compliance = (wire_compliance(features, y, rec.tension_n, config) if config.wire_compliance
                  else np.zeros(m))
    path = y - rec.tension_n * compliance  # the path: the encoder's length less stretch
    coef = _solve(features.T @ features, features.T @ path, config.ridge)  # (K + S - 1, m)
    k_screen = screen.shape[0]
    slopes = derivative_coefficients(coef[:k_screen].T, screen)  # per joint (m, K)
    phi = features[:, :k_screen]
    arms = np.array([[float(np.sqrt(np.mean((phi @ slopes[j][i]) ** 2))) / ctx.half[j]
                      for j in range(n)] for i in range(m)])  # (m, n) RMS moment arm [m/rad]
    return compliance, path, arms


def _muscle(ctx: _Context, i: int, design: _Design, compliance: FloatArray,
            path: FloatArray) -> _Muscle:
    """Muscle ``i``'s problem: the ``path`` beside the session offsets (the shared
    ``design``); or, with a ``compliance``, the encoder's lengths with its tension one more
    column, fitted with the polynomial (the screening basis is too coarse to tell a pose's
    stretch from its geometry)."""
    name = ctx.rec.muscle_names[i]
    if compliance[i] == 0.0:
        return _Muscle(name, path[:, i], design, ctx.sessions, 1.0)
    tension = ctx.rec.tension_n
    scale = float(np.sqrt(np.mean(tension[:, i] ** 2)))
    extras = np.hstack([ctx.sessions, tension[:, i:i + 1] / scale])
    return _Muscle(name, ctx.rec.length_m[:, i],
                   _Design(ctx.x, extras, ctx.train, ctx.held, ctx.config.ridge), extras, scale)


def _fit_muscle(ctx: _Context, muscle: _Muscle, arms: FloatArray,
                compliance: float) -> _Fitted:
    """Steps 1-5 of the module docstring for one muscle, its RMS moment arms ``arms`` (n,)
    [m/rad] from the screening fit, its screening ``compliance`` [m/N]."""
    rec = ctx.rec
    joints = _spanned_joints(ctx, muscle, arms)
    choice = _structure_and_degree(ctx, muscle, joints)
    segment = _segment_term(ctx, muscle, choice)
    terms, w, seg_rows, seg_coef, res, held_max = _final_fit(ctx, muscle, choice, segment)
    k, n_sessions = terms.shape[0], ctx.sessions.shape[1]
    if muscle.extras.shape[1] > n_sessions:
        compliance = float(w[-1] / muscle.scale)
    degree = choice.degree if segment is None else segment.polynomial_degree
    poly_rms = choice.by_degree[degree]
    names = rec.joint_names
    fit = MuscleFit(tuple(names[j] for j in joints), degree, k,
                    float(np.sqrt(np.mean(res**2))), float(np.abs(res).max()),
                    poly_rms if segment is None else segment.rms_m, held_max, choice.by_degree,
                    tuple(tuple(names[j] for j in g) for g in choice.groups),
                    tuple(names[j] for j in segment.joints) if segment else (),
                    segment.degree if segment else 0, poly_rms, compliance)
    return _Fitted(fit, terms, w[:k], seg_rows, seg_coef, w[k:k + n_sessions])


def _spanned_joints(ctx: _Context, muscle: _Muscle, arms: FloatArray) -> tuple[int, ...]:
    """Step 1: the joints ``muscle`` spans. The candidates, whose RMS moment arm ``arms``
    [m/rad] reaches ``min_moment_arm_m``, are dropped one by one, smallest moment arm first,
    while the held-out error stays within ``drop_tolerance`` of the best seen, each subset
    fitted at the highest degree that keeps it within ``selection_max_terms``."""
    config = ctx.config
    candidates = tuple(j for j in range(ctx.x.shape[1]) if arms[j] >= config.min_moment_arm_m)
    if not candidates:
        raise InputError(f"recording {ctx.rec.path}: length_m[{muscle.name}]",
                         f"a muscle whose length follows some joint (RMS moment arm >= "
                         f"{config.min_moment_arm_m} m/rad; mapping.yaml "
                         f"fit.min_moment_arm_m)", f"largest {arms.max():.2e} m/rad")
    n_extra = muscle.extras.shape[1]

    def judged(subset: tuple[int, ...]) -> float:
        d = _largest_degree(config.degrees, len(subset), n_extra,
                            min(ctx.budget, config.selection_max_terms + n_extra))
        return math.inf if d is None else muscle.design.held_out_rms((subset,), subset, d,
                                                                     muscle.target)

    joints = candidates
    if len(joints) > 1:
        best = judged(joints)
        for j in sorted(candidates, key=lambda j: arms[j]):
            if len(joints) == 1:
                break
            trial = tuple(k for k in joints if k != j)
            err = judged(trial)
            if err <= best * (1.0 + config.drop_tolerance):
                joints, best = trial, min(best, err)
    return joints


def _structure_and_degree(ctx: _Context, muscle: _Muscle, joints: tuple[int, ...]) -> _Choice:
    """Steps 2 and 3 over ``joints``: the full polynomial and the additive splits the data
    shows (:meth:`_Design.interaction_groups`), each at every degree of ``degrees`` within the
    budget and ``max_terms``, fitted without the held-out blocks; of those within
    ``degree_tolerance`` of the best held-out RMS error, the one with the fewest terms."""
    config, n_extra, design = ctx.config, muscle.extras.shape[1], muscle.design
    structures: list[Groups] = [(joints,)]
    sel = _largest_degree(config.degrees, len(joints), n_extra,
                          min(ctx.budget, config.selection_max_terms + n_extra))
    if len(joints) > 1 and sel is not None:
        structures += design.interaction_groups(joints, sel, muscle.target, ctx.half)
    by_choice: dict[tuple[Groups, int], float] = {}
    for groups in structures:
        usable = [d for d in sorted(set(config.degrees))
                  if _group_terms(groups, d) + n_extra <= ctx.budget
                  and _group_terms(groups, d) <= config.max_terms]
        for d in usable:
            by_choice[(groups, d)] = design.held_out_rms(groups, joints, d, muscle.target,
                                                         max(usable))
    if not by_choice:
        raise InputError(f"recording {ctx.rec.path}: q_rad",
                         f"enough distinct poses for degree {min(config.degrees)} over the "
                         f"{len(joints)} joints muscle '{muscle.name}' spans "
                         f"({config.samples_per_unknown} per coefficient)", ctx.poses)
    lowest = min(by_choice.values())
    groups, d = min((k for k, v in by_choice.items()
                     if v <= lowest * (1.0 + config.degree_tolerance)),
                    key=lambda k: (_group_terms(*k), k[1]))
    top = max(k[1] for k in by_choice if k[0] == groups)
    return _Choice(groups, d, top, {k[1]: v for k, v in by_choice.items() if k[0] == groups})


def _segment_term(ctx: _Context, muscle: _Muscle, choice: _Choice) -> _Segment | None:
    """Step 4: a segment term sqrt(P) on one group of ``choice``, if it lowers the held-out
    RMS error by more than ``segment_gain`` (:func:`_segment_trials`); kept, the polynomial's
    degree and then P's are chosen again beside it (:func:`_segment_refit`). None: none
    kept."""
    config, groups, n_extra = ctx.config, choice.groups, muscle.extras.shape[1]
    widest = max(map(len, groups))
    seg_degrees = [sd for sd in sorted(set(config.segment_degrees))
                   if sd <= max(config.degrees) and _group_terms(groups, choice.degree)
                   + n_extra + math.comb(widest + sd, sd) <= ctx.budget
                   and math.comb(widest + sd, sd) <= config.max_terms]
    if not seg_degrees:
        return None
    tried = _segment_trials(ctx, muscle, choice, seg_degrees)
    (g_seg, sd_seg), (start, rms, worst) = min(tried.items(), key=lambda kv: kv[1][1])
    if not rms < choice.by_degree[choice.degree] * (1.0 - config.segment_gain):
        return None
    return _segment_refit(ctx, muscle, choice, seg_degrees,
                          _Segment(g_seg, sd_seg, start, choice.degree, rms, worst))


def _segment_trials(ctx: _Context, muscle: _Muscle, choice: _Choice,
                    seg_degrees: list[int]) -> dict[tuple[tuple[int, ...], int],
                                                      tuple[FloatArray, float, float]]:
    """Step 4's trials of a segment term beside ``choice``'s polynomial: on every group at
    the middle degree of ``seg_degrees``; then, if the best promises half the gain asked for,
    the other degrees on that group. Per (group, P's degree): (P's coefficients, held-out RMS
    error, held-out largest error) [m]."""
    config, groups = ctx.config, choice.groups
    middle = seg_degrees[len(seg_degrees) // 2]
    tried: dict[tuple[tuple[int, ...], int], tuple[FloatArray, float, float]] = {}
    for stage in (0, 1):
        if stage == 0:
            pending = [(g, middle) for g in groups]
        else:
            g_best = min(groups, key=lambda g: tried[(g, middle)][1])
            promise = choice.by_degree[choice.degree] * (1.0 - 0.5 * config.segment_gain)
            pending = [(g_best, sd) for sd in seg_degrees
                       if sd != middle and tried[(g_best, middle)][1] < promise]
        for g, sd in pending:
            found = muscle.design.segment_fit(groups, choice.degree, choice.top, muscle.target,
                                              g, sd, config)
            tried[(g, sd)] = (found[3], found[4], muscle.design.last_held_max)
    return tried


def _segment_refit(ctx: _Context, muscle: _Muscle, choice: _Choice, seg_degrees: list[int],
                   first: _Segment) -> _Segment:
    """Step 4, once a segment term is kept (``first``): the polynomial's degree again, each
    degree fitted beside it (it was chosen while the bend dominated every degree's error,
    which made the fewest terms win), then P's degree again beside that polynomial (at the
    first degree, the trials already tried every P degree on this group)."""
    config, groups, design = ctx.config, choice.groups, muscle.design
    n_extra, g_seg, sd_seg = muscle.extras.shape[1], first.joints, first.degree

    def in_budget(degree: int, seg_degree: int) -> bool:
        """The polynomial and P at these degrees within the sample budget."""
        return (_group_terms(groups, degree) + n_extra
                + math.comb(len(g_seg) + seg_degree, seg_degree) <= ctx.budget)

    with_seg = {choice.degree: (first.start, first.rms_m, first.held_max_m)}
    for d2 in choice.by_degree:
        if d2 != choice.degree and in_budget(d2, sd_seg):
            found = design.segment_fit(groups, d2, choice.top, muscle.target, g_seg, sd_seg,
                                       config)
            with_seg[d2] = (found[3], found[4], design.last_held_max)
    low = min(v[1] for v in with_seg.values())
    d = min((k for k, v in with_seg.items() if v[1] <= low * (1.0 + config.degree_tolerance)),
            key=lambda k: (_group_terms(groups, k), k))
    start, best_rms, held_max = with_seg[d]
    for sd in seg_degrees if d != choice.degree else ():
        if sd != sd_seg and in_budget(d, sd):
            found = design.segment_fit(groups, d, choice.top, muscle.target, g_seg, sd, config)
            if found[4] < best_rms:
                sd_seg, start, best_rms, held_max = sd, found[3], found[4], design.last_held_max
    return _Segment(g_seg, sd_seg, start, d, best_rms, held_max)


def _final_fit(ctx: _Context, muscle: _Muscle, choice: _Choice, segment: _Segment | None
               ) -> tuple[IntArray, FloatArray, IntArray, FloatArray, FloatArray, float]:
    """Step 5, the final fit on every sample: (the polynomial's exponent rows, its
    coefficients then the extra columns', the segment term's rows and coefficients (none:
    empty), the residual (N,) [m], the held-out largest error [m])."""
    design, target = muscle.design, muscle.target
    if segment is None:
        terms, w, res = design.fit_all(choice.groups, choice.degree, target, choice.top)
        return (terms, w, np.zeros((0, ctx.x.shape[1]), dtype=np.int64), np.zeros(0), res,
                design.last_held_max)
    terms, w, seg_rows, seg_coef, _ = design.segment_fit(
        choice.groups, segment.polynomial_degree, choice.top, target, segment.joints,
        segment.degree, ctx.config, on_all=True, start=segment.start)
    res = (basis_features(ctx.x, terms) @ w[:terms.shape[0]]
           + muscle.extras @ w[terms.shape[0]:]
           + np.sqrt(np.maximum(basis_features(ctx.x, seg_rows) @ seg_coef,
                                ctx.config.segment_floor_m**2)) - target)
    return terms, w, seg_rows, seg_coef, res, segment.held_max_m


def _print_progress(name: str, f: MuscleFit) -> None:
    """One line on stderr of what the fit found for muscle ``name``."""
    shown = " + ".join("(" + ",".join(g) + ")" for g in f.groups)
    seg = (f" + sqrt(P({','.join(f.segment_joints)}), degree {f.segment_degree}; "
           f"without: {1e3 * f.polynomial_validation_rms_m:.3f} mm)"
           if f.segment_joints else "")
    wire = (f", wire {1e6 * f.compliance_m_per_n:.2f} mm/kN"
            if f.compliance_m_per_n else "")
    print(f"  {name:<24} joints {shown:<44} degree {f.degree} "
          f"({f.terms} terms): rms {1e3 * f.rms_m:.3f} mm, held-out rms "
          f"{1e3 * f.validation_rms_m:.3f} mm{seg}{wire}", file=sys.stderr, flush=True)


def _union_mapping(ctx: _Context, fitted: list[_Fitted], lower: FloatArray, upper: FloatArray,
                   offsets: FloatArray) -> LearnedMapping:
    """The mapping over the union basis of every muscle's rows (each muscle zero on the
    others'), with l_min and l_max (paper eq. 2-4) the fitted lengths' extremes over the
    recorded poses."""
    rec, m = ctx.rec, len(fitted)
    union = np.unique(np.vstack([f.rows for f in fitted] + [f.segment_rows for f in fitted]),
                      axis=0)
    order = np.lexsort(np.vstack([union[:, ::-1].T, union.sum(axis=1)]))
    union = union[order]
    index = {tuple(r): k for k, r in enumerate(union.tolist())}
    coefficients = np.zeros((m, union.shape[0]))
    segment_coefficients = np.zeros((m, union.shape[0]))
    for i, f in enumerate(fitted):
        for row, c in zip(f.rows.tolist(), f.coefficients):
            coefficients[i, index[tuple(row)]] = c
        for row, c in zip(f.segment_rows.tolist(), f.segment_coefficients):
            segment_coefficients[i, index[tuple(row)]] = c
    mapping = LearnedMapping(tuple(rec.joint_names), tuple(rec.muscle_names), union,
                             coefficients, lower, upper, np.zeros(m), np.zeros(m), offsets,
                             segment_coefficients=segment_coefficients,
                             segment_floor_m=ctx.config.segment_floor_m)
    lengths = mapping.lengths_batch(rec.q_rad)
    mapping.l_min_m, mapping.l_max_m = lengths.min(axis=0), lengths.max(axis=0)
    return mapping


def _fit_meta(ctx: _Context, fits: list[MuscleFit], offsets: FloatArray) -> dict[str, Any]:
    """The mapping's ``meta``: the recording, the settings and what was found per muscle,
    and the provenance (git commit, python, numpy, scipy, ... versions)."""
    rec, config = ctx.rec, ctx.config
    return {
        "recording": {"path": rec.path, "source": rec.source, "config_dir": rec.config_dir,
                      "samples": rec.n_samples, "distinct_poses": ctx.poses,
                      "sessions": int(offsets.shape[0]),
                      "duration_s": float(rec.stamp_s[-1] - rec.stamp_s[0])},
        "fit": {"config": {k: getattr(config, k) for k in config.__dataclass_fields__},
                "held_out_fraction": float(ctx.held.mean()),
                "muscles": {name: {"joints": list(f.joints), "degree": f.degree,
                                   "groups": [list(g) for g in f.groups],
                                   "segment_joints": list(f.segment_joints),
                                   "segment_degree": f.segment_degree,
                                   "polynomial_validation_rms_m":
                                       f.polynomial_validation_rms_m,
                                   "compliance_m_per_n": f.compliance_m_per_n,
                                   "terms": f.terms, "rms_m": f.rms_m, "max_m": f.max_m,
                                   "validation_rms_m": f.validation_rms_m,
                                   "validation_max_m": f.validation_max_m,
                                   "validation_by_degree_m": {str(k): v for k, v in
                                                              f.validation_by_degree_m.items()}}
                            for name, f in zip(rec.muscle_names, fits)}},
        "provenance": provenance(),
    }
