"""``contact-dynamics impedance-profile BAG --report DIR``: the batch (zero-phase, segmented least-squares)
impedance profile of a recorded experiment, with its identifiability verdict, table and plots.

Reads the joint position (JointState) and the force (WrenchStamped projected on force_direction, x
interpolated at the wrench stamps; or the joint effort) and, with acceleration_source: imu, the acceleration
(sensor_msgs/Imu . imu_axis interpolated at the force stamps); conditions them (conditioning.condition: the
same zero-phase Gaussian kernel on x, F (and a) on the real stamps, cut-off tied to the excitation band, v
and a from the kernel's derivatives; short gaps of a jittered logger bridged), fits (segmented.fit_segmented)
and writes to DIR:
  profile.csv / profile.yaml   one row per (segment, direction): n, m, b, k, c with standard errors, kappa,
                               R^2, validity and reason, derived F_c and k x_e (with their assumption)
  profile.md                   the same as a Markdown table plus the verdict
  profile.png                  m(x), b(x), k(x), c(x) and derived F_c(x), + and - directions, 2-sigma bands,
                               the ground truth when the bag carries one
  force_fit.png                measured vs reconstructed force against time and x (NRMSE), the F-x loop
  identifiability.png          kappa and unique-variance / noise per segment, and the PSD of x
Parameters come from the impedance_profiler section of --config (joint, force source, acceleration source,
edges, deadband, min_samples, max_condition, profile_mode); command-line options override the fit extensions,
the filter and the mode.

Quasi-static mode (``--mode quasi-static`` or ``profile_mode: quasi_static``; chosen by ``auto`` when the
dynamic fit separates mass from stiffness in no bin - slow motion, see quasistatic.py): per segment and
direction F = k x + c on the recorded samples, k, force offset c, the branch force at the segment centre and
the hysteresis width (press minus release) with sigma; mass and damping are reported not identifiable. The
same files are written (profile.csv / .yaml / .md, profile.png with k, c and the hysteresis per segment,
force_fit.png with the F-x loop and each branch's line).

Exit codes: 0 report written (its verdict says how many bins are valid), 2 the input or the configuration is
refused (one line on stderr: missing topic or joint, a record too short, a bad parameter).
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
import yaml

from contact_dynamics_common.params import ConfigError, load_params_file, validate_all

from .conditioning import condition
from .config import NODE_NAME, PARAMS
from .pipeline import edges_from_params
from .segmentation import adaptive_edges
from .store import plain
from .segmented import (DIRECTIONS, PARAMS as PNAMES, UNITS, FitOptions, ImpedanceProfile, default_edges,
                        fit_segmented)


def load_record(bag_path: str, params: dict):
    """(t (s from the first sample), x, F, ground truth (or {}), a): a is the IMU acceleration along
    imu_axis at the force stamps (m/s^2) with acceleration_source: imu, else None."""
    from contact_dynamics_common.bag import BagReader
    from contact_dynamics_common.replay import ReplayError, resolve_topic
    bag = BagReader(bag_path)
    jt = resolve_topic(params['joint_states_topic'], NODE_NAME)
    if jt not in bag.topics:
        raise ReplayError(f"{jt} is not in the bag (topics: {', '.join(sorted(bag.topics))})")
    js = bag.columns(jt)
    names = list(js['name'])
    if params['joint_name'] not in names:
        raise ConfigError(f"joint '{params['joint_name']}' is not in the JointState names {names}")
    j = names.index(params['joint_name'])
    ts, x = js['stamp_ns'], js['position'][:, j]
    if params['force_source'] == 'effort':
        t_ns, f = ts, params['effort_sign'] * js['effort'][:, j]
    else:
        wt = resolve_topic(params['wrench_topic'], NODE_NAME)
        if wt not in bag.topics:
            raise ReplayError(f"{wt} is not in the bag (topics: {', '.join(sorted(bag.topics))}); "
                              'use force_source: effort')
        w = bag.columns(wt)
        t_ns = w['stamp_ns']
        f = (w['force'] - np.asarray(params['force_bias'])) @ np.asarray(params['force_direction'])
        inside = (t_ns >= ts[0]) & (t_ns <= ts[-1])
        t_ns, f = t_ns[inside], f[inside]
        x = np.interp((t_ns - ts[0]).astype(float), (ts - ts[0]).astype(float), x)
    acc = np.zeros(len(t_ns))
    if params['acceleration_source'] == 'imu':
        it = resolve_topic(params['imu_topic'], NODE_NAME)
        if it not in bag.topics:
            raise ReplayError(f"acceleration_source is imu but {it} is not in the bag (topics: "
                              f"{', '.join(sorted(bag.topics))}); use acceleration_source: differentiate")
        im = bag.columns(it)
        ia = im['linear_acceleration'] @ np.asarray(params['imu_axis'], dtype=float)
        inside = (t_ns >= im['stamp_ns'][0]) & (t_ns <= im['stamp_ns'][-1])
        t_ns, x, f = t_ns[inside], x[inside], f[inside]
        t0 = im['stamp_ns'][0]
        acc = np.interp((t_ns - t0).astype(float), (im['stamp_ns'] - t0).astype(float), ia)
    ok = np.isfinite(x) & np.isfinite(f) & np.isfinite(acc) & (t_ns > 0)
    t_ns, x, f, acc = t_ns[ok], x[ok], f[ok], acc[ok]
    if len(t_ns) < 3:
        raise ValueError(f'{len(t_ns)} usable (x, F) samples in the bag')
    order = np.argsort(t_ns, kind='stable')
    t_ns, x, f, acc = t_ns[order], x[order], f[order], acc[order]
    keep = np.concatenate(([True], np.diff(t_ns) > 0))
    t = (t_ns[keep] - t_ns[keep][0]) * 1e-9
    a = acc[keep] if params['acceleration_source'] == 'imu' else None
    return t, x[keep], f[keep], bag.custom_data.get('ground_truth') or {}, a


def profile_record(t, x, f, params: dict, options: FitOptions, *, a=None, cutoff_hz: float | None = None,
                   filtered: bool = True, t_skip: float = 2.0, auto_edges: str = '',
                   conditioning_term: bool = True):
    """The batch profile of one record (t s, x, F [, measured a]): condition (parallel filter, friction
    transient column, hole-aware), edges, fit_segmented; then the conditioning term of the covariance: the
    fit is repeated at the second defensible cut-off and d d^T (d = the move of the estimate) is added to
    every bin's covariance (trust.covariance.conditioning). Returns (profile, conditioned)."""
    from contact_dynamics_common.trust.covariance import conditioning as conditioning_cov
    c = condition(t, x, f, a, cutoff_hz=cutoff_hz, filtered=filtered, t_skip=t_skip)
    if auto_edges == 'adaptive':
        lo, hi = params['position_range']
        edges = adaptive_edges(c.x, c.v, c.a, c.F, lo, hi, v_min=params['min_velocity'],
                               min_samples=params.get('min_samples', 200), correlation=c.correlation, r=c.r)
    elif auto_edges:
        edges = default_edges(c.x, params['segments'], auto_edges)
    else:
        edges = edges_from_params(params)
    prof = fit_segmented(c.x, c.v, c.a, c.F, edges, options, noise_variance=c.noise_variance,
                         correlation=c.correlation, r=c.r)
    if conditioning_term and filtered and np.isfinite(c.alternative_cutoff_hz):
        c2 = condition(t, x, f, a, cutoff_hz=c.alternative_cutoff_hz, t_skip=t_skip)
        p2 = fit_segmented(c2.x, c2.v, c2.a, c2.F, edges, options, noise_variance=c2.noise_variance,
                           correlation=c2.correlation, r=c2.r)
        for d in range(2):
            for j in range(prof.segments):
                term = conditioning_cov(prof.theta[d, j], p2.theta[d, j])
                if np.all(np.isfinite(term)):
                    prof.cov[d, j] = prof.cov[d, j] + term
                    prof.options['sigma_terms'].setdefault(f'{DIRECTIONS[d]}_{j}', {})['conditioning'] = \
                        np.sqrt(np.diag(term)).tolist()
        prof.options['alternative_cutoff_hz'] = c.alternative_cutoff_hz
    prof.options['conditioning'] = c.meta
    return prof, c


def profile_bag(bag_path: str, params: dict, options: FitOptions, *, cutoff_hz: float | None = None,
                filtered: bool = True, t_skip: float = 2.0, auto_edges: str = '', mode: str | None = None):
    """(profile, conditioned, truth, quasi_static_profile or None, evidence) of a bag. ``mode`` (default the
    params' profile_mode): 'dynamic', 'quasi_static' or 'auto' (quasi_static when the dynamic fit separates
    m from k in no bin, :func:`.quasistatic.quasi_static_evidence`)."""
    t, x, f, truth, a = load_record(bag_path, params)
    prof, c, qs, evidence = profile_record_modes(t, x, f, params, options, a=a, cutoff_hz=cutoff_hz,
                                                 filtered=filtered, t_skip=t_skip, auto_edges=auto_edges,
                                                 mode=mode)
    return prof, c, truth, qs, evidence


def profile_record_modes(t, x, f, params: dict, options: FitOptions, *, a=None,
                         cutoff_hz: float | None = None, filtered: bool = True, t_skip: float = 2.0,
                         auto_edges: str = '', mode: str | None = None):
    """impedance-profile on one record (t s, x, F [, measured a]): (dynamic profile, conditioned,
    quasi-static profile or None, evidence); see :func:`profile_bag`."""
    from .quasistatic import profile_conditioned, quasi_static_evidence
    mode = mode or params['profile_mode']
    dyn_edges = '' if auto_edges == 'adaptive' and mode == 'quasi_static' else auto_edges
    try:
        prof, c = profile_record(t, x, f, params, options, a=a, cutoff_hz=cutoff_hz, filtered=filtered,
                                 t_skip=t_skip, auto_edges=dyn_edges)
    except ValueError:
        if dyn_edges != 'adaptive' or mode == 'dynamic':
            raise
        # no dynamic partition (e.g. a slow force curve): the dynamic evidence on the configured edges
        prof, c = profile_record(t, x, f, params, options, a=a, cutoff_hz=cutoff_hz, filtered=filtered,
                                 t_skip=t_skip)
    evidence = quasi_static_evidence(prof, c)
    qs = None
    if mode == 'quasi_static' or (mode == 'auto' and evidence['quasi_static']):
        evidence['chosen'] = 'quasi_static' if mode == 'auto' else 'quasi_static (selected)'
        if auto_edges == 'adaptive':
            lo, hi = params['position_range']
            edges = adaptive_edges(c.x, c.v, c.a, c.F, lo, hi, v_min=params['min_velocity'],
                                   min_samples=params['min_samples'], correlation=c.correlation,
                                   quasi_static=True)
        else:
            edges = prof.edges
        qs = profile_conditioned(t, x, f, c, edges, v_min=params['min_velocity'],
                                 min_samples=params['min_samples'], max_condition=params['max_condition'],
                                 t_skip=t_skip, evidence=evidence)
    else:
        evidence['chosen'] = 'dynamic' if mode == 'auto' else 'dynamic (selected)'
    return prof, c, qs, evidence


def write_quasi_static(q, out: Path, meta: dict) -> list[dict]:
    """profile.csv / profile.yaml / profile.md of a quasi-static profile."""
    from .quasistatic import NOT_IDENTIFIABLE
    rows = q.rows()
    doc = {'model': q.model, 'units': {'stiffness': 'N/m', 'force_offset': 'N', 'centre_force': 'N',
                                        'hysteresis_width': 'N'},
           'mass': NOT_IDENTIFIABLE, 'damping': NOT_IDENTIFIABLE, 'quasi_static_evidence': q.evidence,
           **meta, 'segments': rows}
    lines = [f"# Quasi-static force curve\n\n{q.model}\n\n{NOT_IDENTIFIABLE}\n\nverdict: {meta['verdict']}\n",
             '| seg | dir | x [mm] | n | k [N/m] | c [N] | F(x_c) [N] | hysteresis [N] | valid | reason |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(f"| {r['segment']} | {r['direction']} | {1e3 * r['x_lo']:.3f}-{1e3 * r['x_hi']:.3f} | "
                     f"{r['n']} | {r['stiffness']:.5g} ± {r['stiffness_std']:.2g} | "
                     f"{r['force_offset']:.4g} ± {r['force_offset_std']:.2g} | "
                     f"{r['centre_force']:.4g} ± {r['centre_force_std']:.2g} | "
                     f"{r['hysteresis_width']:.4g} ± {r['hysteresis_width_std']:.2g} | {r['valid']} | "
                     f"{r['reason']} |")
    _write_files(out, rows, doc, lines)
    return rows


def _write_files(out: Path, rows: list[dict], doc: dict, lines: list[str]) -> None:
    """profile.csv (rows), profile.yaml (doc), profile.md (lines) in ``out``."""
    with open(out / 'profile.csv', 'w', newline='', encoding='utf-8') as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(out / 'profile.yaml', 'w', encoding='utf-8') as fh:
        yaml.safe_dump(plain(doc), fh, sort_keys=False)
    (out / 'profile.md').write_text('\n'.join(lines) + '\n', encoding='utf-8')


def plot_quasi_static(q, t, x, f, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    xe = 1e3 * q.edges
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    colors = ('tab:blue', 'tab:red')
    for d, lab in enumerate(('press (v > 0)', 'release (v < 0)')):
        for ax, name in ((axes[0], 'stiffness'), (axes[1], 'force_offset')):
            val, sd = q.value(name)[d], q.std(name)[d]
            ax.stairs(val, xe, baseline=None, color=colors[d], lw=1.6, label=lab)
            ax.stairs(val + 2 * sd, xe, baseline=val - 2 * sd, fill=True, color=colors[d], alpha=0.25)
    axes[2].stairs(q.hysteresis, xe, baseline=None, color='k', lw=1.6, label='F+(x_c) - F-(x_c)')
    axes[2].stairs(q.hysteresis + 2 * q.hysteresis_std, xe, baseline=q.hysteresis - 2 * q.hysteresis_std,
                   fill=True, color='k', alpha=0.2, label='±2σ')
    for ax, ylab in zip(axes, ('k [N/m]', 'force offset c [N]', 'hysteresis width [N]')):
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[-1].set_xlabel('x [mm]')
    axes[0].set_title('quasi-static force curve per (segment, direction); m and b not identifiable')
    fig.tight_layout()
    paths = [out / 'profile.png']
    fig.savefig(paths[0], dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(1e3 * x, f, '.', ms=2, color='0.5', label='recorded')
    for d in (0, 1):
        for j in range(q.segments):
            if np.all(np.isfinite(q.theta[d, j])):
                xx = np.array(q.edges[j:j + 2])
                ax.plot(1e3 * xx, q.theta[d, j, 0] * xx + q.theta[d, j, 1], color=colors[d],
                        lw=2 if q.valid[d, j] else 0.8, ls='-' if q.valid[d, j] else '--')
    ax.set_xlabel('x [mm]')
    ax.set_ylabel('F [N]')
    ax.set_title('force curve and the per-segment lines (blue press, red release; dashed: not valid)')
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(out / 'force_fit.png')
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths


def write_table(p: ImpedanceProfile, out: Path, meta: dict) -> list[dict]:
    rows = p.rows()
    doc = {'model': p.model, 'units': dict(zip(PNAMES, UNITS)), 'derived_assumption':
           'friction_derived = (c+ - c-)/2 and spring_offset_force_derived = -(c+ + c-)/2 assume k, x_e '
           'and |F_c| '
           'equal in both directions within a segment', **meta, 'segments': rows}
    lines = [f"# Impedance profile\n\n{p.model}\n\nverdict: {meta['verdict']}\n",
             '| seg | dir | x [mm] | n | m [kg] | b [N s/m] | k [N/m] | c [N] | kappa | valid | reason |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(f"| {r['segment']} | {r['direction']} | {1e3 * r['x_lo']:.2f}-{1e3 * r['x_hi']:.2f} | "
                     f"{r['n']} | {r['mass']:.4g} ± {r['mass_std']:.2g} | "
                     f"{r['damping']:.4g} ± {r['damping_std']:.2g} | "
                     f"{r['stiffness']:.5g} ± {r['stiffness_std']:.2g} | "
                     f"{r['intercept']:.4g} ± {r['intercept_std']:.2g} | "
                     f"{r['kappa']:.3g} | {r['valid']} | {r['reason']} |")
    _write_files(out, rows, doc, lines)
    return rows


def plot_profile(p: ImpedanceProfile, out: Path, truth: dict | None = None) -> list[Path]:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    xe = 1e3 * p.edges
    fig, axes = plt.subplots(5, 1, figsize=(8, 12), sharex=True)
    colors = ('tab:blue', 'tab:red')
    ref = (truth or {}).get('oracle', {})
    t_edges = np.asarray((truth or {}).get('edges', p.edges), dtype=float)
    same_edges = t_edges.shape == p.edges.shape and np.allclose(t_edges, p.edges)   # truth is per segment
    for i, name in enumerate(PNAMES):
        ax = axes[i]
        for d, dn in enumerate(DIRECTIONS):
            val, sd = p.value(name)[d], p.std(name)[d]
            lab = 'v > 0' if d == 0 else 'v < 0'
            ax.stairs(val, xe, baseline=None, color=colors[d], lw=1.6, label=lab)
            ax.stairs(val + 2 * sd, xe, baseline=val - 2 * sd, fill=True, color=colors[d], alpha=0.25,
                      label=f'±2σ ({dn})')
            if name in ref and same_edges:
                ax.stairs(np.asarray(ref[name][d], dtype=float), xe, baseline=None, color=colors[d], ls='--',
                          lw=1,
                          label=f'truth ({dn})')
        ax.set_ylabel(f'{name} [{UNITS[i]}]')
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=3)
    fc = p.friction()
    sd = 0.5 * np.sqrt(p.std('intercept')[0] ** 2 + p.std('intercept')[1] ** 2)
    axes[4].stairs(fc, xe, baseline=None, color='k', lw=1.6,
                   label='F_c = (c+ - c-)/2 (assumes symmetric k, x_e)')
    axes[4].stairs(fc + 2 * sd, xe, baseline=fc - 2 * sd, fill=True, color='k', alpha=0.2, label='±2σ')
    if (truth or {}).get('physical', {}).get('coulomb') is not None:
        axes[4].axhline(truth['physical']['coulomb'], color='k', ls='--', lw=1, label='truth')
    axes[4].set_ylabel('F_c [N]')
    axes[4].legend(fontsize=7)
    axes[4].grid(alpha=0.3)
    axes[-1].set_xlabel('x [mm]')
    axes[0].set_title('position-varying impedance (segment, direction of travel); NaN = not identifiable')
    fig.tight_layout()
    path = out / 'profile.png'
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def plot_fit(p: ImpedanceProfile, c, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from scipy.signal import welch
    written = []
    fhat = p.force(c.x, c.v, c.a, v_deadband=p.options.get('v_min', 0.0))
    ok = np.isfinite(fhat)
    nrmse = (float(np.sqrt(np.mean((fhat[ok] - c.F[ok]) ** 2)) / max(np.ptp(c.F[ok]), 1e-12))
             if ok.any() else np.nan)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    n = min(len(c.t), int(5 * c.rate_hz))
    axes[0].plot(c.t[:n], c.F[:n], lw=0.8, label='measured (filtered)')
    axes[0].plot(c.t[:n], fhat[:n], lw=0.8, label='reconstructed')
    axes[0].set_xlabel('t [s]')
    axes[0].set_ylabel('F [N]')
    axes[0].set_title(f'NRMSE {100 * nrmse:.2f} %')
    axes[0].legend(fontsize=8)
    step = max(1, len(c.x) // 20000)
    axes[1].plot(1e3 * c.x[::step], c.F[::step], ',', alpha=0.4, label='measured: the F-x loop ("feel")')
    axes[1].plot(1e3 * c.x[::step], fhat[::step], ',', alpha=0.4, label='reconstructed')
    axes[1].set_xlabel('x [mm]')
    axes[1].set_ylabel('F [N]')
    axes[1].legend(fontsize=8, markerscale=20)
    fig.tight_layout()
    written.append(out / 'force_fit.png')
    fig.savefig(written[-1], dpi=100)
    plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    j = np.arange(p.segments)
    for d, dn in enumerate(DIRECTIONS):
        axes[0].bar(j + 0.4 * d, np.minimum(p.kappa[d], 1e17), width=0.4, label=dn)
        ratio = p.unique_variance[d, :, 0] / max(p.noise_variance[0], 1e-300)
        axes[1].bar(j + 0.4 * d, ratio, width=0.4, label=dn)
    axes[0].set_yscale('log')
    axes[0].axhline(1e3, color='orange', ls='--', lw=1, label='warn')
    axes[0].axhline(1e6, color='red', ls='--', lw=1, label='refuse')
    axes[0].set_title('kappa [a v x 1] per segment')
    axes[1].set_yscale('log')
    axes[1].axhline(10, color='red', ls='--', lw=1, label='10 x noise')
    axes[1].set_title('unique variance of a / noise variance')
    for ax in axes[:2]:
        ax.set_xlabel('segment')
        ax.legend(fontsize=8)
    f, pxx = welch(c.x - c.x.mean(), fs=c.rate_hz, nperseg=int(min(len(c.x), 4 * c.rate_hz)))
    axes[2].loglog(f[1:], pxx[1:])
    axes[2].axvline(c.band_hz, color='k', ls='--', lw=1, label=f'band top {c.band_hz:.3g} Hz')
    if np.isfinite(c.cutoff_hz):
        axes[2].axvline(c.cutoff_hz, color='r', ls='--', lw=1, label=f'cut-off {c.cutoff_hz:.3g} Hz')
    axes[2].set_title('excitation PSD of x')
    axes[2].set_xlabel('f [Hz]')
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    written.append(out / 'identifiability.png')
    fig.savefig(written[-1], dpi=100)
    plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog='contact-dynamics impedance-profile', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('bag')
    ap.add_argument('--report', required=True, help='output directory')
    ap.add_argument('--config', help='params file with an impedance_profiler section (default: its defaults)')
    ap.add_argument('--joint-name', help='override joint_name')
    ap.add_argument('--force-source', choices=('wrench', 'effort'))
    ap.add_argument('--cutoff', type=float, help='low-pass cut-off (Hz); default 4x the excitation band top')
    ap.add_argument('--raw', action='store_true', help='no filter, raw central-difference velocity (paper)')
    ap.add_argument('--continuity', action='store_true', help='spring force continuous at the edges')
    ap.add_argument('--shared-mass', action='store_true', help='one mass for all segments')
    ap.add_argument('--tikhonov', type=float, default=0.0, help='smoothing weight lambda across segments')
    ap.add_argument('--gcv', action='store_true',
                    help='choose the Tikhonov lambda by generalised cross-validation')
    ap.add_argument('--nonnegative', action='store_true', help='bound m >= 0 and b >= 0')
    ap.add_argument('--skip', type=float, default=2.0, help='start-up seconds to drop')
    ap.add_argument('--auto-edges', choices=('uniform', 'quantile', 'adaptive'),
                    help='edges from the data instead of the config: uniform between the 0.1 and 99.9 '
                         'percentiles of x, or equal-count (`segments` of them), or adaptive (BIC change '
                         'points on 48 cells of position_range)')
    ap.add_argument('--mode', choices=('auto', 'dynamic', 'quasi-static'),
                    help='profile mode (default: profile_mode of the config, auto): quasi-static fits a '
                         'force curve F = k x + c per segment and direction (slow press and release)')
    a = ap.parse_args(argv)
    import sys
    from contact_dynamics_common.replay import ReplayError
    try:
        return _run(a)
    except (ConfigError, ReplayError, FileNotFoundError, ValueError) as exc:
        print(f'impedance-profile: refused: {exc}', file=sys.stderr)
        return 2


def _run(a) -> int:
    raw = load_params_file(a.config, NODE_NAME) if a.config else {}
    raw = {k: v for k, v in raw.items() if k not in ('use_sim_time',)}
    if a.joint_name:
        raw['joint_name'] = a.joint_name
    if a.force_source:
        raw['force_source'] = a.force_source
    if a.mode:
        raw['profile_mode'] = a.mode.replace('-', '_')
    params = validate_all(PARAMS, raw)
    options = FitOptions(v_min=params['min_velocity'], n_min=params['min_samples'],
                         min_unique_fraction=params['min_unique_fraction'],
                         kappa_refuse=params['max_condition'],
                         continuity=a.continuity, shared_mass=a.shared_mass, tikhonov=a.tikhonov,
                         nonnegative=a.nonnegative, tikhonov_select='gcv' if a.gcv else 'fixed')
    prof, c, truth, qs, evidence = profile_bag(a.bag, params, options, cutoff_hz=a.cutoff, filtered=not a.raw,
                                               t_skip=a.skip, auto_edges=a.auto_edges or '')
    out = Path(a.report)
    out.mkdir(parents=True, exist_ok=True)
    jit = (f"stamp jitter {100 * c.meta['stamp_jitter']:.3g} % of the period, "
           f"{c.meta['bridged_samples']} samples bridged in short gaps (not fitted), {c.holes} hole(s) kept")
    if qs is not None:
        nvalid = int(qs.valid.sum())
        verdict = (f"QUASI-STATIC ({evidence['chosen']}): {nvalid} of {qs.valid.size} (segment, direction) "
                   f"bins valid; mass and damping not identifiable")
        meta = {'bag': str(a.bag), 'verdict': verdict, 'rate_hz': c.rate_hz, 'excitation_band_hz': c.band_hz,
                'cutoff_hz': c.cutoff_hz, 'conditioning': c.meta, 'min_velocity': params['min_velocity'],
                'min_samples': params['min_samples']}
        write_quasi_static(qs, out, meta)
        t, x, f, _, _ = load_record(a.bag, params)
        plot_quasi_static(qs, t, x, f, out)
        print(f'{a.bag}: {verdict}')
        print(f"  {jit}; {len(c.t)} samples at {c.rate_hz:.6g} Hz (median)")
        print(f"  quasi-static evidence: motion frequency {evidence['motion_frequency_hz']:.3g} Hz; "
              f"{evidence['separable_bins']} bins separate m from k; a_rms "
              f"{evidence['acceleration_rms']:.3g} (noise {evidence['acceleration_noise_std']:.3g}), v_rms "
              f"{evidence['velocity_rms']:.3g}, force noise {evidence['force_noise_std']:.3g} N: "
              f"m a would reach it only for m > {evidence['mass_visible_above']:.3g}, b v for b > "
              f"{evidence['damping_visible_above']:.3g}")
        print('  edges [mm]: ' + ' '.join(f'{1e3 * e:.4g}' for e in qs.edges))
        for d, dn in enumerate(('press', 'release')):
            print(f'  k ({dn}) [N/m]: ' + '  '.join(
                f"{k:.5g} ± {s:.2g}{'' if v else ' (not valid)'}"
                for k, s, v in zip(qs.value('stiffness')[d], qs.std('stiffness')[d], qs.valid[d])))
        print('  hysteresis width [N]: ' + '  '.join(f'{h:.4g} ± {s:.2g}' for h, s in
                                                     zip(qs.hysteresis, qs.hysteresis_std)))
        if not qs.n.any():
            print(f"  no sample moves faster than min_velocity = {params['min_velocity']:g} (fastest |v| "
                  f"{float(np.max(np.abs(c.v))):.3g}): lower min_velocity")
        print(f'report written to {out}/profile.{{csv,yaml,md,png}}, force_fit.png')
        return 0
    nvalid = int(prof.valid.sum())
    if not prof.separable.any():
        verdict = ('NOT IDENTIFIABLE: mass and stiffness cannot be separated in any segment (single-tone '
                   'excitation?); no numbers reported. Use a multisine (contact-dynamics '
                   'impedance-excitation), or --mode quasi-static for a slow force curve.')
    else:
        verdict = f"{nvalid} of {prof.valid.size} (segment, direction) bins valid ({evidence['chosen']})"
    meta = {'bag': str(a.bag), 'verdict': verdict, 'rate_hz': c.rate_hz, 'excitation_band_hz': c.band_hz,
            'cutoff_hz': c.cutoff_hz, 'acceleration_source': params['acceleration_source'],
            'options': prof.options,
            'noise_variance_a_v_x': prof.noise_variance[:3]}
    write_table(prof, out, meta)
    plot_profile(prof, out, truth)
    plot_fit(prof, c, out)
    print(f'{a.bag}: {verdict}')
    print(f'  excitation band up to {c.band_hz:.3g} Hz, cut-off {c.cutoff_hz:.3g} Hz, {len(c.t)} samples at '
          f'{c.rate_hz:.6g} Hz; {jit}; acceleration: '
          + ('measured (IMU along imu_axis)' if params['acceleration_source'] == 'imu'
             else 'differentiated x'))
    for d, dn in enumerate(DIRECTIONS):
        print(f'  k ({dn}) [N/m]: ' + ' '.join(f'{v:8.4g}' for v in prof.value('stiffness')[d]))
    print(f'report written to {out}/profile.{{csv,yaml,md,png}}, force_fit.png, identifiability.png')
    return 0
