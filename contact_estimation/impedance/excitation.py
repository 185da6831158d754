"""Excitation design and the identifiability check of wahl_colton.md B5 / B7 item 3.

A single tone x = xbar + A sin(w t) makes a = -w^2 (x - xbar): the regressor [a v x 1] has rank 3 in every
segment and m cannot be told from k (kappa ~ 1e16). A multisine (Schroeder phases by default) separates them.

- ``multisine``: x, v, a of offset + sum_i A_i sin(2 pi f_i t + phi_i), with an optional raised-cosine fade-in
  (derivatives exact, product rule);
- ``design_multisine``: scales the relative amplitudes so that the motion fits the stroke and the velocity,
  acceleration and (with a rough model guess) force limits of the device (LinMot defaults: 70 mm, 3.4 m/s,
  272 m/s^2, 60 N);
- ``check_design``: per-segment column-normalised condition number of the commanded trajectory: 'ok',
  'warn' above 1e3, 'refuse' above 1e6 (``raise_if_refused``), with the per-segment sample counts.
The post-experiment check is in ``segmented.fit_segmented`` (unique variance of every regressor column).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .segmented import DIRECTIONS, KAPPA_REFUSE, KAPPA_WARN, normalised_condition, regressor, segment_index


class ExcitationRefused(ValueError):
    """The trajectory cannot separate the parameters (or violates the device limits)."""


@dataclass(frozen=True)
class Limits:
    """Device limits (LinMot P01-23x160 of the paper by default)."""

    stroke: tuple = (0.0, 0.070)      # m, allowed position range
    velocity: float = 3.4             # m/s
    acceleration: float = 272.0       # m/s^2
    force: float = 60.0               # N


def schroeder_phases(n: int) -> np.ndarray:
    """phi_i = -pi i (i - 1) / n: low crest factor for equal-amplitude multisines."""
    i = np.arange(1, n + 1)
    return -np.pi * i * (i - 1) / n


def multisine(t, offset: float, amplitudes, frequencies, phases=None,
              fade_in: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, v, a (m, m/s, m/s^2) of offset + w(t) sum_i A_i sin(2 pi f_i t + phi_i); w a raised-cosine ramp
    from 0 to 1 over ``fade_in`` s (1 afterwards). ``phases``: None (zero), 'schroeder' or a sequence."""
    t = np.asarray(t, dtype=float)
    amp = np.asarray(amplitudes, dtype=float)
    f = np.asarray(frequencies, dtype=float)
    if amp.shape != f.shape or amp.ndim != 1 or not len(f):
        raise ValueError('amplitudes and frequencies must be equal-length 1-D sequences')
    if np.any(f <= 0) or not np.all(np.isfinite(amp)):
        raise ValueError('frequencies must be > 0 and amplitudes finite')
    if phases is None:
        ph = np.zeros_like(f)
    elif isinstance(phases, str):
        if phases != 'schroeder':
            raise ValueError(f"phases must be None, 'schroeder' or a sequence, got {phases!r}")
        ph = schroeder_phases(len(f))
    else:
        ph = np.asarray(phases, dtype=float)
    w = 2 * np.pi * f
    arg = np.outer(t, w) + ph
    s = (np.sin(arg) * amp).sum(axis=1)
    ds = (np.cos(arg) * amp * w).sum(axis=1)
    dds = -(np.sin(arg) * amp * w ** 2).sum(axis=1)
    if fade_in > 0:
        r = np.clip(t / fade_in, 0.0, 1.0)
        inside = (t > 0) & (t < fade_in)
        g = 0.5 - 0.5 * np.cos(np.pi * r)
        dg = np.where(inside, 0.5 * np.pi / fade_in * np.sin(np.pi * r), 0.0)
        ddg = np.where(inside, 0.5 * (np.pi / fade_in) ** 2 * np.cos(np.pi * r), 0.0)
        return offset + g * s, dg * s + g * ds, ddg * s + 2 * dg * ds + g * dds
    return offset + s, ds, dds


@dataclass
class Design:
    offset: float
    amplitudes: np.ndarray
    frequencies: np.ndarray
    phases: np.ndarray
    peak: dict                       # position range, |v|, |a|, |F| of the design
    warnings: list = field(default_factory=list)

    def motion(self, t, fade_in: float = 0.0):
        return multisine(t, self.offset, self.amplitudes, self.frequencies, self.phases, fade_in)


def design_multisine(frequencies, relative_amplitudes=None, *, limits: Limits = Limits(),
                     span: tuple | None = None, phases='schroeder', model: dict | None = None,
                     margin: float = 0.95) -> Design:
    """Largest multisine within ``span`` (default the whole stroke) and the device limits.

    ``relative_amplitudes`` (default 1/f^2: equal acceleration per tone); ``model``: optional rough
    {'mass', 'damping', 'stiffness', 'offset_force'} guess used for the force limit.
    """
    f = np.asarray(frequencies, dtype=float)
    rel = 1.0 / f ** 2 if relative_amplitudes is None else np.asarray(relative_amplitudes, dtype=float)
    lo, hi = span if span is not None else limits.stroke
    if not hi > lo or not (limits.stroke[0] <= lo and hi <= limits.stroke[1]):
        raise ExcitationRefused(f'span [{lo}, {hi}] m is empty or outside the stroke {limits.stroke}')
    ph = schroeder_phases(len(f)) if isinstance(phases, str) else (np.zeros_like(f) if phases is None
                                                                   else np.asarray(phases, dtype=float))
    commensurate = np.all(f * 1000 % 1 == 0)
    period = 1000.0 / np.gcd.reduce(np.round(f * 1000).astype(np.int64)) if commensurate else 20.0
    tt = np.linspace(0.0, min(period, 60.0), 200000)
    x0, v0, a0 = multisine(tt, 0.0, rel, f, ph)
    scale = margin * min((hi - lo) / (x0.max() - x0.min()), limits.velocity / np.abs(v0).max(),
                         limits.acceleration / np.abs(a0).max())
    offset = 0.5 * (lo + hi) - scale * 0.5 * (x0.max() + x0.min())
    warnings = []
    fpk = float('nan')
    if model:
        force = (model.get('mass', 0.0) * a0 * scale + model.get('damping', 0.0) * v0 * scale
                 + model.get('stiffness', 0.0) * (offset + x0 * scale) + model.get('offset_force', 0.0))
        fpk = float(np.abs(force).max())
        if fpk > limits.force:
            shrink = margin * limits.force / fpk
            warnings.append(f'force {fpk:.3g} N > {limits.force} N: amplitudes scaled by {shrink:.3g}')
            scale *= shrink
            offset = 0.5 * (lo + hi) - scale * 0.5 * (x0.max() + x0.min())
            fpk *= shrink
    amp = rel * scale
    peak = {'x_min': float(offset + scale * x0.min()), 'x_max': float(offset + scale * x0.max()),
            'v': float(scale * np.abs(v0).max()), 'a': float(scale * np.abs(a0).max()), 'F': fpk}
    if len(f) < 2:
        warnings.append('a single tone cannot separate mass and stiffness (kappa ~ 1e16): add tones')
    return Design(float(offset), amp, f, ph, peak, warnings)


def check_limits(x, v, a, limits: Limits = Limits(), F=None) -> list[str]:
    """Violations of the device limits by a commanded trajectory (empty list: within limits)."""
    out = []
    if np.min(x) < limits.stroke[0] or np.max(x) > limits.stroke[1]:
        out.append(f'position [{np.min(x):.4g}, {np.max(x):.4g}] m outside the stroke {limits.stroke}')
    if np.abs(v).max() > limits.velocity:
        out.append(f'|v| {np.abs(v).max():.3g} m/s > {limits.velocity} m/s')
    if np.abs(a).max() > limits.acceleration:
        out.append(f'|a| {np.abs(a).max():.3g} m/s^2 > {limits.acceleration} m/s^2')
    if F is not None and np.abs(F).max() > limits.force:
        out.append(f'|F| {np.abs(F).max():.3g} N > {limits.force} N')
    return out


@dataclass
class DesignCheck:
    """Per (direction, segment) kappa and sample count of a commanded trajectory, and the verdict."""

    edges: np.ndarray
    kappa: np.ndarray            # (2, N), inf where there are fewer than 4 samples
    n: np.ndarray                # (2, N)
    verdict: str                 # 'ok' | 'warn' | 'refuse'
    message: str
    limit_violations: list = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return self.verdict == 'refuse'

    def raise_if_refused(self) -> None:
        if self.refused:
            raise ExcitationRefused(self.message)


def check_design(x, v, a, edges, *, v_min: float = 5e-3, n_min: int = 200, limits: Limits | None = None,
                 warn: float = KAPPA_WARN, refuse: float = KAPPA_REFUSE) -> DesignCheck:
    """B5 (i): kappa of [a v x 1] per segment and direction for the commanded (noise-free) x, v, a."""
    x, v, a = (np.asarray(y, dtype=float) for y in (x, v, a))
    edges = np.asarray(edges, dtype=float)
    nseg = len(edges) - 1
    seg = segment_index(x, edges)
    use = (seg >= 0) & (np.abs(v) > v_min)
    kappa = np.full((2, nseg), np.inf)
    n = np.zeros((2, nseg), dtype=int)
    for d in (0, 1):
        sel = use & ((v > 0) if d == 0 else (v < 0))
        for j in range(nseg):
            idx = sel & (seg == j)
            n[d, j] = int(idx.sum())
            if n[d, j] >= 4:
                kappa[d, j] = normalised_condition(regressor(x[idx], v[idx], a[idx]))
    covered = n >= n_min
    problems = []
    worst = float(np.max(kappa[covered])) if covered.any() else float('inf')
    if not covered.any():
        verdict = 'refuse'
        problems.append(f'no segment gets {n_min} samples with |v| > {v_min} m/s')
    elif worst > refuse:
        verdict = 'refuse'
    elif worst > warn or not covered.all():
        verdict = 'warn'
    else:
        verdict = 'ok'
    bad = [f'{DIRECTIONS[d]} segment {j}: kappa {kappa[d, j]:.3g}' for d in (0, 1) for j in range(nseg)
           if covered[d, j] and kappa[d, j] > warn]
    if bad:
        problems.append('mass and stiffness cannot be separated' if worst > refuse else 'poorly conditioned')
        problems.append('; '.join(bad[:4]) + (f' (+{len(bad) - 4} more)' if len(bad) > 4 else ''))
    if not covered.all():
        problems.append(f'{int((~covered).sum())} (segment, direction) pairs get fewer than {n_min} samples')
    violations = check_limits(x, v, a, limits) if limits is not None else []
    if violations:
        verdict = 'refuse'
        problems.extend(violations)
    msg = (f'excitation {verdict}: worst kappa {worst:.3g} (warn > {warn:.0e}, refuse > {refuse:.0e})'
           + (': ' + '; '.join(problems) if problems else ''))
    return DesignCheck(edges, kappa, n, verdict, msg, violations)


def main(argv: list[str] | None = None) -> int:
    """contact-dynamics impedance-excitation: design a multisine for a device and check it (B5 (i), B7 3)."""
    import argparse
    import csv
    from pathlib import Path

    from .segmented import uniform_edges

    ap = argparse.ArgumentParser(prog='contact-dynamics impedance-excitation', description=(
        'Design a Schroeder-phased multisine within the stroke and the velocity, acceleration and force '
        'limits of the device, and check per segment that it separates mass and stiffness (kappa: warn > '
        '1e3, refuse > 1e6). Exit code 3 when the design is refused.'))
    ap.add_argument('--frequencies', type=float, nargs='+', default=[1.5, 6.3, 13.7], help='tones (Hz)')
    ap.add_argument('--amplitudes', type=float, nargs='+', help='relative amplitudes (default 1/f^2)')
    ap.add_argument('--span', type=float, nargs=2, default=[0.0, 0.024], help='position range to cover (m)')
    ap.add_argument('--segments', type=int, default=8)
    ap.add_argument('--stroke', type=float, nargs=2, default=[0.0, 0.070], help='device stroke (m)')
    ap.add_argument('--max-velocity', type=float, default=3.4)
    ap.add_argument('--max-acceleration', type=float, default=272.0)
    ap.add_argument('--max-force', type=float, default=60.0)
    ap.add_argument('--guess', type=float, nargs=3, metavar=('MASS', 'DAMPING', 'STIFFNESS'),
                    help='rough model for the force limit (kg, N*s/m, N/m)')
    ap.add_argument('--duration', type=float, default=100.0)
    ap.add_argument('--rate', type=float, default=4000.0)
    ap.add_argument('--fade-in', type=float, default=2.0)
    ap.add_argument('--min-velocity', type=float, default=5e-3)
    ap.add_argument('--out', help='CSV of the commanded trajectory t, x, v, a')
    a = ap.parse_args(argv)
    limits = Limits(tuple(a.stroke), a.max_velocity, a.max_acceleration, a.max_force)
    model = dict(zip(('mass', 'damping', 'stiffness'), a.guess)) if a.guess else None
    try:
        d = design_multisine(a.frequencies, a.amplitudes, limits=limits, span=tuple(a.span), model=model)
    except ExcitationRefused as exc:
        print(f'refused: {exc}')
        return 3
    t = np.arange(int(round(a.duration * a.rate))) / a.rate
    x, v, acc = d.motion(t, fade_in=a.fade_in)
    keep = t >= a.fade_in
    chk = check_design(x[keep], v[keep], acc[keep], uniform_edges(a.span[0], a.span[1], a.segments),
                       v_min=a.min_velocity, limits=limits)
    tones = zip(d.amplitudes, d.frequencies)
    print('tones: ' + ', '.join(f'{amp * 1e3:.3g} mm @ {f:g} Hz' for amp, f in tones))
    print(f"offset {d.offset * 1e3:.3g} mm; x in [{d.peak['x_min'] * 1e3:.3g}, "
          f"{d.peak['x_max'] * 1e3:.3g}] mm, "
          f"|v| <= {d.peak['v']:.3g} m/s, |a| <= {d.peak['a']:.3g} m/s^2"
          + (f", |F| <= {d.peak['F']:.3g} N" if np.isfinite(d.peak['F']) else ''))
    for w in d.warnings:
        print(f'warning: {w}')
    for dn, row_k, row_n in zip(DIRECTIONS, chk.kappa, chk.n):
        print(f'{dn}: kappa ' + ' '.join(f'{k:.3g}' for k in row_k)
              + ' | samples ' + ' '.join(str(n) for n in row_n))
    print(chk.message)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, 'w', newline='', encoding='utf-8') as fh:
            w = csv.writer(fh)
            w.writerow(['t', 'x', 'v', 'a'])
            w.writerows(np.column_stack([t, x, v, acc]).tolist())
        print(f'trajectory written to {a.out}')
    return 3 if chk.refused else 0
