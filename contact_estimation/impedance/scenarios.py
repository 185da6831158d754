"""The synthetic scenarios S1-S7 of wahl_colton.md B8 on the Colton test plant, with their ground truth.

Common set-up [A]: plant.Plant (m = 0.581 kg, b = 11.5 kg/s, F_c = 0.3 N, hardening spring 400/2000/3000 N/m
with kinks at 12 and 20 mm), closed-loop PID tracking, f_s = 4 kHz, T = 100 s with a 2 s raised-cosine
fade-in (dropped by the analysis), 8 uniform segments on [0, 24] mm, measurement model plant.MeasurementModel.
The per-segment truth is the oracle fit of the noise-free signals (equal to the physics except in the
segment [18, 21) mm that holds the 20 mm kink).

  S1  1.5 Hz sine, 12 mm about 12 mm (paper-faithful; m vs k unidentifiable)
  S2  multisine 10 mm @ 1.5 Hz + 1.5 mm @ 6.3 Hz + 0.6 mm @ 13.7 Hz about 12 mm
  S3  S1/S2 analysed with raw central-difference velocity (analysis option, same records)
  S4  the kink segment of S2 (analysis of the same record)
  S5  the S2 stream through the online profiler
  S6  dashpot drop, m_d = 0.5 kg (plant.dashpot_drop)
  S7  S2 with b+ = 11.5, b- = 15 kg/s
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .excitation import multisine
from .plant import MeasurementModel, Plant, track
from .segmented import FitOptions, ImpedanceProfile, fit_segmented, uniform_edges

EDGES = uniform_edges(0.0, 0.024, 8)
KINK_SEGMENT = 6                     # [18, 21) mm holds the 20 mm kink
FADE_IN = 2.0

MOTIONS = {
    'sine': dict(amplitudes=[0.012], frequencies=[1.5]),
    'multisine': dict(amplitudes=[0.010, 0.0015, 0.0006], frequencies=[1.5, 6.3, 13.7]),
}
SCENARIOS = {'S1': ('sine', {}), 'S2': ('multisine', {}), 'S3': ('multisine', {}), 'S4': ('multisine', {}),
             'S5': ('multisine', {}), 'S7': ('multisine', {'damping_neg': 15.0})}


@dataclass
class Record:
    """One simulated experiment: reference, noise-free and measured channels (SI) and its truth."""

    name: str
    t: np.ndarray
    x_ref: np.ndarray
    v_ref: np.ndarray
    a_ref: np.ndarray
    x: np.ndarray
    v: np.ndarray
    a: np.ndarray
    F: np.ndarray
    x_meas: np.ndarray
    a_meas: np.ndarray
    F_meas: np.ndarray
    rate: float
    plant: Plant
    edges: np.ndarray = field(default_factory=lambda: EDGES.copy())
    motion: dict = field(default_factory=dict)

    @property
    def analysed(self) -> np.ndarray:
        """Samples after the fade-in."""
        return self.t >= self.t[0] + FADE_IN

    @cached_property
    def oracle(self) -> ImpedanceProfile:
        """The truth per segment: the fit of the noise-free signals (no identifiability screening)."""
        k = self.analysed
        return fit_segmented(self.x[k], self.v[k], self.a[k], self.F[k], self.edges, FitOptions(check=False))

    def truth(self) -> dict:
        return {'scenario': self.name, 'rate': self.rate, 'motion': self.motion, 'edges': self.edges.tolist(),
                'physical': self.plant.truth(self.edges), 'kink_segment': KINK_SEGMENT,
                'oracle': {n: self.oracle.value(n).tolist()
                           for n in ('mass', 'damping', 'stiffness', 'intercept')}}


def simulate(name: str = 'S2', duration: float = 100.0, rate: float = 4000.0, seed: int = 0,
             closed_loop: bool = True, measurement: MeasurementModel | None = None, **plant_kw) -> Record:
    """Simulate scenario ``name`` (S1-S5, S7; S6 is plant.dashpot_drop)."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)} (S6: plant.dashpot_drop)")
    if not (duration > FADE_IN and rate > 0):
        raise ValueError(f'duration must exceed the {FADE_IN} s fade-in and rate be > 0')
    motion_name, kw = SCENARIOS[name]
    motion = dict(MOTIONS[motion_name], offset=0.012)
    plant = Plant(**{**kw, **plant_kw})
    t = np.arange(int(round(duration * rate))) / rate
    xr, vr, ar = multisine(t, motion['offset'], motion['amplitudes'], motion['frequencies'], fade_in=FADE_IN)
    x, v, a, F = track(plant, t, xr, vr, ar, closed_loop=closed_loop)
    mm = measurement or MeasurementModel(seed=seed)
    xm, am, Fm = mm.apply(rate, x, a, F)
    return Record(name, t, xr, vr, ar, x, v, a, F, xm, am, Fm, rate, plant, motion=motion)
