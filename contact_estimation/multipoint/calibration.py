"""Randomized calibration families of the multi-point estimator (``contact-dynamics calibrate --family
'multipoint/*'``; runner and rates: ``contact_dynamics_common.trust.calibration``).

The plant is *not* the ACU surrogate the estimator was developed on: a 0.8 kg tripod (a plate on three
square feet at unequal radii) against a floor slab, simulated by ``simulate.RigidBodySim`` at dt = 50 µs and
recorded at 10 kHz; the streams the estimator sees are resampled from that record by this module, as a sensor
would sample them. Per draw (0.12–0.15 s of simulated time, geometry cached):

- contact stiffness k log-uniform over 3e3…3e5 N/m (two decades), damping ratio ζ 0.05–0.5 of the three-feet
  mode (b = 2ζ√(k m/3)), friction μ 0.05–0.6;
- motion: ``drop`` — released 0.2–1 mm above the floor, tilted 1–4° with 0.05–0.2 m/s lateral velocity
  and a spin (bounces, one to three feet, sliding); ``push`` — a compliant fixture presses the tripod into
  the floor and drags it sideways (slow, quasi-static sliding with a 5–40 Hz push ripple);
- pose source: Odometry (twist measured, with noise) or PoseStamped (twist differentiated by the estimator);
  pose stream at the wrench rate (1 kHz) or at 1/2 or 1/3 of it; wrench at 1 kHz;
- noise: 0.1–5 % on the wrench (of its RMS) and on the pose (position: of the largest interference;
  orientation: the same over the plate radius; Odometry twist: of its RMS), drawn independently;
- stamp jitter (30 %): the real sampling instants deviate by up to 30 % of a period (stamps true);
- holes (30 %): 10–40 ms missing from the pose or the wrench stream;
- model mismatch: when more than 10 % of the contact samples creep slower than 1 mm/s, the simulator's
  sliding law chatters (its friction flips sign every step: a stick the estimator does not model) and the
  draw counts as not model-consistent (``model_fits`` False; still counted for confident-wrong);
- model mismatch (``*_mismatch`` families): Hunt–Crossley normal law (F_n = k δ^1.5 + λ δ^1.5 δ̇) or Coulomb
  friction μ F_n (damping in the friction) or a clipped (non-pulling) KV law, where the estimator assumes KV
  with sliding friction μ k δ.

Each draw runs the offline node (``OfflineMultiPointEstimator``: the run-bag / live-node pipeline) on the
streams and returns k, b, μ with their published σ and verdict. ``good_data`` (counted for false refusals):
the model fits, the contact mode is resolved by every stream (f_contact x pose_div < 60 Hz: at least 16.7
samples per contact period in the wrench and in the pose stream), noise ≤ 1 %, no hole, and the record holds at
least 40 instants in contact.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.spatial.transform import Rotation

from contact_dynamics_common.params import validate_all
from contact_dynamics_common.trust.calibration import Outcome
from contact_estimation.geometry.body import body_from_spec
from contact_estimation.geometry.contacts import ContactKinematics
from contact_estimation.geometry.rotations import quat_to_matrix

from .config import PARAMS
from .offline import OfflineMultiPointEstimator
from .simulate import ContactLaw, Fixture, RigidBodySim

MASS = 0.8
INERTIA = (1.2e-3, 1.2e-3, 2.0e-3)
FEET = ((0.05, 0.0), (-0.03, 0.045), (-0.03, -0.045))          # foot centres (x, y), m
PLATE = (0.13, 0.13, 0.01)
FOOT = (0.01, 0.01, 0.02)
SIM_DT = 5e-5
SIM_RATE = 10000.0
WRENCH_RATE = 1000.0
NAMES = ('stiffness', 'damping', 'friction')
#: the settings of the newest draw (for inspecting a surprising outcome)
LAST_DRAW: dict = {}
UNITS = ('N/m', 'N*s/m', '-')


def payload_spec() -> dict:
    parts = [{'name': 'plate', 'type': 'box', 'size': list(PLATE), 'position': [0.0, 0.0, 0.0]}]
    parts += [{'name': f'foot{i}', 'type': 'box', 'size': list(FOOT),
               'position': [x, y, -(PLATE[2] + FOOT[2]) / 2]} for i, (x, y) in enumerate(FEET)]
    return {'name': 'tripod', 'mass': MASS, 'com': [0.0, 0.0, 0.0], 'inertia': list(INERTIA), 'parts': parts}


def environment_spec() -> dict:
    return {'name': 'floor', 'parts': [{'name': 'slab', 'type': 'box', 'size': [0.8, 0.8, 0.05],
                                        'position': [0.0, 0.0, -0.025]}]}


@lru_cache(maxsize=1)
def geometry():
    """(payload, environment) bodies, built once per process."""
    return body_from_spec(payload_spec(), 'tripod'), body_from_spec(environment_spec(), 'floor')


def _lowest(q) -> float:
    """Height of the lowest payload vertex below the origin at orientation q."""
    R = Rotation.from_quat(q).as_matrix()
    V = np.vstack([p.vertices for p in geometry()[0].parts])
    return float((V @ R.T)[:, 2].min())


def _law(rng, mismatch: bool, k_max: float = 3e5):
    k = float(10 ** rng.uniform(np.log10(3e3), np.log10(k_max)))
    zeta = float(rng.uniform(0.05, 0.5))
    b = 2 * zeta * np.sqrt(k * MASS / 3)
    mu = float(rng.uniform(0.05, 0.6))
    if not mismatch:
        return ContactLaw(k, b, mu, normal='kv', friction_law='sliding'), 'kv+sliding'
    kind = rng.choice(['hunt_crossley', 'coulomb', 'kv_clipped'])
    if kind == 'hunt_crossley':            # k δ^1.5 with the same force at 0.3 mm; λ = 1.5 k α style damping
        p = 1.5
        k_hc = k / (3e-4) ** (p - 1)
        return ContactLaw(k_hc, k_hc * float(rng.uniform(0.2, 2.0)), mu, normal='hunt_crossley',
                          friction_law='sliding', exponent=p), 'hunt_crossley'
    if kind == 'coulomb':
        return ContactLaw(k, b, mu, normal='kv_clipped', friction_law='coulomb'), 'coulomb'
    return ContactLaw(k, b, mu, normal='kv_clipped', friction_law='sliding'), 'kv_clipped'


def _simulate(rng, law: ContactLaw, motion: str):
    payload, env = geometry()
    if motion == 'drop':
        q0 = Rotation.from_euler('xyz', rng.uniform(-4, 4, 2).tolist() + [rng.uniform(0, 360)],
                                 degrees=True).as_quat()
        p0 = np.array([0.0, 0.0, -_lowest(q0) + rng.uniform(0.2e-3, 1e-3)])
        speed, heading = rng.uniform(0.05, 0.2), rng.uniform(0, 2 * np.pi)
        v0 = (speed * np.cos(heading), speed * np.sin(heading), 0.0)
        sim = RigidBodySim(payload, env, law)
        return sim.run(p0, q0, v0=v0, w0=(0.0, 0.0, rng.uniform(-3, 3)), duration=0.15, dt=SIM_DT, rate=SIM_RATE)
    # push: press 2-6 N per foot plus weight, drag at 20-80 mm/s, ripple 5-40 Hz on the press
    q0 = Rotation.from_euler('z', rng.uniform(0, 360), degrees=True).as_quat()
    z0 = -_lowest(q0)
    k_fix = 3e3
    press = rng.uniform(6.0, 18.0)
    drag = rng.uniform(0.02, 0.08) * np.array([np.cos(a := rng.uniform(0, 2 * np.pi)), np.sin(a), 0.0])
    f_r, a_r = rng.uniform(5, 40), rng.uniform(0.2, 0.6)

    # the set-point leads by 1.5x the friction force / k_fix, so that the tripod slides from the start
    lead = 1.5 * 0.6 * (MASS * 9.81 + press * 1.6) / k_fix * drag / np.linalg.norm(drag)

    def setpoint(t):
        ramp = min(t / 0.03, 1.0)
        dz = (press * ramp * (1 + a_r * np.sin(2 * np.pi * f_r * t))) / k_fix
        return np.array([0.0, 0.0, z0 + 0.3e-3 - dz]) + lead + drag * t

    fixture = Fixture(setpoint, orientation=q0, stiffness=k_fix, damping=2 * 0.5 * np.sqrt(k_fix * MASS),
                      rot_stiffness=20.0, rot_damping=0.3)
    sim = RigidBodySim(payload, env, law, gravity=(0.0, 0.0, -9.81), fixture=fixture)
    return sim.run([0.0, 0.0, z0 + 0.3e-3], q0, v0=drag, duration=0.12, dt=SIM_DT, rate=SIM_RATE)


def _sample_times(rng, n_fine: int, rate: float, jitter: bool) -> np.ndarray:
    """Indices into the 10 kHz record of a stream at ``rate`` (real instants jittered by <= 30 % of a
    period when ``jitter``); strictly increasing."""
    step = SIM_RATE / rate
    base = np.arange(0.0, n_fine - 1, step)
    if jitter:
        base = base + rng.uniform(-0.3, 0.3, len(base)) * step
    idx = np.unique(np.clip(np.round(base).astype(int), 0, n_fine - 1))
    return idx


def _hole(rng, idx: np.ndarray, t: np.ndarray) -> np.ndarray:
    length = rng.uniform(0.01, 0.04)
    t0 = rng.uniform(0.03, t[idx[-1]] - length - 0.01)
    keep = (t[idx] < t0) | (t[idx] > t0 + length)
    return idx[keep]


def draw(rng: np.random.Generator, *, motion: str, mismatch: bool = False, pose_source: str | None = None,
         clean: bool = False) -> list[Outcome]:
    """One random experiment (module docstring) -> three Outcomes (k, b, μ) of the global LS. ``clean``:
    k <= 1e5 N/m, noise 0.1-1 %, no hole (the well-excited, model-consistent draws of the false-refusal rate)."""
    law, law_name = _law(rng, mismatch, 1e5 if clean else 3e5)
    tr = _simulate(rng, law, motion)
    n = len(tr.t)
    source = pose_source or str(rng.choice(['odometry', 'pose']))
    pose_div = int(rng.choice([1, 1, 2, 3]))
    jitter = bool(rng.random() < 0.3)
    hole = rng.random() < 0.3 and not clean
    top = -2.0 if clean else np.log10(0.05)
    noise_w = float(10 ** rng.uniform(-3, top))
    noise_p = float(10 ** rng.uniform(-3, top))
    iw = _sample_times(rng, n, WRENCH_RATE, jitter)
    ip = _sample_times(rng, n, WRENCH_RATE / pose_div, jitter)
    if hole:
        if rng.random() < 0.5:
            ip = _hole(rng, ip, tr.t)
        else:
            iw = _hole(rng, iw, tr.t)
    # noise scales from the exact record
    F_rms = float(np.sqrt(np.mean(np.sum(tr.force[tr.count > 0] ** 2, axis=1)))) if (tr.count > 0).any() else 1.0
    payload, env = geometry()
    cs = ContactKinematics(payload.parts, env.world_parts()).compute(quat_to_matrix(tr.q), tr.p, tr.v, tr.w)
    # share of contact samples creeping slower than 1 mm/s: the simulator's sliding law chatters there (its
    # friction flips sign every step: a stick the estimator's model does not describe)
    creeping = float(np.mean(np.linalg.norm(cs.v_t, axis=1) < 1e-3)) if len(cs) else 0.0
    d_max = float(cs.delta.max()) if len(cs) else 1e-4
    sig_F = noise_w * F_rms
    sig_x = noise_p * d_max
    sig_ang = sig_x / 0.07
    F = tr.force[iw] + rng.normal(0, sig_F, (len(iw), 3))
    Mo = tr.moment[iw] + rng.normal(0, sig_F * 0.05, (len(iw), 3))
    x = tr.p[ip] + rng.normal(0, sig_x, (len(ip), 3))
    q = (Rotation.from_rotvec(rng.normal(0, sig_ang, (len(ip), 3))) * Rotation.from_quat(tr.q[ip])).as_quat()
    stamps = lambda idx: 10**9 + np.round(tr.t[idx] * 1e9).astype(np.int64)
    params = validate_all(PARAMS, {'pose_source': source, 'wrench_expressed_in': 'world'})
    node = OfflineMultiPointEstimator(params, geometry())
    pl = node.pipeline
    pl.push_wrench_columns(stamps(iw), F, Mo)
    if source == 'odometry':
        R = quat_to_matrix(tr.q[ip])
        v_rms = float(np.sqrt(np.mean(tr.v[ip] ** 2))) or 1e-3
        w_rms = float(np.sqrt(np.mean(tr.w[ip] ** 2))) or 1e-3
        vb = np.einsum('nji,nj->ni', R, tr.v[ip] + rng.normal(0, noise_p * v_rms, (len(ip), 3)))
        wb = np.einsum('nji,nj->ni', R, tr.w[ip] + rng.normal(0, noise_p * w_rms, (len(ip), 3)))
        pl.push_pose_columns(stamps(ip), x, q, vb, wb)
    else:
        pl.push_pose_columns(stamps(ip), x, q)
    pl.step(flush=True)                          # the whole record: its last data-time block too
    est = pl.estimate
    LAST_DRAW.clear()
    LAST_DRAW.update(law=law_name, source=source, pose_div=pose_div, jitter=jitter, hole=hole, noise_wrench=noise_w,
                     noise_pose=noise_p, status=pl.status())
    f_contact = np.sqrt(3 * law.stiffness / MASS) / (2 * np.pi) if law.normal != 'hunt_crossley' else np.inf
    in_contact = int((cs.count > 0).sum() * WRENCH_RATE / SIM_RATE)
    fits = not mismatch and creeping < 0.1
    # resolved: >= 16.7 samples per contact period in *each* stream (f_contact < 60 Hz at 1 kHz; the pose stream
    # at 1/2 or 1/3 of the rate needs f_contact < 30 / 20 Hz: its ±1 differentiator attenuates the contact mode by
    # (ωh)²/6, 2.4 % at that limit and 9.5 % at 60 Hz with 500 Hz poses; interpolating it misplaces δ by ~a h²/8)
    good = bool(fits and f_contact * pose_div < 60.0 and max(noise_w, noise_p) <= 0.01 and not hole
                and in_contact >= 40)
    truth = (law.stiffness, law.damping, law.friction)
    if est is None:
        return [Outcome('global_ls', nm, float('nan'), float('nan'), tv, False, fits, good, 'no estimate', u)
                for nm, tv, u in zip(NAMES, truth, UNITS)]
    sd = est.std()
    return [Outcome('global_ls', nm, float(est.values[j]), float(sd[j]), float(truth[j]), bool(est.valid), fits,
                    good, '' if est.valid else est.reason, UNITS[j]) for j, (nm, tv) in enumerate(zip(NAMES, truth))]


def drop_kv(rng):
    """tripod drop, KV + sliding friction (the model fits); odometry or differentiated poses, pose rate 1-1/3"""
    return draw(rng, motion='drop')


def drop_pose(rng):
    """tripod drop, twist differentiated from PoseStamped at the wrench rate or slower (issue 14, class 4)"""
    return draw(rng, motion='drop', pose_source='pose')


def push_kv(rng):
    """tripod pressed and dragged by a compliant fixture (quasi-static sliding + ripple), model fits"""
    return draw(rng, motion='push')


def push_clean(rng):
    """tripod push, KV + sliding, k <= 1e5 N/m, noise 0.1-1 %, no hole: the false-refusal family"""
    return draw(rng, motion='push', clean=True)


def drop_mismatch(rng):
    """tripod drop with Hunt-Crossley, Coulomb (mu F_n) or clipped KV contact: must be flagged or covered"""
    return draw(rng, motion='drop', mismatch=True)


def push_mismatch(rng):
    """tripod push with Hunt-Crossley, Coulomb or clipped KV contact: must be flagged or covered"""
    return draw(rng, motion='push', mismatch=True)
