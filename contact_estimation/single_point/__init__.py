"""Single-point contact estimation (Agar 2004): F = k x + b xdot (+ m xddot) along one contact normal.

The nine estimators (``algorithms.ALGORITHMS``: RLS, ILS, IA, Kalman, GLS, ETFE, OEM, EEM, GMLE), their
shared estimate and verdict (``estimate``), the online pipeline and ROS node (``pipeline``, ``node``), the
offline node for run-bag (``offline``), characterisation fits (``fit``), preprocessing (``preprocess``),
the spec's scenarios and the bag simulator (``scenarios``, ``simulate``) and the comparison report
(``compare``).
"""
