"""Randomized calibration of pkm_identifier (issue 14): a hexapod plant written independently of the estimator's
signal chain, and the ``pkm/*`` families of ``contact-dynamics calibrate``.

The plant (``draw_plant`` -> ``Plant``, ``simulate``, ``sense``):

* machine: the UF-like geometry with its 12 inertial parameters drawn log-uniformly around one of the three
  printed mass sets (UF light platform, Hexel-like heavy platform) -- payloads over a decade;
* motion: a prescribed pose q(t) = home + sum_j A_j sin(w_j t + phi_j) per coordinate with random frequencies
  (0.3 to ``f_max`` Hz, up to 20 Hz), random phases and amplitudes kept inside the stroke; kinds 'multisine'
  (all 6 DOF), 'translation' (x, y, z only: the platform inertias are not excited), 'rotation' (angles only),
  'weak' (a few mm / 0.3 deg: little information against the noise);
* forces: the rigid-body inverse dynamics of the 13-body model plus strut friction of a law the estimator does
  not use: F_f = fv L_dot + fc tanh(L_dot / v_s) (Stribeck-free smooth Coulomb, v_s 1 to 5 mm/s), sized so
  that its rms is 0-50 % of the rms dynamic force;
* sensors: strut lengths quantised (0.1-1 um encoder) and/or noisy, actuator force noise 0.1-5 % of the
  force rms, a velocity channel with 0.1-5 % noise (of the L_dot rms), stamp jitter (true sample times
  uneven; the stamps say when the samples were taken), holes (0.02-0.3 s gaps).

The families run the pipeline of the node / run-bag (``PkmPipeline``, JointState columns in 50-sample chunks,
``step`` after each) and return one ``Outcome`` per published base parameter.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dynamics as D
from . import kinematics as K
from .geometry import load_machine
from .machine import INERTIA_NAMES_12

KINDS = ('multisine', 'translation', 'rotation', 'weak')
STRUTS = tuple(f'strut_{i}' for i in range(1, 7))


@dataclass
class Plant:
    """One drawn experiment: truth and sensor samples (stamps in ns, L [m], L_dot [m/s], F [N])."""
    machine: object
    theta12: np.ndarray
    theta8: np.ndarray
    kind: str
    stamps_ns: np.ndarray
    L: np.ndarray
    Ld: np.ndarray
    F: np.ndarray
    friction_share: float       # rms friction / rms dynamic force
    notes: dict


def motion(kind: str, rng: np.random.Generator, t: np.ndarray, home_q: np.ndarray, f_max: float = 8.0,
           scale: float = 1.0):
    """Analytic (q, qd, qdd) of a random sum of sines about home (N, 6) for the motion ``kind``."""
    dof = {'multisine': range(6), 'translation': range(3), 'rotation': range(3, 6), 'weak': range(6)}[kind]
    q = np.tile(home_q, (len(t), 1))
    qd = np.zeros_like(q)
    qdd = np.zeros_like(q)
    for j in dof:
        n_tones = int(rng.integers(1, 4))
        f = np.exp(rng.uniform(np.log(0.3), np.log(f_max), n_tones))
        ph = rng.uniform(0, 2 * np.pi, n_tones)
        # amplitude budget per coordinate: 20 mm (translation) or 4 deg (angles), split over the tones, with a
        # peak acceleration kept below ~8 m/s^2 (or 40 rad/s^2)
        budget = (0.020 if j < 3 else np.radians(4.0)) * scale * rng.uniform(0.4, 1.0)
        acc_cap = (8.0 if j < 3 else 40.0)
        a = budget * rng.dirichlet(np.ones(n_tones))
        w = 2 * np.pi * f
        a = np.minimum(a, acc_cap / n_tones / w ** 2)
        arg = w[None, :] * t[:, None] + ph
        q[:, j] += (a * (np.sin(arg) - np.sin(ph))).sum(1)
        qd[:, j] += (a * w * np.cos(arg)).sum(1)
        qdd[:, j] += (-a * w ** 2 * np.sin(arg)).sum(1)
    return q, qd, qdd


def draw_theta12(rng: np.random.Generator, m) -> np.ndarray:
    """12 inertial parameters: a printed mass set (UF or Hexel-like heavy platform) scaled log-uniformly."""
    base = load_machine('hexel_like').theta12() if rng.random() < 0.5 else m.theta12()
    factor = np.exp(rng.uniform(np.log(0.5), np.log(2.0), 12))
    th = base * factor
    return th


def simulate(m, theta12, q, qd, qdd, fv=None, fc=None, v_s: float = 0.003):
    """Strut lengths, rates and actuator forces of the prescribed motion: F = inverse dynamics + friction
    fv L_dot + fc tanh(L_dot / v_s) (per strut; None: no friction)."""
    F = D.inverse_dynamics(m, theta12, q, qd, qdd)
    p = K.pose(m, q)
    sm = K.strut_motion(p, qd, qdd)
    Ff = np.zeros_like(F)
    if fv is not None:
        Ff = fv * sm.Ld + fc * np.tanh(sm.Ld / v_s)
    return p.L, sm.Ld, F, Ff


def draw_plant(rng: np.random.Generator, kind: str = 'multisine', *, duration: float = 1.5, rate: float = 1000.0,
               friction_max: float = 0.5, noise: tuple = (0.001, 0.05), f_max: float = 8.0, jitter: bool = True,
               holes: bool = True, velocity_noise: tuple = (0.001, 0.05), scale: float = 1.0,
               quantum: float | None = None, use_velocity: bool = False, friction_law: str = 'tanh') -> Plant:
    """One random experiment of the given motion kind (see the module docstring). ``friction_law``: 'tanh'
    (the plant's own law, above) or 'band' (the estimator's 'continuous' band law, ``dynamics.friction_force``,
    with random viscous / Coulomb coefficients per strut: the model of estimate_friction fits)."""
    m = load_machine('uf_like')
    th12 = draw_theta12(rng, m)
    n = int(round(duration * rate))
    dt = 1.0 / rate
    t = np.arange(n) * dt
    if jitter:                                    # uneven true sample times, stamped correctly
        t = t + rng.uniform(-0.2, 0.2, n) * dt * rng.random()
        t[0] = 0.0
    q, qd, qdd = motion(kind if kind != 'weak' else 'multisine', rng, t, m.home_q, f_max,
                        scale * (0.1 if kind == 'weak' else 1.0))
    L, Ld, F, _ = simulate(m, th12, q, qd, qdd)
    dyn = F - D.inverse_dynamics(m, th12, q, np.zeros_like(qd), np.zeros_like(qdd))   # minus the static part
    dyn_rms = float(np.sqrt((dyn ** 2).mean())) + 1e-9
    share = rng.uniform(0.0, friction_max) if friction_max > 0 else 0.0
    Ff = np.zeros_like(F)
    if share > 0 and friction_law == 'band':
        mix = rng.random()                              # share of viscous vs Coulomb
        fv = rng.uniform(0.5, 1.5, 6) * mix / (np.sqrt((Ld ** 2).mean()) + 1e-12)
        fc = rng.uniform(0.5, 1.5, 6) * (1 - mix)
        unit = D.friction_force(Ld, np.ravel(np.column_stack([fv, fc])), 'continuous')
        Ff = unit * share * dyn_rms / (np.sqrt((unit ** 2).mean()) + 1e-12)
    elif share > 0:
        v_s = rng.uniform(0.001, 0.005)
        shape = rng.uniform(0.5, 1.5, 6)
        mix = rng.random()                              # share of viscous vs Coulomb
        unit = shape * (mix * Ld / (np.sqrt((Ld ** 2).mean()) + 1e-12) + (1 - mix) * np.tanh(Ld / v_s))
        Ff = unit * share * dyn_rms / (np.sqrt((unit ** 2).mean()) + 1e-12)
    F_rms = float(np.sqrt((F ** 2).mean()))
    level = float(np.exp(rng.uniform(np.log(noise[0]), np.log(noise[1]))))
    Fm = F + Ff + rng.normal(0, level * F_rms, F.shape)
    vlevel = float(np.exp(rng.uniform(np.log(velocity_noise[0]), np.log(velocity_noise[1]))))
    Ldm = Ld + rng.normal(0, vlevel * float(np.sqrt((Ld ** 2).mean())), Ld.shape)
    qz = quantum if quantum is not None else float(np.exp(rng.uniform(np.log(1e-7), np.log(1e-6))))
    Lm = np.round(L / qz) * qz if qz > 0 else L.copy()
    keep = np.ones(n, bool)
    n_holes = 0
    if holes and rng.random() < 0.5:
        n_holes = int(rng.integers(1, 3))
        for _ in range(n_holes):
            w = int(rng.uniform(0.02, 0.3) * rate)
            s = int(rng.integers(int(0.1 * n), max(int(0.1 * n) + 1, n - w - 1)))
            keep[s:s + w] = False
    stamps = 1_000_000_000 + np.round(t * 1e9).astype(np.int64)
    return Plant(m, th12, D.base_from_12(th12), kind, stamps[keep], Lm[keep], Ldm[keep], Fm[keep],
                 share, {'force_noise': level, 'velocity_noise': vlevel, 'quantum': qz, 'holes': n_holes})




# ---------------------------------------------------------------------------------------------------- families
def _params(theta0, **over) -> dict:
    from contact_dynamics_common.paths import config_dir
    from contact_dynamics_common.ros.params import load_params_file, validate_all
    from .config import NODE_NAME, PARAMS
    raw = load_params_file(str(config_dir() / 'pkm_identifier.yaml'), NODE_NAME)
    raw = {k: v for k, v in raw.items() if k != 'use_sim_time'}
    return validate_all(PARAMS, {**raw, 'theta0': [float(v) for v in theta0], **over})


def identify_plant(plant: Plant, theta0, chunk: int = 50, **over):
    """The node's pipeline on the plant's JointState stream (``chunk`` messages per update, as a 20 Hz timer
    on a 1 kHz stream); returns (final estimate, pipeline)."""
    from .pipeline import PkmPipeline
    pl = PkmPipeline(_params(theta0, **over))
    est = None
    for i in range(0, len(plant.stamps_ns), chunk):
        sl = slice(i, i + chunk)
        pl.push_joint_columns(plant.stamps_ns[sl], STRUTS, plant.L[sl], plant.Ld[sl], plant.F[sl])
        est = pl.step() or est
    return est, pl


def outcomes(est, truth8, *, model_fits: bool, good_data: bool, estimator: str = 'ukf') -> list:
    """One Outcome per base parameter: valid = the estimate is valid and the parameter is excited
    (identified or converging: published as a value with its sigma); not_excited / prior_only are refused."""
    from contact_dynamics_common.trust.calibration import Outcome
    out = []
    for j in range(8):
        flag = est.flags[j]
        ok = bool(est.valid and flag in ('identified', 'converging'))
        reason = '' if ok else (est.status if not est.valid else flag)
        out.append(Outcome(estimator, est.names[j], float(est.values[j]), float(est.std[j]), float(truth8[j]), ok,
                           model_fits, good_data, reason, est.units[j]))
    return out


def _prior(rng, truth8):
    """A prior drawn as the shipped P_0 = diag((0.5 theta_0)^2) says: truth = theta_0 (1 + 0.5 z), z ~ N(0, 1)
    cut at +-1.8 (theta_0 stays positive)."""
    z = np.clip(rng.standard_normal(8), -1.8, 1.8)
    return truth8 / (1.0 + 0.5 * z)


def _draw(rng, kind: str, *, friction_max: float, estimate_friction: bool = False, duration: float = 3.0,
          **plant_kw) -> list:
    plant = draw_plant(rng, kind, duration=duration, friction_max=friction_max, **plant_kw)
    over = {'estimate_friction': estimate_friction}
    if plant_kw.get('use_velocity'):
        over['use_measured_velocity'] = True
    est, _ = identify_plant(plant, _prior(rng, plant.theta8), **over)
    fits = plant.friction_share == 0.0 or (estimate_friction and plant_kw.get('friction_law') == 'band')
    good = fits and kind == 'multisine' and plant.notes['force_noise'] <= 0.02
    return outcomes(est, plant.theta8, model_fits=fits, good_data=good)


def multisine(rng):
    """Full 6-DOF multisine (0.3-8 Hz tones), no friction: the model fits; force noise 0.1-5 %, quantised
    lengths, stamp jitter, holes."""
    return _draw(rng, 'multisine', friction_max=0.0)


def translation_only(rng):
    """Pure translation (x, y, z tones) with strut friction 0-50 % of the dynamic force, estimated (the
    plant's tanh law vs the estimator's band law): the platform inertias must come out not_excited."""
    return _draw(rng, 'translation', friction_max=0.5, estimate_friction=True)


def rotation_only(rng):
    """Pure rotation (phi, theta, psi tones), no friction."""
    return _draw(rng, 'rotation', friction_max=0.0)


def weak_motion(rng):
    """A 6-DOF multisine at a tenth of the amplitude: little information against the noise."""
    return _draw(rng, 'weak', friction_max=0.0)


def friction_unmodelled(rng):
    """6-DOF multisine with strut friction 0-50 % of the dynamic force (tanh Coulomb + viscous, shapes per
    strut), estimate_friction false: model mismatch, must be refused or covered."""
    return _draw(rng, 'multisine', friction_max=0.5)


def friction_estimated(rng):
    """6-DOF multisine with friction 0-50 %, estimate_friction true (the estimator's band law vs the plant's
    tanh law: a small remaining mismatch)."""
    return _draw(rng, 'multisine', friction_max=0.5, estimate_friction=True)


def friction_own_law(rng):
    """6-DOF multisine with friction 0-50 % of the estimator's own band law, estimate_friction true: the model
    fits, so this family measures the false refusals of the friction-estimating mode (its friction-law test)."""
    return _draw(rng, 'multisine', friction_max=0.5, estimate_friction=True, friction_law='band')


def velocity_channel(rng):
    """6-DOF multisine, no friction, use_measured_velocity true with 0.1-5 % noise on the velocity channel."""
    return _draw(rng, 'multisine', friction_max=0.0, use_velocity=True)
