"""The trust verdict of single-point estimates: convergence and model adequacy (contact_dynamics_common.trust).

Applied on top of each estimator's own verdict (samples, excitation, conditioning), by ``algorithms.run``
(so contact-compare and the calibration report) and by the live pipeline (``TrustMonitor``):

1. convergence (recursive estimators): the window is fed in ``chunks`` blocks and the estimate after each
   is kept; each identifiable parameter must have left its prior in a way the data support (sigma well
   below the prior sigma sqrt(P0) / scale; or, for the adaptive law, agreement with the least squares of
   the same data) and settled (no drift or oscillation in the recent estimates beyond their sigma).
2. model adequacy (every estimator, on the window's samples): a mass term the model leaves out must not
   be significant and material (HAC Wald test on [phi, z], z a central difference of xdot over +-L
   samples that shares no noise sample with the residual), the residual r = F - phi^T theta of the
   reported model must be white unless the correlated misfit is immaterial (Ljung-Box with an effect
   size), and a Kalman filter's mean NIS must lie in its chi^2 band (alone, a NIS above it only inflates
   the covariance: the force-noise setting is too low). A failure gives ``valid: false`` with
   ``model mismatch suspected: ...``.

Whatever the verdict, the covariance is made honest and never smaller than the estimator's own: each
sigma_j is raised to at least the Newey-West (HAC) sigma of the least squares of the window (residuals
correlated), to sqrt(var_ref + d_j^2) with d_j the gap between the estimate and an instrumental-variables
fit of the same samples (errors-in-variables attenuation, a method bias such as spectral leakage), to
sqrt(C_aug,jj + (theta_j - beta_j)^2) when a mass term is significant (beta: the fit with the mass term,
C_aug its HAC covariance) (``honest_variance``); a Kalman estimate publishes the larger of that and its own
covariance times max(1, mean NIS) (two estimates of the same noise variance, not a product).
The checks' figures go into ``extras['trust']``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import replace

import numpy as np

from contact_dynamics_common import trust
from contact_dynamics_common.signal import conditioning as cond
from contact_dynamics_common.trust import covariance as hcov
from contact_dynamics_common.trust import verdict as shared_verdict

from .estimate import ContactEstimate, make_spd, make_spd_batch
from .models import get_model
from .samples import ContactSamples

#: report blocks per window for the convergence history of a recursive estimator
CHUNKS = 60
#: significance of the adequacy tests (two-sided NIS band: 1 %)
ALPHA = 1e-3
#: correlated residuals invalidate only above this RMS share of the force RMS (else: HAC sigma only);
#: a specific omitted term (the mass) is tested on its own, with its own materiality rule
MATERIAL_MISFIT = 0.05
#: an omitted term that moves no parameter by more than 2 sigma or this share of its value is immaterial
MATERIAL_SHIFT = 1e-4
#: an omitted direction-dependent force (friction, hysteresis) is material when it moves an identifiable
#: parameter by more than this share of its value (and 3 sigma)
MATERIAL_DIRECTIONAL = 0.01
#: ... tested only when at least this share of the window's samples moves clearly in each direction
MIN_EACH_DIRECTION = 0.1
#: ... and counted only above this share of the force rms (below it, the errors-in-variables attenuation of
#: the damping by a noisy rate leaves a residual ~ the true rate that any odd function of the rate picks up)
MIN_DIRECTIONAL_SHARE = 0.02
#: an adaptive law's recent estimates may swing by up to 3 x max(sigma of the data, this share of the value)
ADAPTIVE_RESOLUTION = 0.003
#: residual RMS below this share of the force RMS is a numerically exact fit (noise-free data): not tested
EXACT = 1e-9


#: with the consistent kernel's regressors, a reference fit's gap enters sigma when it exceeds this many of the
#: reference's (or the window's HAC) sigma in some parameter
REFERENCE_GAP_Z = 2.0
#: estimators whose own covariance assumes white residuals (scaled by the window's HAC / white ratio when the
#: kernel correlates them); the frequency-domain ones have their own noise model
WHITE_OWN_COVARIANCE = ('rls', 'ils', 'ia', 'kalman', 'gls')


def honest_variance(terms: dict) -> np.ndarray:
    """Per-parameter published variance from the window's terms (module docstring, doc/trust/single_point.md):

        var = max(own, HAC, V_iv + g_iv^2, V_pf + g_pf^2, V_aug + shift^2 of each significant omitted term)

    ``terms``: 'own' (the estimator's own variance), 'hac' (Newey-West variance of the least squares of the
    window with the estimate's residuals), 'iv' and 'pf' ((variance, gap) of the instrumental-variables and
    parallel-filtered reference fits, gap = theta - ref), 'mass' / 'directional' ((variance, shift) of a
    significant omitted term's augmented fit); with the consistent kernel's regressors also 'window' (the
    window's own fit, as a reference) and 'eiv' ((0, bias): the errors-in-variables bias, added squared). theta - truth = (theta - ref) + (ref - truth): a reference's
    variance plus the squared gap (a flat prior on the bias). Conservative where the estimate is at least as
    precise as the reference (the gap's own noise is counted twice); see doc/trust/single_point.md."""
    var = np.maximum(terms['own'], terms['hac'])
    for key in ('iv', 'pf', 'window', 'mass', 'directional'):
        if key in terms:
            v, g = terms[key][:2]
            var = np.maximum(var, v + np.asarray(g) ** 2)
    if 'eiv' in terms:                      # a known bias of the consistent kernel's regressors: added
        var = var + np.asarray(terms['eiv'][1]) ** 2
    return var


def run_assessed(estimator, samples: ContactSamples, chunks: int = CHUNKS) -> ContactEstimate:
    """One estimate of a whole window with the trust verdict (recursive ones reset and fed in blocks)."""
    if hasattr(estimator, 'fit'):
        return published(assess(estimator.fit(samples), samples))
    estimator.reset()
    bounds = np.unique(np.linspace(0, len(samples), chunks + 1).round().astype(int))
    history = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        estimator.update(samples.slice(slice(a, b)))
        history.append(estimator.estimate())
    est = history[-1] if history else estimator.estimate()
    return published(assess(est, samples, convergence_check(estimator, history)))


def run_monitored(estimator, samples: ContactSamples) -> ContactEstimate:
    """The estimate and verdict the live node (and run-bag) publish after these samples, for one estimator
    reset before them: the same code as ``ContactPipeline`` (``TrustMonitor`` observing every
    ``MONITOR_SAMPLES`` in-contact samples on the ``RecentSamples`` window, then ``review``), so a tool that
    calls this on the node's samples gives the node's verdict (contact-compare with the node's config)."""
    from .reporting import update_and_report
    estimator.reset()
    monitor = TrustMonitor(estimator)
    n = len(samples)
    bounds = boundaries(0, n)
    counts = np.union1d(bounds, [n]).astype(np.int64)
    if not n:
        return monitor.review(estimator.estimate())
    reports = update_and_report(estimator, samples, counts)
    index = {c: i for i, c in enumerate(counts.tolist())}
    recent = RecentSamples()
    for c in bounds.tolist():
        monitor.observe(reports[index[c]], lambda c=c: recent.window(samples.slice(slice(0, c))))
    return monitor.review(reports[index[n]])


def published(est: ContactEstimate) -> ContactEstimate:
    """The shared final rule (``contact_dynamics_common.trust.verdict.judge``) on an estimate whose
    covariance is already the honest one: an identification flag is kept only while |value| >= 2 sigma (a
    flag saying yes while sigma > |value| is a bug), and a valid estimate needs its stiffness above 3 honest
    sigma. Applied last by every front end (live monitor review, run-bag, contact-compare, calibration)."""
    if est.samples_used <= 0 or not est.extras.get('covariance_known', True) or len(est.identifiable) != len(est.names):
        return est
    v = shared_verdict.judge(est.names, est.values, est.covariance, flags=est.identifiable,
                             prior_valid=est.valid, prior_reason=est.reason)
    if v.identified == tuple(est.identifiable) and v.valid == est.valid:
        return est
    reason = v.reason
    if v.valid and v.notes and 'damping' in est.names and not v.identified[est.names.index('damping')] \
            and 'damping not identifiable' not in reason:
        reason = f'{reason}; damping not identifiable (sigma above half its value)'
    return _changed(est, valid=v.valid, reason=reason, identifiable=v.identified)


def prior_of(estimator) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(initial guess, prior sigma) of a recursive estimator in SI units, None where it has none."""
    names = estimator.model.names
    initial = getattr(estimator, 'initial', None)
    theta0 = None if initial is None else np.array([float(initial.get(n, 0.0)) for n in names])
    p0 = getattr(estimator, 'p0', None)
    sigma0 = None if p0 is None else np.sqrt(float(p0)) / np.asarray(estimator.scales, dtype=np.float64)
    return theta0, sigma0


def convergence_check(estimator, history: list[ContactEstimate], **kwargs) -> trust.Check | None:
    """``trust.convergence`` of the successive estimates of one estimator (None: nothing to judge)."""
    history = [e for e in history if e.samples_used > 0 and e.extras.get('covariance_known', True)]
    if len(history) < 2:
        return None
    last = history[-1]
    theta0, sigma0 = prior_of(estimator)
    values = np.array([e.values for e in history])
    ref = last.extras.get('reference')
    if ref is not None:         # an adaptive law: judged against the least squares of the same data
        sig = np.array([e.extras.get('reference_std', np.sqrt(np.diagonal(e.covariance))) for e in history])
        return trust.convergence(last.names, values, sig, initial=theta0, reference=ref,
                                 reference_sigma=last.extras.get('reference_std'),
                                 check=last.identifiable or None, **{'rel_floor': ADAPTIVE_RESOLUTION, **kwargs})
    sig = np.sqrt(np.diagonal(np.array([e.covariance for e in history]), axis1=1, axis2=2))
    sig = sig * np.array([_nis_scale(e) for e in history])[:, None]
    return trust.convergence(last.names, values, sig, initial=theta0, prior_sigma=sigma0,
                             check=last.identifiable or None, **kwargs)


def adequacy_checks(est: ContactEstimate, samples: ContactSamples, alpha: float = ALPHA
                    ) -> tuple[list[trust.Check], np.ndarray]:
    """Residual whiteness, omitted mass (model without mass) and NIS (when the estimate has one) on the
    window; returns the checks and the honest covariance (never below the estimate's own)."""
    cov = np.array(est.covariance, dtype=np.float64)
    if len(samples) < 3 * len(est.names) + 8 or not np.isfinite(est.values).all():
        return [], cov
    # consistent-kernel regressors (the pipeline's derivative_filter): the estimator fitted the kernel's outputs;
    # the checks judge the measurement (samples.measured) as with the local fit
    fitted, samples = samples, samples.as_measured
    model = get_model(est.model)
    xdd = samples.xdd
    if model.uses_acceleration and (xdd is None or len(xdd) != len(samples)):
        return [], cov
    X = model.regressor(samples.x, samples.xd, xdd)
    F = samples.force
    # a parameter reported as not identifiable (its regressor unexcited) takes no part in the residual
    used = np.asarray(est.identifiable, dtype=bool) if len(est.identifiable) == len(est.names) else True
    r = F - X @ np.where(used, est.values, 0.0)
    if not np.sqrt(np.mean(r * r)) > EXACT * np.sqrt(np.mean(F * F)):
        return [], cov                 # the model reproduces the force to round-off: nothing to test
    scale = np.sqrt(np.maximum((X * X).mean(axis=0), 1e-300))
    Xs = X / scale
    var = np.diagonal(cov).copy()
    checks = []
    hac = trust.hac_covariance(Xs, r, lags='auto') / np.outer(scale, scale)
    terms = {'own': var.copy(), 'hac': np.diagonal(hac).copy()}
    if fitted is not samples:
        kernel = _kernel_terms(fitted, samples, model, est.values, used)
        terms['hac'] = kernel['hac']
        terms['eiv'] = kernel['eiv']
        terms['window'] = kernel['window']
        if est.algorithm in WHITE_OWN_COVARIANCE:
            terms['own'] = terms['own'] * kernel['correlation']
    # method bias: an estimate away from a consistent reference fit of the same samples by d (instrumental
    # variables, immune to the noise of x and of its differentiated rate; e.g. errors-in-variables
    # attenuation of least squares, spectral leakage of a frequency-domain method) carries a bias its own
    # sigma does not include: its variance becomes at least var_ref + d^2 (truth - theta = (truth - ref) +
    # (ref - theta))
    ref, ref_cov = _per_window(_reference, samples, est.model, X, F, model)
    if ref is None:
        ref, ref_cov = np.linalg.lstsq(Xs, F, rcond=None)[0] / scale, hac
    gap = np.where(used, est.values - ref, 0.0)
    terms['iv'] = (np.diagonal(ref_cov).copy(), gap)
    # the signal chain: the gap to the parallel-filtered fit of the same window (no differentiator bias), whose
    # own covariance holds its HAC sandwich, the EIV bias of the x noise through the kernels and the
    # conditioning term of two defensible bandwidths (contact_dynamics_common.trust.covariance)
    keep = tuple(bool(u) for u in np.broadcast_to(np.asarray(used, dtype=bool), (len(est.names),)))
    pf = _per_window(_parallel_reference, samples, (est.model, keep), model, keep)
    if pf is not None:
        gap_pf = np.where(used, est.values - pf['theta'], 0.0)
        terms['pf'] = (np.diagonal(pf['covariance']).copy(), gap_pf, pf)
        if pf.get('bands') is not None:
            checks.append(pf['bands'])
        # the derivative bandwidth chosen from the window's excitation spectrum, stated with the estimate
        checks.append(trust.Check(True, 'ok', 'signal_chain', details=pf['bandwidth'].as_dict()))
    if not model.uses_acceleration:
        om = _per_window(_omitted_mass, samples, (est.model, alpha), X, F, alpha)
        if not om.ok:
            shift = np.abs(np.asarray(om.details['shift']))
            aug_sigma = np.sqrt(np.maximum(np.diagonal(np.asarray(om.details['covariance_augmented'])), 0.0))
            bound = np.maximum(2.0 * aug_sigma, MATERIAL_SHIFT * np.abs(est.values))
            if not np.any(np.asarray(used) & (shift > bound)):
                # significant but immaterial: leaving it out moves no identifiable parameter by more than
                # 2 sigma or MATERIAL_SHIFT of its value (e.g. a settling tail on a noise-free plateau)
                om = replace(om, ok=True, reason='ok', details=dict(om.details, note='significant, immaterial'))
        checks.append(om)
        if not om.ok:
            beta = np.asarray(om.details['augmented'])      # the model's parameters fitted with the mass term
            aug = np.asarray(om.details['covariance_augmented'])
            terms['mass'] = (np.diagonal(aug).copy(), est.values - beta if fitted is samples
                             else np.asarray(om.details['shift']))
    # a force that flips with the direction of motion (Coulomb friction, hysteresis: two branches) is a
    # regressor the model leaves out; material when including it moves an identifiable parameter by more than
    # MATERIAL_DIRECTIONAL of its value and 3 sigma of the augmented fit
    dv = _per_window(_omitted_directional, samples, (est.model, alpha), X, F, alpha,
                     not model.uses_acceleration)
    if not dv.ok:
        # significant: whatever the verdict, the sigma covers the move of the parameters when it is included
        beta = np.asarray(dv.details['augmented'])
        aug = np.asarray(dv.details['covariance_augmented'])
        terms['directional'] = (np.diagonal(aug).copy(), est.values - beta if fitted is samples
                                else np.asarray(dv.details['shift']))
        shift = np.abs(np.asarray(dv.details['shift']))
        bound = np.maximum(3.0 * np.sqrt(np.maximum(np.diagonal(aug), 0.0)), MATERIAL_DIRECTIONAL * np.abs(est.values))
        if dv.details.get('share', 0.0) <= MIN_DIRECTIONAL_SHARE or not np.any(np.asarray(used) & (shift > bound)):
            dv = replace(dv, ok=True, reason='ok', details=dict(dv.details, note='significant, immaterial'))
    checks.append(dv)
    if fitted is not samples:
        # consistent kernel: no differentiator bias for the references to cover; while the model-adequacy tests
        # find no omitted term, a reference's gap counts only when it stands out against the reference's own
        # noise (a mismatch the two fits see differently); with a significant omitted term (friction,
        # hysteresis, mass) every reference counts in full, as with the local fit
        mismatch = 'directional' in terms or 'mass' in terms
        noise = np.maximum(terms['own'], terms['hac'])
        for key in ('window',) if mismatch else ('iv', 'pf', 'window'):
            if key in terms:
                v, g = terms[key][:2]
                if not np.any(np.asarray(g) ** 2 > REFERENCE_GAP_Z ** 2 * np.maximum(v, noise)):
                    del terms[key]
    var = honest_variance(terms)
    if model.uses_acceleration:
        share = _per_window(_interpolated_share, samples, 'interpolated')
        if share > MAX_INTERPOLATED:
            # x was interpolated between the samples of a slower displacement stream: its acceleration is
            # the interpolation's (zero between knots), not the contact's; the mass cannot be told
            j = est.names.index('mass')
            var[j] = max(var[j], 4.0 * float(est.values[j]) ** 2 + 1e-300)
            checks.append(trust.Check(True, f'mass not identified: {share:.0%} of the deformation samples are '
                                            'interpolated from a slower displacement stream', 'interpolation',
                                      details={'interpolated_share': share}))
    if 'nis' in est.extras and est.samples_used > 0:
        nis = _nis(est)
        checks.append(nis)
        var = np.maximum(var, np.diagonal(est.covariance) * nis.details.get('inflation', 1.0))
    white = trust.whiteness(r, dof=len(est.names), alpha=alpha)      # the least specific check last
    misfit = float(np.sqrt(np.mean(r * r)) / np.sqrt(np.mean(F * F)))
    if not white.ok and misfit <= MATERIAL_MISFIT:
        # correlated but immaterial residuals (coloured sensor noise, a tiny unmodelled term, a few samples
        # differentiated across a gap): the HAC covariance above accounts for them; no reason to distrust
        white = replace(white, ok=True, reason='ok', details=dict(white.details, misfit=misfit,
                                                                   note='correlated residuals; HAC sigma'))
    checks.append(white)
    own = np.sqrt(np.maximum(np.diagonal(cov), 1e-300))
    target = np.maximum(np.sqrt(np.maximum(var, 1e-300)), own)
    if not np.any(target > own):
        return checks, cov
    # the estimate's correlation with the honest sigmas (formed without the overflow of cov * ratio ratio^T when
    # the own sigma of an exact fit is ~1e-150)
    corr = np.clip(cov / np.outer(own, own), -1.0, 1.0)
    return checks, make_spd(corr * np.outer(target, target))


def _kernel_eiv(t: np.ndarray, x: np.ndarray, X: np.ndarray, theta: np.ndarray, width_s: float, period_s: float,
                half: int, orders: tuple[int, ...], cols) -> tuple[np.ndarray, float]:
    """(b, sigma_x): the first-order errors-in-variables bias b = -(X^T X / n - Sigma_E)^-1 Sigma_E theta of
    least squares on the regressor columns ``cols`` of kernel orders ``orders`` (Gaussian of ``width_s``, +-half
    samples at ``period_s``), Sigma_E = sigma_x^2 W W^T, and the white x noise sigma_x (m) from the high-order
    differences of x on the longest hole-free piece of t."""
    a, b = max(cond.hole_segments(t), key=lambda s: s[1] - s[0])
    sigma_x = cond.noise_std(x[a:b])
    if not sigma_x > 0:                             # noise-free x: no regressor error
        return np.zeros(len(theta)), sigma_x
    weights = cond.uniform_kernel_weights(width_s, period_s, orders, half=half)
    sigma_e = hcov.kernel_error_covariance(weights, sigma_x, orders)[np.ix_(cols, cols)]
    return hcov.eiv_bias(X, theta, sigma_e), sigma_x


def _kernel_terms(fitted: ContactSamples, measured: ContactSamples, model, values: np.ndarray, used) -> dict:
    """The variance terms of an estimate on the consistent kernel's regressors (no differentiator bias):

    * 'hac': Newey-West variance of the window's least squares with the estimate's residuals (lags from the
      residuals' own correlation: the kernel correlates them over its window);
    * 'eiv': (0, b) with b = -(X^T X / n - Sigma_E)^-1 Sigma_E theta, the errors-in-variables bias of the white
      x noise (level from the measured x's 4th differences on the longest hole-free piece) through the kernel's
      weights, Sigma_E = sigma_x^2 W W^T (``trust.covariance``): a bias the estimator's memory does not average
      away, so it counts at full size whatever the window;
    * 'window': (V_w, theta - theta_w), the window's own least squares on the kernel's regressors and its HAC
      variance: an estimator whose memory reaches before the window (GLS over 10 s, Kalman without drift) carries
      what the window cannot show (e.g. an approach whose force does not follow the model), seen as this gap;
    * 'correlation': HAC / white variance of the window's fit (>= 1), the factor an own covariance that assumes
      white residuals misses once the kernel has correlated them."""
    X = model.regressor(fitted.x, fitted.xd, fitted.xdd)
    p = X.shape[1]
    used = np.broadcast_to(np.asarray(used, dtype=bool), (p,))
    keep = np.flatnonzero(used)
    r = fitted.force - X @ np.where(used, values, 0.0)
    scale = np.sqrt(np.maximum((X * X).mean(axis=0), 1e-300))
    Xs = X / scale
    hac = trust.hac_covariance(Xs, r, lags='auto') / np.outer(scale, scale)
    # the kernel correlates the residuals over its window; an estimator's own (white-residual) variance is
    # scaled by the window's HAC / white ratio (the same correlation over the estimator's own memory)
    white = float(r @ r) / max(len(r) - p, 1) * np.linalg.pinv(Xs.T @ Xs) / np.outer(scale, scale)
    ratio = np.diagonal(hac) / np.maximum(np.diagonal(white), 1e-300)
    theta_w = np.zeros(p)
    cov_w = np.zeros((p, p))
    bias = np.zeros(p)
    if len(keep):
        Xk = Xs[:, keep]
        theta_w[keep] = np.linalg.lstsq(Xk, fitted.force, rcond=None)[0] / scale[keep]
        cov_w[np.ix_(keep, keep)] = trust.hac_covariance(
            Xk, fitted.force - X @ theta_w, lags='auto') / np.outer(scale[keep], scale[keep])
        t = measured.t
        period = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
        if fitted.kernel_half > 0 and period > 0:
            bias[keep] = _kernel_eiv(t, measured.x, X[:, keep], np.asarray(values, dtype=np.float64)[keep],
                                     fitted.kernel_half * period / 5.0, period, fitted.kernel_half,
                                     (0, 1, 2)[:p], keep)[0]
    gap = np.where(used, values - theta_w, 0.0)
    return {'hac': np.diagonal(hac).copy(), 'eiv': (np.zeros(p), bias), 'window': (np.diagonal(cov_w).copy(), gap),
            'correlation': np.maximum(ratio, 1.0)}


def assess(est: ContactEstimate, samples: ContactSamples, convergence: trust.Check | None = None,
           alpha: float = ALPHA) -> ContactEstimate:
    """``est`` with the trust verdict: the first failed check (convergence first) invalidates it with its
    reason unless it was already invalid; the covariance becomes the honest one."""
    checks, cov = adequacy_checks(est, samples, alpha)
    return with_checks(est, ([convergence] if convergence is not None else []) + checks, cov)


def with_checks(est: ContactEstimate, checks: list[trust.Check], covariance: np.ndarray | None = None
                ) -> ContactEstimate:
    """Fold trust checks into an estimate: verdict, reason, honest covariance, ``extras['trust']``."""
    if not checks and covariance is None:
        return est
    summary = {c.kind: {'ok': c.ok, 'reason': c.reason, **({'p_value': c.p_value} if np.isfinite(c.p_value) else {}),
                        **{k: v for k, v in c.details.items() if isinstance(v, (int, float, bool))}}
               for c in checks}
    bad = trust.first_failure(checks)
    valid, reason = est.valid, est.reason
    notes = [c.reason for c in checks if c.ok and c.reason != 'ok']
    if notes and bad is None and valid:
        reason = '; '.join([reason] + notes)
    if bad is not None and (valid or (bad.kind == 'convergence' and reason.startswith('not converged'))):
        valid, reason = False, bad.reason         # the shared rule's reason replaces an own 'not converged'
    elif bad is not None:
        summary['note'] = bad.reason
    extras = dict(est.extras, trust=summary)
    cov = est.covariance if covariance is None else covariance
    return _changed(est, valid=valid, reason=reason, covariance=cov, extras=extras)


def _changed(est: ContactEstimate, **changes) -> ContactEstimate:
    """``dataclasses.replace`` of a ContactEstimate (no __post_init__, no slots) without re-running its
    __init__: the live monitors change a few fields of every published estimate."""
    if type(est) is not ContactEstimate:
        return replace(est, **changes)
    new = object.__new__(ContactEstimate)
    fields = new.__dict__
    fields.update(est.__dict__)
    fields.update(changes)
    return new


class RecentSamples:
    """The last ``capacity`` in-contact samples the estimators received (the live adequacy window)."""

    def __init__(self, capacity: int = 2000):
        self.capacity = int(capacity)
        self.clear()

    def clear(self) -> None:
        self._parts: list[ContactSamples] = []
        self._n = 0

    def extend(self, samples: ContactSamples) -> None:
        if len(samples):
            self._parts.append(samples)
            self._n += len(samples)
            while self._parts and self._n - len(self._parts[0]) >= self.capacity:
                self._n -= len(self._parts.pop(0))

    def window(self, extra: ContactSamples | None = None) -> ContactSamples:
        """The last ``capacity`` samples (followed by ``extra``, not stored)."""
        parts = self._parts + ([extra] if extra is not None and len(extra) else [])
        if not parts:
            return ContactSamples.make([], [], [], [])
        joined = ContactSamples.concat(parts) if len(parts) > 1 else parts[0]
        return joined.slice(slice(max(len(joined) - self.capacity, 0), None))


#: the live monitor records an estimator's estimate every this many in-contact samples
MONITOR_SAMPLES = 200
#: observations (x MONITOR_SAMPLES in-contact samples) at which model adequacy and the honest sigma are first
#: evaluated, before the convergence history is long enough (min_reports); before the first, nothing is valid
EARLY_ADEQUACY = (2, 5)
#: observed estimates (x MONITOR_SAMPLES samples: the adequacy window) over which a tracking estimator's
#: movement counts towards its sigma
TRACK_OBSERVATIONS = 10
#: a tracking estimator's move within the adequacy window counts towards its sigma beyond this many sigma
TRACK_Z = 3.0
#: live drift/oscillation tolerance floor (share of the value): a short-memory estimator (RLS with
#: forgetting) wanders with the excitation's phase by a few of its own sigma over a few seconds
LIVE_RESOLUTION = 0.005


class TrustMonitor:
    """Live form of the trust verdict for one estimator, independent of how samples reach it.

    The pipeline calls ``observe(est, window)`` with the estimate after every ``MONITOR_SAMPLES``-th
    in-contact sample (whatever the timer ticks) and ``window()`` giving the last samples up to it; the
    monitor keeps the last ``length`` of those estimates and, from ``min_reports`` on,

    * re-evaluates convergence on them every ``every`` observations (without the settle rule for a
      ``tracking`` estimator);
    * re-evaluates model adequacy (``adequacy_checks``: omitted mass, material whiteness, NIS, honest
      sigma) of that estimate on the window every ``adequacy_every`` observations;

    ``review(est)`` returns a published estimate with the verdicts held since the last evaluation (the
    honest covariance as per-parameter sigma factors) and its own NIS check. Everything depends only on
    the samples, so the live node and run-bag publish the same verdicts. An estimate that passes every
    check and needs no inflation is returned unchanged.
    """

    def __init__(self, estimator, length: int = 100, min_reports: int = 10, every: int = 5,
                 adequacy_every: int = 25):
        self.estimator = estimator
        self.length = int(length)
        self.min_reports = int(min_reports)
        self.every = max(int(every), 1)
        self.adequacy_every = max(int(adequacy_every), 1)
        self.reset()

    def reset(self) -> None:
        self._history: deque = deque(maxlen=self.length)
        self._ring: np.ndarray | None = None      # values | sigma of the last ``length`` observed, ring order
        self._known = np.zeros(self.length, dtype=bool)     # ... and which of them have a known covariance
        self._count = 0
        self._verdict: trust.Check | None = None
        self._adequacy: list[trust.Check] = []
        self._factor: np.ndarray | None = None
        self._honest_sigma: np.ndarray | None = None
        self._chain: trust.Check | None = None

    def observe(self, est: ContactEstimate, window) -> None:
        if est.samples_used <= 0:
            return
        self._history.append(est)
        self._remember(est)
        self._count += 1
        due = self._count - self.min_reports
        early = self._count in EARLY_ADEQUACY and self._count < self.min_reports
        if self._count < self.min_reports and not early:
            return
        if due >= 0 and due % self.every == 0:
            settle = {} if not tracking(self.estimator) else {'min_tail': 10 ** 9}
            self._verdict = self._convergence(rel_floor=LIVE_RESOLUTION, **settle)
        if early or due % self.adequacy_every == 0:
            checks, honest = adequacy_checks(est, window())
            self._adequacy = [c for c in checks if not c.ok or c.reason != 'ok']
            self._chain = next((c for c in checks if c.kind == 'signal_chain'), None)
            own = np.sqrt(np.maximum(np.diagonal(est.covariance), 1e-300))
            self._honest_sigma = np.sqrt(np.maximum(np.diagonal(honest), 1e-300))
            factor = np.minimum(self._honest_sigma / own, 1e100)    # no overflow
            self._factor = factor if np.any(factor > 1.0) else None

    def _remember(self, est: ContactEstimate) -> None:
        """Keep the estimate's values and sigmas in the ring (what convergence_check would stack)."""
        p = len(est.values)
        if self._ring is None or self._ring.shape[1] != 2 * p or np.shape(est.covariance) != (p, p):
            self._ring = None               # another shape: convergence_check on the history instead
            if np.shape(est.covariance) != (p, p) or self._count:
                return
            self._ring = np.zeros((self.length, 2 * p))
        slot = self._count % self.length
        self._ring[slot, :p] = est.values
        self._ring[slot, p:] = np.sqrt(np.diagonal(est.covariance)) * _nis_scale(est)
        self._known[slot] = bool(est.extras.get('covariance_known', True))

    def _convergence(self, **kwargs) -> trust.Check | None:
        """``convergence_check`` of the history, from the ring (the same arrays, not stacked again)."""
        history = self._history
        last = next((e for e in reversed(history) if e.extras.get('covariance_known', True)), None)
        if self._ring is None or last is None or last.extras.get('reference') is not None \
                or np.asarray(last.values).dtype != np.float64:
            return convergence_check(self.estimator, list(history), **kwargs)
        n = len(history)                  # the history holds the last n observed: ring slots count-n..count-1
        order = np.arange(self._count - n, self._count) % self.length
        rows = self._ring[order[self._known[order]]]
        if len(rows) < 2:
            return None
        theta0, sigma0 = prior_of(self.estimator)
        p = self._ring.shape[1] // 2
        values, sigma = np.ascontiguousarray(rows[:, :p]), np.ascontiguousarray(rows[:, p:])
        if self._factor is not None and len(self._factor) == p and not kwargs.get('min_tail', 0) > 10 ** 8:
            # the settle rule judges drift against the honest sigma (HAC, signal chain), not the white-noise one
            sigma = sigma * self._factor
        return trust.convergence(last.names, values, sigma, initial=theta0, prior_sigma=sigma0,
                                 check=last.identifiable or None, **kwargs)

    def review(self, est: ContactEstimate) -> ContactEstimate:
        """The published form of one estimate (``review_many`` of one)."""
        return self.review_many([est])[0]

    def review_many(self, ests: list[ContactEstimate]) -> list[ContactEstimate]:
        """The published form of each estimate, all with the monitor's present state (no ``observe`` between
        them: the pipeline reviews the reports between two observations at once). Each estimate's numbers are
        its own (``_review_stack`` does the per-parameter arithmetic on the stack, elementwise; ``make_spd_batch``
        is ``make_spd`` per matrix), so the result does not depend on how the estimates are grouped."""
        out: list = [None] * len(ests)
        groups: dict = {}
        for k, e in enumerate(ests):
            if e.samples_used <= 0:
                out[k] = e
            elif self._count < EARLY_ADEQUACY[0]:
                # no adequacy check (honest sigma, model mismatch) has run yet: an estimate with only its own
                # white-noise sigma is not published as valid
                need = EARLY_ADEQUACY[0] * MONITOR_SAMPLES
                out[k] = published(with_checks(e, [trust.Check(False, f'warming up: trust not assessed yet (the '
                                                                      f'first check needs {need} in-contact '
                                                                      'samples)', 'convergence')]))
            else:
                p = len(e.names)
                ok = np.shape(e.covariance) == (p, p) and len(e.values) == p
                groups.setdefault(p if ok else ('alone', k), []).append(k)
        for idx in groups.values():
            for k, r in zip(idx, self._review_stack([ests[k] for k in idx])):
                out[k] = r
        return out

    def _review_stack(self, ests: list[ContactEstimate]) -> list[ContactEstimate]:
        """``review_many`` of estimates with p parameters each:

        * the honest sigma of the last adequacy check, carried to each estimate as its ratio to the own sigma
          (``_factor``) but never beyond the honest sigma itself (an own sigma of an exact fit can move by
          decades): a diagonal congruence C f f^T;
        * a Kalman estimate whose mean NIS is above its band: the own covariance with the force noise the
          innovations show - one more estimate of the same noise variance as the honest one, so the larger
          factor counts (not their product);
        * a tracking estimator's spread over the adequacy window (``_tracking_rows``);
        * the checks held since the last evaluation, then the shared final rule (``published``)."""
        p, K = len(ests[0].names), len(ests)
        base_checks = [] if self._verdict is None or self._verdict.ok else [self._verdict]
        base_checks += [c for c in self._adequacy if c.kind != 'nis']
        C = np.stack([np.asarray(e.covariance, dtype=np.float64) for e in ests])
        f = np.ones((K, p))
        has_f = np.zeros(K, dtype=bool)
        if self._factor is not None and len(self._factor) == p:
            own = np.sqrt(np.maximum(np.diagonal(C, axis1=1, axis2=2), 1e-300))
            f = np.maximum(1.0, np.minimum(self._factor, self._honest_sigma / own))
            has_f[:] = True
        checks = []
        for k, e in enumerate(ests):
            ck = list(base_checks)
            if 'nis' in e.extras:
                nis = _nis(e)
                if nis.reason != 'ok':
                    ck.append(nis)
                    g = np.sqrt(max(nis.details['inflation'], 1.0))
                    f[k] = np.maximum(f[k], g) if has_f[k] else np.full(p, g)
                    has_f[k] = True
            if self._chain is not None:
                ck.append(self._chain)          # states the bandwidth in extras['trust']['signal_chain']
            checks.append(ck)
        cov = C
        changed = has_f.copy()
        if has_f.any():
            i = np.flatnonzero(has_f)
            cov = C.copy()
            cov[i] = make_spd_batch(C[i] * (f[i][:, :, None] * f[i][:, None, :]))
        rows = self._tracking_rows(p)
        if rows is not None:
            values = np.stack([np.asarray(e.values, dtype=np.float64) for e in ests])
            d = np.max(np.abs(rows[None, :, :] - values[:, None, :]), axis=1)
            extra = np.maximum(d * d - TRACK_Z ** 2 * np.maximum(np.diagonal(cov, axis1=1, axis2=2), 0.0), 0.0)
            grow = np.any(extra > 0, axis=1)
            if grow.any():
                add = np.zeros((int(grow.sum()), p, p))
                add[:, np.arange(p), np.arange(p)] = extra[grow]
                cov = cov.copy()
                cov[grow] = make_spd_batch(cov[grow] + add)
                changed |= grow
        return [published(with_checks(e, ck, cov[k] if changed[k] else None) if ck or changed[k] else e)
                for k, (e, ck) in enumerate(zip(ests, checks))]

    def _tracking_rows(self, p: int) -> np.ndarray | None:
        """The values of the last ``TRACK_OBSERVATIONS`` observed estimates of a tracking estimator (None for
        another estimator, or before ``min_reports``). An estimate's variance as a statement about the contact
        over the adequacy window gains max(d_j^2 - (TRACK_Z sigma_j)^2, 0), d_j = max |theta_j - theta_j(i)| over
        these rows: for a stationary estimate theta_j - theta_j(i) has variance <= 2 sigma_j^2 (independent when
        i is beyond its memory), so a move beyond 3 sigma_j (2.1 of its sd, <= 3.4 % per observation) is drift -
        a drifting or hysteretic contact - and the parameter is that uncertain. (2 sigma, used before, is 1.4 of
        the sd: a forgetting RLS's own noise was counted as drift in most windows, its sigma up to 1.7x too
        large on stationary data.)"""
        if not tracking(self.estimator) or self._ring is None or self._count < self.min_reports \
                or self._ring.shape[1] != 2 * p:
            return None
        n = min(TRACK_OBSERVATIONS, self._count, self.length)
        order = np.arange(self._count - n, self._count) % self.length
        rows = self._ring[order[self._known[order]], :p]
        return rows if len(rows) else None


def tracking(estimator) -> bool:
    """Is the estimator built to follow a changing contact (finite memory: forgetting factor < 1, a sliding
    window, or process noise)? Live, its recent estimates legitimately drift with the contact (a load
    staircase on a hardening payload) and its sigma covers its memory, so the settle rule is not applied
    to it; the information rule, the reference rule and model adequacy are."""
    if getattr(estimator, 'lam', 1.0) < 1.0 or hasattr(estimator, 'window_s'):
        return True
    q = getattr(estimator, 'q_s', None)
    return q is not None and bool(np.any(np.asarray(q) > 0))


def boundaries(done: int, n: int, every: int = MONITOR_SAMPLES) -> np.ndarray:
    """Counts c in 1..n (within a block of n samples after ``done`` samples) where done + c is a multiple
    of ``every``: where the monitors observe."""
    first = every - done % every
    return np.arange(first, n + 1, every, dtype=np.int64)


def _nis_scale(est: ContactEstimate) -> float:
    """sqrt(max(1, mean NIS)) of a Kalman estimate (1 otherwise): its sigma with a force noise set too low is
    that much too small, and the settle rule must judge its drift against the honest sigma."""
    nis = est.extras.get('nis')
    return float(np.sqrt(max(1.0, float(nis)))) if nis is not None and np.isfinite(nis) else 1.0


def _nis(est: ContactEstimate) -> trust.Check:
    """The NIS check of a Kalman estimate. Alone (white residuals, no omitted term) a NIS above its band
    means the assumed force noise is too low, not that the model is wrong: the covariance is inflated by
    the NIS (``details['inflation']``) and the estimate keeps its validity with a note in its reason."""
    nis = trust.nis_check(float(est.extras['nis']), n=int(est.samples_used), alpha=0.01)
    if nis.ok:
        return nis
    note = (f'noise setting too low: mean NIS {nis.statistic:.3g} above its chi^2 band, '
            f'sigma inflated x{np.sqrt(nis.details["inflation"]):.2f}')
    return replace(nis, ok=True, reason=note, details=dict(nis.details, note=note))


_WINDOW_MEMO: list[tuple] = []      # (samples object, function, key, result), newest last


def _per_window(fn, samples: ContactSamples, key, *args):
    """``fn(samples, *args)``, computed once per window object and ``key`` (the args follow from both):
    the monitors of several estimators judge the same window, and the reference fit and the omitted-mass
    test depend only on the samples and the model, not on the estimate."""
    for obj, f, k, result in _WINDOW_MEMO:
        if obj is samples and f is fn and k == key:
            return result
    result = fn(samples, *args)
    _WINDOW_MEMO.append((samples, fn, key, result))
    del _WINDOW_MEMO[:-8]
    return result


def _noise_lag(xd: np.ndarray) -> int:
    """L: one more than the correlation length of the rate's noise (the differentiator's window), measured
    as the last lag <= 32 where |acf(diff2 xd)| > 0.2 (twice differenced, the noise dominates the signal)."""
    d = np.diff(xd, 2)
    acf = np.abs(trust.autocorrelation(d, min(32, max(len(d) // 4, 1)))) if len(d) > 8 else np.zeros(0)
    above = np.flatnonzero(acf > 0.2)
    return int(above[-1]) + 2 if len(above) else 1


def _reference(samples: ContactSamples, X: np.ndarray, F: np.ndarray, model) -> tuple:
    """Instrumental-variables fit of the window (None, None when not possible): rows i in [L, n - L),
    instruments (x[i-L] + x[i+L]) / 2, (x[i+L] - x[i-L]) / (t[i+L] - t[i-L]) (and (xd[i+L] - xd[i-L]) / ...
    for the mass), which share no noise sample with row i's regressors or residual."""
    n = len(samples)
    L = _noise_lag(samples.xd)
    if n <= 2 * L + 10 * X.shape[1]:
        return None, None
    t, x, xd = samples.t, samples.x, samples.xd
    span = t[2 * L:] - t[:-2 * L]
    if not np.all(span > 0):
        return None, None
    cols = [0.5 * (x[2 * L:] + x[:-2 * L]), (x[2 * L:] - x[:-2 * L]) / span]
    if model.uses_acceleration:
        cols.append((xd[2 * L:] - xd[:-2 * L]) / span)
    inner = slice(L, n - L)
    try:
        theta, cov = trust.instrumental_variables(X[inner], F[inner], np.column_stack(cols))
    except np.linalg.LinAlgError:
        return None, None
    if not (np.isfinite(theta).all() and np.isfinite(cov).all()):
        return None, None
    return theta, cov


#: parameters of the two halves of the excitation band must agree within this many combined sigma ...
BAND_Z = 4.0
#: ... or this share of their value
BAND_REL = 0.02
#: the stiffness is compared between the bands only when the rate force carries this share of the force
BAND_RATE_SHARE = 0.005
#: the parallel-filtered reference needs at least this many samples per parameter after the kernel edges
_PF_MIN_PER_PARAMETER = 20


def _parallel_reference(samples: ContactSamples, model, keep: tuple[bool, ...] | None = None) -> dict | None:
    """Parallel-filtered least squares of the window (None when too short): the Gaussian kernel of
    ``signal.conditioning`` on F and x, its exact derivatives as the rate (and acceleration) regressors, at
    the bandwidth chosen from the excitation spectrum of x and at the alternative one.

    Returns {'theta', 'covariance' (trust.covariance.combine of the HAC sandwich, the EIV bias of the white
    x noise through the kernels, and the conditioning term theta(bw) - theta(alt)), 'bandwidth', 'terms',
    'bands' (:func:`_band_consistency`)}. ``keep``: the parameters fitted (the identifiable ones: an
    unexcited column is left out; its entries are 0).
    """
    n, p = len(samples), model.size
    if n < 64:
        return None
    t, x, F = samples.t, samples.x, samples.force
    try:
        bw = cond.choose_bandwidth(t, x)
    except ValueError:
        return None
    orders = (0, 1, 2) if model.uses_acceleration else (0, 1)
    keep = (True,) * p if keep is None else tuple(keep)
    cols_kept = np.flatnonzero(keep)
    if not len(cols_kept):
        return None
    fits = []
    for width in (bw.width_s, bw.alternative_width_s):
        cols = cond.filtered_derivatives(t, x, width, orders=orders)
        Ff = cond.kernel_filter(t, F, width)
        X = model.regressor(*cols)[:, cols_kept]
        ok = np.isfinite(X).all(axis=1) & np.isfinite(Ff)
        if ok.sum() < _PF_MIN_PER_PARAMETER * p:
            return None
        scale = np.sqrt(np.maximum((X[ok] ** 2).mean(axis=0), 1e-300))
        theta = np.linalg.lstsq(X[ok] / scale, Ff[ok], rcond=None)[0] / scale
        fits.append((theta, X[ok], Ff[ok] - X[ok] @ theta, X, Ff, ok))
    theta, X, r = fits[0][:3]
    sw = hcov.sandwich(X, r)
    period = 1.0 / bw.rate_hz
    bias, sigma_x = _kernel_eiv(t, x, X, theta, bw.width_s, period, cond.kernel_half(bw.width_s, period), orders,
                                cols_kept)
    honest = hcov.combine(sw, eiv=bias, conditioning=hcov.conditioning(theta, fits[1][0]))
    bands = None
    if all(keep):
        # the regressors' own noise, band by band: white noise of the measured level on the same stamps through
        # the same kernels (a fixed seed: the same window gives the same verdict everywhere)
        noise = np.random.default_rng(0).standard_normal(len(t)) * sigma_x
        noise_X = model.regressor(*cond.filtered_derivatives(t, noise, bw.width_s, orders=orders))
        bands = _band_consistency(t, fits[0][3], fits[0][4], fits[0][5], model, noise_X)
    theta_full = np.zeros(p)
    theta_full[cols_kept] = theta
    cov_full = np.zeros((p, p))
    cov_full[np.ix_(cols_kept, cols_kept)] = honest.covariance
    return {'theta': theta_full, 'covariance': cov_full, 'bandwidth': bw, 'terms': honest, 'bands': bands}


def _band_consistency(t: np.ndarray, X: np.ndarray, y: np.ndarray, ok: np.ndarray, model, noise_X: np.ndarray
                      ) -> trust.Check | None:
    """Do the parameters agree between the lower and the upper half of the excitation band? (the stiffness only
    on dynamic data: damping force >= BAND_RATE_SHARE of the force)

    The parallel-filtered regressors X and target y (exact for the model) are split by one more Gaussian kernel
    at f_s, the frequency below which half the deformation's power lies: low = h_s * (X, y), high = (X, y) - low (both
    linear filters: the model holds exactly in each band). Each band is fitted by least squares with its HAC
    sandwich and EIV bias (``trust.covariance``; the band's regressor noise from ``noise_X``, white noise of the
    measured level through the same kernels and band split). A parameter that differs by more than BAND_Z
    combined sigma and BAND_REL of its value fails: ``model mismatch suspected: <name> differs between frequency bands``
    (frequency-dependent loss such as hysteresis, an omitted mass or friction). None when a band is too
    poorly excited to tell."""
    from scipy.signal import welch
    idx = np.flatnonzero(ok)
    if len(idx) < 400:
        return None
    a, b = max(cond.hole_segments(t[idx]), key=lambda s: s[1] - s[0])
    seg = idx[a:b]
    if len(seg) < 400:
        return None
    rate = 1.0 / float(np.median(np.diff(t[seg])))
    # split where half the deformation's power lies below (the rate's power is weighted to the top tone)
    f, pw = welch(X[seg, 0], fs=rate, nperseg=min(len(seg), int(4 * rate)), detrend='linear')
    pw = np.where(f > 0, pw, 0.0)
    cum = np.cumsum(pw)
    if not cum[-1] > 0:
        return None
    f_s = float(f[min(int(np.searchsorted(cum, 0.5 * cum[-1])), len(f) - 1)])
    if not 0 < f_s < 0.2 * rate:
        return None
    Xs, ys = X[seg], y[seg]
    width_s = cond.width_for_cutoff(f_s)
    lo_X, lo_y, lo_ok = cond.parallel_filter(t[seg], Xs, ys, width_s)
    nz = np.nan_to_num(noise_X[seg])
    lo_n = cond.kernel_filter(t[seg], nz, width_s)
    bands = ((lo_X[lo_ok], lo_y[lo_ok], lo_n[lo_ok]),
             (Xs[lo_ok] - lo_X[lo_ok], ys[lo_ok] - lo_y[lo_ok], nz[lo_ok] - lo_n[lo_ok]))
    p = X.shape[1]
    thetas, variances = [], []
    for Xb, yb, nb in bands:
        if len(yb) < 50 * p:
            return None
        sc = np.sqrt(np.maximum((Xb * Xb).mean(axis=0), 1e-300))
        th = np.linalg.lstsq(Xb / sc, yb, rcond=None)[0] / sc
        # EIV bias of this band from the band's own share of the regressor noise
        bias = hcov.eiv_bias(Xb, th, nb.T @ nb / max(len(nb), 1))
        cov = hcov.combine(hcov.sandwich(Xb, yb - Xb @ th), eiv=bias).covariance
        thetas.append(th)
        variances.append(np.diagonal(cov))
    d = thetas[0] - thetas[1]
    sd = np.sqrt(variances[0] + variances[1])
    details = {'split_hz': f_s, **{f'{n}_low': float(thetas[0][j]) for j, n in enumerate(model.names)},
               **{f'{n}_high': float(thetas[1][j]) for j, n in enumerate(model.names)}}
    j_b = model.names.index('damping')
    rate_share = abs(float(thetas[0][j_b] + thetas[1][j_b])) / 2 * float(np.sqrt(np.mean(Xs[:, j_b] ** 2))) \
        / max(float(np.sqrt(np.mean(ys ** 2))), 1e-300)
    for j, name in enumerate(model.names):
        if name == 'mass':
            continue          # weakly excited in the lower band; an omitted or wrong mass has its own test
        if name == 'stiffness' and rate_share < BAND_RATE_SHARE:
            # on quasi-static data a stiffness that differs between the bands is a nonlinear spring (secant
            # on the slow levels, tangent in the fast part): the secant-vs-tangent question, not a loss mismatch
            continue
        ref = max(abs(thetas[0][j]), abs(thetas[1][j]))
        if abs(d[j]) > BAND_Z * sd[j] and abs(d[j]) > BAND_REL * ref:
            return trust.Check(False, f'{trust.MISMATCH}: {name} differs between frequency bands (below '
                                      f'{f_s:.3g} Hz {thetas[0][j]:.4g}, above {thetas[1][j]:.4g}, '
                                      f'{abs(d[j]) / sd[j]:.1f} sigma): frequency-dependent loss (hysteresis), '
                                      'an omitted mass or friction', 'band_consistency', details=details)
    return trust.Check(True, 'ok', 'band_consistency', details=details)


#: share of linearly interpolated deformation samples above which the acceleration regressor is not trusted
MAX_INTERPOLATED = 0.3


def _interpolated_share(samples: ContactSamples) -> float:
    """Share of samples where the deformation lies on the straight line through its neighbours (three-point
    divided second difference ~0 relative to its typical size): linear interpolation between the knots of a
    slower displacement stream. Measured samples with any noise or curvature are never exactly on the line."""
    t, x = samples.t, samples.x
    if len(x) < 16:
        return 0.0
    h1, h2 = np.diff(t)[:-1], np.diff(t)[1:]
    ok = (h1 > 0) & (h2 > 0)
    d2 = np.zeros(len(h1))
    d2[ok] = 2.0 * ((x[2:] - x[1:-1])[ok] / h2[ok] - (x[1:-1] - x[:-2])[ok] / h1[ok]) / (h1 + h2)[ok]
    scale = float(np.median(np.abs(d2[ok]))) if ok.any() else 0.0
    top = float(np.max(np.abs(d2[ok]))) if ok.any() else 0.0
    if not top > 0:
        return 0.0
    return float(np.mean(np.abs(d2[ok]) <= 1e-6 * top))


def _omitted_directional(samples: ContactSamples, X: np.ndarray, F: np.ndarray, alpha: float,
                         hysteresis: bool = True) -> trust.Check:
    """Is a force c s(xdot) that flips with the direction of motion significant in F = phi^T theta + c s?
    s = tanh(v / v0) with v = (x[i+L] - x[i-L]) / (t[i+L] - t[i-L]) (L beyond the differentiator's noise
    correlation, as for the mass test), v0 = 3 x the noise level of v (``signal.conditioning.noise_std``): +-1 while
    the deformation clearly grows / shrinks, ~0 on a plateau where the rate is noise (Coulomb friction), and, for
    a hysteretic spring whose loop ramps over a travel 2 r after each reversal (a Jenkins element), the play
    operators h_r = x - P_r(x) at r = PLAY_WIDTHS x std(x) taken at row i - L (:func:`play_operator`; a width
    below PLAY_MIN_NOISE x the x noise is left out). One HAC Wald test of all columns (``trust.omitted_regressor``):
    a hysteretic loss that least squares puts into b is found here (its shift of b enters sigma, and flags the
    estimate when material). The play columns only with ``hysteresis`` (models without a mass): for large r
    x - P_r(x) is the fast part of x, which also carries the inertial force that a mass fitted on a noisy xddot
    leaves in the residual (errors-in-variables attenuation of m); the mass model cannot tell the two apart."""
    t, x = samples.t, samples.x
    n = len(x)
    L = _noise_lag(samples.xd)
    try:           # the direction must follow the top tone: a rate over at most 1/16 of its period
        bw = cond.choose_bandwidth(t, x)
        L = min(L, max(2, int(round(bw.rate_hz / (16.0 * max(bw.excitation_hz, 1e-3))))))
    except ValueError:
        pass
    # the direction from a rate that shares no noise sample with row i's regressors or residual (a noisy
    # sign of the row's own xdot would correlate with the residual through the rate noise: errors in variables)
    rate = _lagged_difference(t, x, L, 32, 'omitted_directional')
    if isinstance(rate, trust.Check):
        return rate
    v0 = 3.0 * cond.noise_std(rate)
    if not v0 > 0:
        return trust.Check(True, 'ok', 'omitted_directional', details={'note': 'no rate noise level'})
    inner = slice(L, n - L)
    X, F = X[inner], F[inner]
    z = np.tanh(rate / v0)
    if min(np.mean(z > 0.5), np.mean(z < -0.5)) < MIN_EACH_DIRECTION:
        # a term that flips with the direction needs motion both ways: on a one-way ramp it is an intercept
        # (a secant-vs-tangent question, not friction), on a plateau it is collinear with x
        return trust.Check(True, 'ok', 'omitted_directional', details={'note': 'no clear motion both ways'})
    # the hysteretic loop (a force that ramps after each reversal over a travel 2 r, then saturates): play
    # operators of the deformation (a Prandtl-Ishlinskii basis), delayed by L samples so that row i's
    # regressor depends on x only up to i - L (no noise sample shared with row i's regressors or residual)
    cols, names = [z], ['direction-dependent force']
    sx, s_noise = float(np.std(x)), cond.noise_std(x)
    for share in PLAY_WIDTHS if hysteresis else ():
        r = share * sx
        if r > PLAY_MIN_NOISE * s_noise:
            cols.append((x - play_operator(x, r))[:n - 2 * L])
            names.append(f'hysteresis (play {share:.0%})')
    c = replace(trust.omitted_regressor(X, F, np.column_stack(cols), tuple(names), alpha=alpha, min_share=0.0),
                kind='omitted_directional')
    if not c.ok:
        c = replace(c, reason=c.reason.replace('significant', 'significant (friction or hysteresis)', 1))
    return c


#: half-widths of the play operators of the omitted-hysteresis regressors, as shares of the window's deformation std
PLAY_WIDTHS = (0.05, 0.15, 0.45)
#: ... each used only above this many noise std of the deformation (below it, the play chatters with the noise)
PLAY_MIN_NOISE = 3.0


def play_operator(x: np.ndarray, r: float) -> np.ndarray:
    """Play (backlash) operator of half-width r (m): y_i = min(max(y_{i-1}, x_i - r), x_i + r), y_0 = x_0.
    x - P_r(x) is the force / k_h of a Jenkins element (spring k_h in series with a slider slipping at k_h r):
    it follows x after a reversal, then saturates at +-r; a few widths form a Prandtl-Ishlinskii basis of
    rate-independent hysteresis.

    Computed as a prefix scan instead of the scalar recursion: each step is the clamp
    c_i(y) = min(max(y, x_i - r), x_i + r), and clamps compose into clamps, c_j(c_i(y)) = min(max(y, L), H)
    with L = c_j(lo_i), H = c_j(hi_i); y_0 = x_0 is the constant clamp [x_0, x_0], so the composition of
    c_0..c_i is the constant y_i. log2(n) rounds of min / max on arrays (Hillis-Steele); min and max round
    nothing, so the values are the recursion's exactly (test_assess_play_operator)."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n == 0:
        return np.empty(0)
    lo, hi = x - r, x + r
    lo[0] = hi[0] = x[0]
    d = 1
    while d < n:
        a, b = lo[d:], hi[d:]
        new_lo = np.minimum(np.maximum(lo[:-d], a), b)      # c_i after the composition ending at i - d
        new_hi = np.minimum(np.maximum(hi[:-d], a), b)
        lo[d:], hi[d:] = new_lo, new_hi
        d *= 2
    return lo


def _lagged_difference(t: np.ndarray, y: np.ndarray, L: int, spare: int, kind: str) -> np.ndarray | trust.Check:
    """(y[i+L] - y[i-L]) / (t[i+L] - t[i-L]) for the inner rows i in [L, n - L), or an ok Check saying why the
    window cannot be tested (shorter than 2 L + ``spare`` samples, repeated stamps)."""
    if len(y) <= 2 * L + spare:
        return trust.Check(True, 'ok', kind, details={'note': 'window too short to test'})
    span = t[2 * L:] - t[:-2 * L]
    if not np.all(span > 0):
        return trust.Check(True, 'ok', kind, details={'note': 'repeated stamps'})
    return (y[2 * L:] - y[:-2 * L]) / span


def _omitted_mass(samples: ContactSamples, X: np.ndarray, F: np.ndarray, alpha: float) -> trust.Check:
    """Is a mass term m xddot significant in F = k x + b xdot (+ m xddot)?

    The regressor is a central difference of the deformation rate that shares no noise sample with the
    residual: z_i = (xd[i+L] - xd[i-L]) / (t[i+L] - t[i-L]), L from :func:`_noise_lag`.
    A second derivative of the same noisy x would correlate with the residual through the x noise (an
    errors-in-variables 'mass' of k sigma_x^2 / (dt^2 var xddot)) and flag noise as mass.
    """
    xd, t = samples.xd, samples.t
    L = _noise_lag(xd)
    n = len(xd)
    z = _lagged_difference(t, xd, L, 10, 'omitted_regressor')
    if isinstance(z, trust.Check):
        return z
    inner = slice(L, n - L)
    return trust.omitted_regressor(X[inner], F[inner], z, ('mass',), alpha=alpha)
