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
    """

    t: np.ndarray
    force: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray | None = None
    dropped: int = 0

    def __len__(self) -> int:
        return len(self.t)

    @classmethod
    def make(cls, t, force, x, xd, xdd=None) -> 'ContactSamples':
        arrays = [np.atleast_1d(np.asarray(a, dtype=np.float64)) for a in (t, force, x, xd)]
        if xdd is not None:
            arrays.append(np.atleast_1d(np.asarray(xdd, dtype=np.float64)))
        n = len(arrays[0])
        if any(a.ndim != 1 or len(a) != n for a in arrays):
            raise ValueError('t, force, x, xd (and xdd) must be 1-D arrays of equal length, got shapes '
                             + ', '.join(str(a.shape) for a in arrays))
        finite = np.all(np.abs(np.vstack(arrays)) <= MAX_MAGNITUDE, axis=0) if n else np.zeros(0, bool)
        kept = [a[finite] for a in arrays]
        return cls(kept[0], kept[1], kept[2], kept[3], kept[4] if xdd is not None else None,
                   dropped=int(n - finite.sum()))

    def slice(self, sl) -> 'ContactSamples':
        return ContactSamples(self.t[sl], self.force[sl], self.x[sl], self.xd[sl],
                              None if self.xdd is None else self.xdd[sl])

    @staticmethod
    def concat(parts: list['ContactSamples']) -> 'ContactSamples':
        parts = [p for p in parts if len(p)]
        if not parts:
            return ContactSamples.make([], [], [], [])
        has_acc = all(p.xdd is not None for p in parts)
        return ContactSamples(np.concatenate([p.t for p in parts]), np.concatenate([p.force for p in parts]),
                              np.concatenate([p.x for p in parts]), np.concatenate([p.xd for p in parts]),
                              np.concatenate([p.xdd for p in parts]) if has_acc else None)
