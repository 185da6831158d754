#!/usr/bin/env python3
"""Which regressors would remove the single-point differentiator bias at its source (issue 14, "Not done" in
doc/trust/single_point.md)? A study that prints figures, not a test and not a speed benchmark.

The plant is written here (not the project's simulator): a force-driven stiff wall with environment mass,
m ẍ + b ẋ + k x = F(t), k = 2e5 N/m, b = 500 N·s/m, m = 5 kg, F a preload plus 9 log-spaced random-phase
tones 0.3–10 Hz, integrated by scipy's solve_ivp (DOP853) and sampled at 1 kHz; white noise on x and F at
three levels. Each row fits F = k x + b ẋ + m ẍ by ordinary least squares over the record after 1 s with one
kind of regressors, all on the same ±M = ±5 samples (the node's ``differentiator_half_window`` 5 ms):

- ``local fit`` (what the pipeline uses): raw F and x, ẋ the slope of a local straight line, ẍ twice the
  curvature of a local quadratic (``signal.local_derivatives``);
- ``quartic fit``: raw F and x, ẋ and ẍ from a local degree-4 polynomial (``local_polynomial_weights``);
- ``consistent p``: F, x, ẋ and ẍ all through one compact kernel g(u) = (1 − (u/T)²)^p, T = (M + 1) h, and
  its first and second derivatives (g' and g'' weights made exact on a ramp / a parabola): F_g = k x_g + b ẋ_g +
  m ẍ_g holds for the model itself, so no differentiator bias (p = 2 biweight, p = 3 triweight).

- ``consistent 3 ±K``: the triweight on a wider support (K samples each side; no bias at any support, less
  noise in the derivatives: the errors-in-variables attenuation shrinks).

Prints the error of k, b, m in % of the truth, per noise level and seed:

  .venv/bin/python bench/study_single_point_regressors.py [--seeds 2] [--wider 20 40]
"""
from __future__ import annotations

import argparse

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.integrate import solve_ivp

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)
from contact_dynamics_common.signal import local_derivatives
from contact_dynamics_common.signal.conditioning import local_polynomial_weights

TRUTH = np.array([2e5, 500.0, 5.0])
RATE = 1000.0
M = 5


def wall(seed: int, noise_x: float, noise_f: float, duration: float = 8.0):
    k, b, m = TRUTH
    rng = np.random.default_rng(seed)
    freqs = np.geomspace(0.3, 10.0, 9)
    phase = rng.uniform(0, 2 * np.pi, 9)

    def force(t):
        t = np.atleast_1d(t)
        u = np.clip(t / 0.5, 0, 1)
        return u * u * (3 - 2 * u) * (300.0 + 50.0 * np.sin(2 * np.pi * freqs[:, None] * t + phase[:, None]).sum(0))

    t = np.arange(0, duration, 1 / RATE)
    sol = solve_ivp(lambda tt, s: [s[1], (force(tt)[0] - b * s[1] - k * s[0]) / m], (0, duration), [0.0, 0.0],
                    t_eval=t, rtol=1e-10, atol=1e-13, method='DOP853')
    return t, force(t) + noise_f * rng.standard_normal(len(t)), sol.y[0] + noise_x * rng.standard_normal(len(t))


def compact_kernel(p: int, h: float, half: int = M) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights on ±``half`` uniform samples: smoothing (sum 1), first derivative (exact on a ramp), second
    derivative (zero on a constant, exact on a parabola) of g(u) = (1 − (u/T)²)^p, T = (half + 1) h."""
    T = (half + 1) * h
    u = np.arange(-half, half + 1) * h
    s = 1 - (u / T) ** 2
    g = s ** p
    g1 = -2 * p * u / T ** 2 * s ** (p - 1)
    g2 = -2 * p / T ** 2 * s ** (p - 1) + 4 * p * (p - 1) * u ** 2 / T ** 4 * s ** max(p - 2, 0)
    a = g / g.sum()
    d1 = -g1 / (-g1 @ u)
    d2 = g2 - g2.mean()
    return a, d1, 2 * d2 / (d2 @ u ** 2)


def regressors(kind: str, t, f, x):
    """(F, x, ẋ, ẍ) at the centres [M, n − M) (a wider consistent kernel: NaN where its window is incomplete)."""
    centre = slice(M, len(t) - M)
    if kind.startswith('consistent') and '±' in kind:             # 'consistent 3 ±K': a wider support
        half = int(kind.split('±')[1])
        a, d1, d2 = compact_kernel(int(kind.split()[1]), 1 / RATE, half)
        out = [np.full(len(t) - 2 * M, np.nan) for _ in range(4)]
        xw, fw = sliding_window_view(x, 2 * half + 1), sliding_window_view(f, 2 * half + 1)
        inner = slice(half - M, len(t) - M - half)
        for o, v in zip(out, (fw @ a, xw @ a, xw @ d1, xw @ d2)):
            o[inner] = v
        return tuple(out)
    xw, fw = sliding_window_view(x, 2 * M + 1), sliding_window_view(f, 2 * M + 1)
    if kind == 'local fit':
        xd, xdd = local_derivatives(t, x, M, second=True)
        return f[centre], x[centre], xd, xdd
    if kind == 'quartic fit':
        G = local_polynomial_weights(sliding_window_view(t, 2 * M + 1)[:1], 4)[0]
        return f[centre], x[centre], xw @ G[1], xw @ G[2]
    a, d1, d2 = compact_kernel(int(kind.split()[-1]), 1 / RATE)
    return fw @ a, xw @ a, xw @ d1, xw @ d2


def random_wall(rng):
    """One draw for the coverage study: k 1e3-1e6 N/m, m 0.1-10 kg, damping ratio 0.05-0.5, 4-12 random-phase
    tones from 0.2-1 Hz up to 2-20 Hz, rate 500-2000 Hz, white noise on x of 0.1-5 % of its std and on F of
    0.1-2 % of its std. Returns (t, F, x, truth)."""
    k = 10 ** rng.uniform(3, 6)
    m = 10 ** rng.uniform(-1, 1)
    b = 2 * rng.uniform(0.05, 0.5) * np.sqrt(k * m)
    rate = float(rng.choice([500.0, 1000.0, 2000.0]))
    n_tones = int(rng.integers(4, 13))
    freqs = np.geomspace(rng.uniform(0.2, 1.0), rng.uniform(2.0, 20.0), n_tones)
    phase = rng.uniform(0, 2 * np.pi, n_tones)
    amp = 1.0 / np.sqrt(n_tones)
    duration = 10.0

    def force(t):
        t = np.atleast_1d(t)
        u = np.clip(t / 0.5, 0, 1)
        return u * u * (3 - 2 * u) * (2.0 + amp * np.sin(2 * np.pi * freqs[:, None] * t + phase[:, None]).sum(0))

    t = np.arange(0, duration, 1 / rate)
    sol = solve_ivp(lambda tt, s_: [s_[1], (force(tt)[0] - b * s_[1] - k * s_[0]) / m], (0, duration), [0.0, 0.0],
                    t_eval=t, rtol=1e-10, atol=1e-14, method='DOP853')
    x, f = sol.y[0], force(t)
    x = x + rng.uniform(1e-3, 5e-2) * np.std(x) * rng.standard_normal(len(t))
    f = f + rng.uniform(1e-3, 2e-2) * np.std(f) * rng.standard_normal(len(t))
    return t, f, x, np.array([k, b, m])


def consistent_fit(t, f, x, decimate: bool = True, eiv: bool = False):
    """The follow-up design in one function: the consistent triweight with its support from the data (cut-off
    ~4 x the excitation's top, ``conditioning.excitation_top``), decimated by about its support, ordinary least
    squares with the Newey-West sigma of its own residuals; ``eiv``: the least squares corrected for the x noise
    that reaches the filtered regressors (errors in variables). Returns (theta, sigma, half-support K)."""
    from contact_dynamics_common import trust
    from contact_dynamics_common.signal.conditioning import excitation_top, noise_std
    rate = 1.0 / float(np.median(np.diff(t)))
    f_top = excitation_top(x, rate)
    # triweight: second moment T^2 / 9, so its -3 dB point is about 0.1874 / (T / 3) = 0.56 / T
    T = 0.56 / (4.0 * f_top)
    half = max(int(round(T * rate)) - 1, 2)
    a, d1, d2 = compact_kernel(3, 1 / rate, half)
    xw, fw = sliding_window_view(x, 2 * half + 1), sliding_window_view(f, 2 * half + 1)
    X = np.column_stack([xw @ a, xw @ d1, xw @ d2])
    F = fw @ a
    use = t[half:len(t) - half] > 1.0
    X, F = X[use], F[use]
    if decimate:
        step = max(half, 1)
        X, F = X[::step], F[::step]
    if not eiv:
        theta = np.linalg.lstsq(X, F, rcond=None)[0]
        cov = trust.hac_covariance(X, F - X @ theta, lags='auto')
        return theta, np.sqrt(np.diagonal(cov)), half
    # errors in variables: white noise sigma_x on x reaches the regressors through the kernels
    # (Sigma_E = sigma_x^2 W W^T, trust.covariance.kernel_error_covariance; sigma_x from 4th differences of raw x);
    # the corrected fit is least squares less its first-order bias (trust.covariance.eiv_bias), a linear map J of
    # it, so its Newey-West sigma (3 lags of the decimated rows) is J cov J^T
    from contact_dynamics_common.trust.covariance import eiv_bias, kernel_error_covariance
    sigma_e = kernel_error_covariance({0: a, 1: d1, 2: d2}, noise_std(x), (0, 1, 2))
    J = np.eye(3) - np.column_stack([eiv_bias(X, e, sigma_e) for e in np.eye(3)])
    theta = J @ np.linalg.lstsq(X, F, rcond=None)[0]
    cov = J @ trust.hac_covariance(X, F - X @ theta, lags=3) @ J.T
    return theta, np.sqrt(np.diagonal(cov)), half


def local_fit_ols(t, f, x):
    """The pipeline's regressors now (±5 ms local fits) with the same least squares and Newey-West sigma."""
    from contact_dynamics_common import trust
    rate = 1.0 / float(np.median(np.diff(t)))
    half = max(int(round(0.005 * rate)), 1)
    xd, xdd = local_derivatives(t, x, half, second=True)
    c = slice(half, len(t) - half)
    X = np.column_stack([x[c], xd, xdd])
    F = f[c]
    use = t[c] > 1.0
    theta = np.linalg.lstsq(X[use], F[use], rcond=None)[0]
    cov = trust.hac_covariance(X[use], F[use] - X[use] @ theta, lags='auto')
    return theta, np.sqrt(np.diagonal(cov)), half


def coverage(draws: int, seed: int) -> None:
    """Coverage of +-2 sigma and RMS z of (k, b, m) over random draws: the local fit with a Newey-West sigma
    (what the bias does to a plain sigma) and the consistent, decimated fit with the same kind of sigma."""
    names = ('k', 'b', 'm')
    z = {'local fit ±5 ms, OLS + HAC': [], 'consistent, data support, decimated, OLS + HAC': [],
         'the same, EIV-corrected LS + HAC': []}
    fits = (local_fit_ols, consistent_fit, lambda t, f, x: consistent_fit(t, f, x, eiv=True))
    halves = []
    for i in range(draws):
        rng = np.random.default_rng([seed, i])
        t, f, x, truth = random_wall(rng)
        for label, fn in zip(z, fits):
            theta, sigma, half = fn(t, f, x)
            z[label].append((theta - truth) / sigma)
            if fn is fits[1]:
                halves.append(half)
    print(f'\ncoverage over {draws} random draws (seed {seed}; k 1e3-1e6, m 0.1-10, zeta 0.05-0.5, tones to '
          f'2-20 Hz, 500-2000 Hz, noise x 0.1-5 %, F 0.1-2 %); consistent support K = '
          f'{min(halves)}-{max(halves)} samples')
    print(f'{"regressors":>48} ' + ' '.join(f'{n + " cover ±2σ":>12} {"RMS z":>7} {"max|z|":>7}' for n in names))
    for label, rows in z.items():
        zz = np.array(rows)
        cells = []
        for j in range(3):
            col = zz[:, j]
            cells.append(f'{np.mean(np.abs(col) <= 2) * 100:11.0f}% {np.sqrt(np.mean(col ** 2)):7.2f} '
                         f'{np.max(np.abs(col)):7.1f}')
        print(f'{label:>48} ' + ' '.join(cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seeds', type=int, default=2)
    ap.add_argument('--draws', type=int, default=60, help='random draws of the coverage study (0: skip it)')
    ap.add_argument('--wider', type=int, nargs='*', default=[20, 40],
                    help='supports (samples each side) of wider consistent triweight kernels')
    args = ap.parse_args(argv)
    kinds = ['local fit', 'quartic fit', 'consistent 2', 'consistent 3'] + \
        [f'consistent 3 ±{k}' for k in args.wider]
    print('error of (k, b, m) in % of the truth; least squares over t > 1 s; ±5 samples at 1 kHz unless the '
          'column says ±K (a consistent kernel of that support)')
    print(f'{"noise x, F":>16} {"seed":>4}  ' + '  '.join(f'{k:>24}' for k in kinds))
    for nx, nf in ((0.0, 0.0), (2e-6, 0.2), (2e-5, 2.0)):
        for seed in range(args.seeds):
            t, f, x = wall(seed, nx, nf)
            row = []
            for kind in kinds:
                F, xs, xd, xdd = regressors(kind, t, f, x)
                use = (t[M:len(t) - M] > 1.0) & np.isfinite(F)
                theta = np.linalg.lstsq(np.column_stack([xs, xd, xdd])[use], F[use], rcond=None)[0]
                row.append(' '.join(f'{e:+7.3f}' for e in (theta / TRUTH - 1) * 100))
            print(f'{nx * 1e6:5.0f} um {nf:4.1f} N {seed:>4}  ' + '  '.join(f'{r:>24}' for r in row))
    if args.draws:
        coverage(args.draws, 0)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
