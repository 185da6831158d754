"""ContactSamples: the synchronised in-contact samples every estimator consumes."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


#: larger magnitudes (in SI units) are treated like NaN: no force, deformation or time comes near them
MAX_MAGNITUDE = 1e100


@dataclass(frozen=True)
class ContactSamples:
    """Time t (s), normal force F (N), deformation x (m), its rate xd (m/s) and acceleration xdd (m/s^2).

    All arrays have the same length; ``xdd`` may be None for models without a mass term. Construct with
    :meth:`make`, which checks shapes and drops rows that are non-finite or beyond any physical magnitude
    (``|value| > MAX_MAGNITUDE``, where squares would overflow), reporting how many in ``dropped``.

    ``measured``: with the pipeline's ``derivative_filter: consistent_kernel`` the arrays above are one
    kernel's outputs (F_f = h * F, x_f = h * x, xd_f = h' * x, xdd_f = h'' * x: the model holds exactly for
    them) and ``measured`` holds the same stamps as the measurement gives them (F and x as measured, the
    local-fit rate and acceleration): the samples the model-adequacy checks and the independent reference fits
    judge. None otherwise (the arrays above are the measurement). ``kernel_half``: that kernel's half window
    (samples; its Gaussian's width is a fifth of it), 0 without one.
    """

    t: np.ndarray
    force: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray | None = None
    dropped: int = 0
    measured: 'ContactSamples | None' = None
    kernel_half: int = 0

    def __len__(self) -> int:
        return len(self.t)

    @property
    def as_measured(self) -> 'ContactSamples':
        """The measured samples: ``measured`` when the regressors are kernel outputs, else these."""
        return self if self.measured is None else self.measured

    @classmethod
    def make(cls, t, force, x, xd, xdd=None, measured: 'ContactSamples | None' = None,
             kernel_half: int = 0) -> 'ContactSamples':
        """Checked samples; rows non-finite here (or in ``measured``, which must have the same stamps) are
        dropped from both."""
        arrays = [np.atleast_1d(np.asarray(a, dtype=np.float64)) for a in (t, force, x, xd)]
        if xdd is not None:
            arrays.append(np.atleast_1d(np.asarray(xdd, dtype=np.float64)))
        n = len(arrays[0])
        if measured is not None:
            if measured.measured is not None or len(measured) != n or measured.dropped:
                raise ValueError('measured samples must be plain, checked samples of the same stamps')
            arrays += [measured.force, measured.x, measured.xd] + ([] if measured.xdd is None else [measured.xdd])
        if any(a.ndim != 1 or len(a) != n for a in arrays):
            raise ValueError('t, force, x, xd (and xdd) must be 1-D arrays of equal length, got shapes '
                             + ', '.join(str(a.shape) for a in arrays))
        finite = np.all(np.abs(np.vstack(arrays)) <= MAX_MAGNITUDE, axis=0) if n else np.zeros(0, bool)
        kept = [a[finite] for a in arrays[:4 + (xdd is not None)]]
        if measured is not None and not finite.all():
            measured = measured.slice(finite)
        return cls(kept[0], kept[1], kept[2], kept[3], kept[4] if xdd is not None else None,
                   dropped=int(n - finite.sum()), measured=measured, kernel_half=int(kernel_half))

    def slice(self, sl) -> 'ContactSamples':
        return ContactSamples(self.t[sl], self.force[sl], self.x[sl], self.xd[sl],
                              None if self.xdd is None else self.xdd[sl],
                              measured=None if self.measured is None else self.measured.slice(sl),
                              kernel_half=self.kernel_half)

    @staticmethod
    def concat(parts: list['ContactSamples']) -> 'ContactSamples':
        parts = [p for p in parts if len(p)]
        if not parts:
            return ContactSamples.make([], [], [], [])
        has_acc = all(p.xdd is not None for p in parts)
        measured = (ContactSamples.concat([p.measured for p in parts])
                    if all(p.measured is not None for p in parts) else None)
        return ContactSamples(np.concatenate([p.t for p in parts]), np.concatenate([p.force for p in parts]),
                              np.concatenate([p.x for p in parts]), np.concatenate([p.xd for p in parts]),
                              np.concatenate([p.xdd for p in parts]) if has_acc else None, measured=measured,
                              kernel_half=parts[-1].kernel_half)
