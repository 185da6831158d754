"""Trust: whether an estimate can be believed, shared by every package.

- ``checks``: convergence, residual whiteness, NIS, omitted regressors, HAC covariance, instrumental variables
  (each returns a ``Check``; ``first_failure`` folds them into a verdict);
- ``calibration``: the randomized calibration runner (coverage of +-2 sigma, confident-wrong and
  false-refusal rates per family and estimator) behind ``contact-dynamics calibrate``.

The names of ``checks`` are re-exported, so ``from contact_dynamics_common import trust; trust.whiteness(...)``
works as before the move to a sub-package.
"""
from .checks import (MISMATCH, OK, Check, autocorrelation, convergence, correlation_lags, durbin_watson,
                     first_failure, hac_covariance, instrumental_variables, ljung_box, long_run_variance_ratio,
                     newey_west_lags, nis_check, omitted_regressor, stability, whiteness)

__all__ = ['MISMATCH', 'OK', 'Check', 'autocorrelation', 'convergence', 'correlation_lags', 'durbin_watson',
           'first_failure', 'hac_covariance', 'instrumental_variables', 'ljung_box', 'long_run_variance_ratio',
           'newey_west_lags', 'nis_check', 'omitted_regressor', 'stability', 'whiteness']
