"""Offline replay: estimator nodes run over a recorded bag in bag time, as fast as possible.

- ``replay``: the engine (timer ticks in bag time, messages delivered in log-time order, outputs written with
  the tick as log time; the bag streamed in chunks) and the offline node protocol;
- ``node``: ``OfflineNodeBase``, what every package's offline node repeats (parameters, period, topics).

The command that drives it (``contact-dynamics run-bag``) lives in ``cli.run``.
"""
