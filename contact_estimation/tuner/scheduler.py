"""The safety layer between contact estimates and the controller's gains (ROS-free).

Each tick ``GainScheduler.step(t)`` proposes at most one change of the contact axis' (M, zeta_a, K):

* **trust gate** (``observe``): an estimate counts only when its own verdict ``valid`` is true and k, b are
  finite with k >= 0; anything else is counted as refused (``refused.<cause>``) and makes the state ``hold``.
* **hold-last-good**: while the newest estimate is not trusted nothing changes (the last applied gains stay).
* **revert**: when no estimate has arrived for ``loss_timeout`` s (lost), or only untrusted ones for
  ``invalid_timeout`` s (> 0), the configured safe gains are proposed at once (not slew-limited: the safe
  gains are the ones a person chose for any environment).
* **rule**: a trusted estimate gives the target gains (``rule.admittance_gains``, within the bounds).
* **hysteresis**: a move starts only when a target gain differs from the applied one by more than
  ``hysteresis`` (relative); once started it goes on until the target is reached (no chatter around a
  threshold, no stop short of it).
* **slew limit**: per tick each gain moves by at most ``slew_rate * dt * max(|applied|, floor)`` (relative
  rate, 1/s; dt the time since the previous step, at most 1 s).

A proposal becomes the applied state only through ``commit`` (the node commits after the controller accepted
it; dry run and run-bag commit at once), so a refused request changes nothing.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from .rule import RuleConfig, admittance_gains, closed_loop

#: smallest scale of a gain for the relative slew limit and hysteresis (mass kg, zeta -, stiffness N/m)
FLOOR = (1e-3, 1e-2, 1.0)


@dataclass(frozen=True)
class SafetyConfig:
    safe_gains: tuple[float, float, float]    # (M kg, zeta_a -, K N/m) on loss
    slew_rate: float                          # 1/s, relative
    hysteresis: float                         # relative
    loss_timeout: float                       # s
    invalid_timeout: float                    # s, 0: hold indefinitely while estimates are untrusted


@dataclass
class Proposal:
    kind: str                                 # 'change' | 'revert'
    gains: tuple[float, float, float]
    target: tuple[float, float, float]
    reason: str
    t: float


@dataclass
class EstimateSample:
    t: float
    stiffness: float
    damping: float
    valid: bool
    damping_identifiable: bool
    status: str = ''


@dataclass
class GainScheduler:
    rule: RuleConfig
    safety: SafetyConfig
    applied: tuple[float, float, float] | None = None
    state: str = 'waiting'                    # waiting | tracking | settled | hold | reverted
    counts: Counter = field(default_factory=Counter)
    last_reason: str = ''
    last_refusal: str = ''

    def __post_init__(self):
        self._last_msg_t: float | None = None
        self._last_trusted_t: float | None = None
        self._trusted: EstimateSample | None = None
        self._newest_trusted = False
        self._moving = False
        self._last_step_t: float | None = None
        self.target: tuple[float, float, float] | None = None
        self.environment: tuple[float, float] = (math.nan, math.nan)

    # ------------------------------------------------------------------ inputs
    def observe(self, est: EstimateSample) -> str | None:
        """Take one estimate; None when trusted, else the reason it is not (counted)."""
        self.counts['estimates'] += 1
        self._last_msg_t = est.t
        reason = None
        if not est.valid:
            reason, cause = f'estimate not valid: {est.status or "no reason given"}', 'not_valid'
        elif not (math.isfinite(est.stiffness) and math.isfinite(est.damping)):
            reason, cause = 'estimate not finite', 'not_finite'
        elif est.stiffness < 0.0:
            reason, cause = f'negative stiffness {est.stiffness:.6g} N/m', 'negative_stiffness'
        if reason:
            self.counts[f'refused.{cause}'] += 1
            self.last_refusal = reason
            self._newest_trusted = False
            return reason
        self.counts['trusted'] += 1
        self._trusted, self._last_trusted_t, self._newest_trusted = est, est.t, True
        return None

    def refuse(self, cause: str, reason: str) -> None:
        """Count a refusal that happened outside (a request that failed its check or the controller's)."""
        self.counts[f'refused.{cause}'] += 1
        self.last_refusal = reason

    # ------------------------------------------------------------------ decision
    def step(self, t: float) -> Proposal | None:
        dt = 0.0 if self._last_step_t is None else min(max(t - self._last_step_t, 0.0), 1.0)
        self._last_step_t = t
        s = self.safety
        if self._last_msg_t is None:
            return None
        lost = t - self._last_msg_t > s.loss_timeout
        last_trusted = self._last_trusted_t if self._last_trusted_t is not None else -math.inf
        stale = (s.invalid_timeout > 0 and not self._newest_trusted and t - last_trusted > s.invalid_timeout
                 and self.applied is not None and self.applied != s.safe_gains)
        if lost or stale:
            if self.state == 'reverted' or self.applied == s.safe_gains:
                self.state = 'reverted'
                return None
            why = (f'no estimate for {t - self._last_msg_t:.3g} s (> loss_timeout {s.loss_timeout:g} s)'
                   if lost else f'no trusted estimate for > invalid_timeout {s.invalid_timeout:g} s')
            self._moving = False
            return Proposal('revert', s.safe_gains, s.safe_gains, f'revert to safe gains: {why}', t)
        if not self._newest_trusted:
            if self.state not in ('hold', 'reverted', 'waiting'):
                self.counts['holds'] += 1
            if self.state != 'reverted':
                self.state = 'hold' if self.applied is not None else 'waiting'
            return None
        est = self._trusted
        b_env = est.damping if est.damping_identifiable else 0.0
        self.environment = (est.stiffness, b_env)
        target = admittance_gains(est.stiffness, b_env, self.rule)
        self.target = target
        current = self.applied if self.applied is not None else s.safe_gains
        rel = [abs(a - b) / max(abs(b), f) for a, b, f in zip(target, current, FLOOR)]
        if not self._moving and max(rel) <= s.hysteresis:
            self.state = 'settled'
            self.counts['within_hysteresis'] += 1
            return None
        self._moving = True
        new = tuple(b + max(-lim, min(lim, a - b)) for a, b, lim in
                    ((a, b, s.slew_rate * dt * max(abs(b), f)) for a, b, f in zip(target, current, FLOOR)))
        if new == current:
            return None
        limited = new != target
        return Proposal('change', new, target,
                        f'k_e {est.stiffness:.6g} N/m, b_e {b_env:.6g} N s/m -> M {new[0]:.6g} kg, '
                        f'zeta {new[1]:.6g}, K {new[2]:.6g} N/m' + (' (slew-limited)' if limited else ''), t)

    def commit(self, p: Proposal) -> None:
        """The proposal was applied (accepted by the controller, or dry run / run-bag)."""
        self.applied = p.gains
        self.last_reason = p.reason
        self.counts['reverts' if p.kind == 'revert' else 'changes'] += 1
        if p.kind == 'revert':
            self.state = 'reverted'
        else:
            self._moving = p.gains != p.target
            self.state = 'tracking' if self._moving else 'settled'

    def figures(self) -> dict:
        """The numbers /diagnostics shows: applied and target gains, environment, achieved omega_n and
        zeta_cl."""
        out = {'state': self.state}
        for name, vals in (('applied', self.applied), ('target', self.target)):
            if vals is not None:
                out.update({f'{name}.mass_kg': vals[0], f'{name}.damping_ratio': vals[1],
                            f'{name}.stiffness_N_per_m': vals[2]})
        k, b = self.environment
        out['environment.stiffness_N_per_m'], out['environment.damping_Ns_per_m'] = k, b
        if self.applied is not None and math.isfinite(k):
            wn, zc = closed_loop(*self.applied, k, b)
            out['closed_loop.omega_n_rad_s'], out['closed_loop.damping_ratio'] = wn, zc
        out.update({k: v for k, v in self.counts.items()})
        return out


def scheduler_from_params(p: dict) -> GainScheduler:
    """The scheduler of the node's validated parameters (config.PARAMS)."""
    from .rule import GainBounds
    bounds = GainBounds(tuple(p['mass_bounds']), tuple(p['damping_ratio_bounds']),
                        tuple(p['stiffness_bounds']))
    rule = RuleConfig(p['bandwidth_hz'], p['target_damping_ratio'], p['admittance_stiffness'],
                      p['robot_apparent_mass'], bounds)
    safety = SafetyConfig((p['safe_mass'], p['safe_damping_ratio'], p['safe_stiffness']), p['slew_rate'],
                          p['hysteresis'], p['loss_timeout'], p['invalid_timeout'])
    return GainScheduler(rule, safety)
