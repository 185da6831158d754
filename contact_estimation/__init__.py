"""contact_estimation: environment contact stiffness, damping (and mass) from wrench and motion.

After Agar (2004): the nine single-point estimators (``algorithms.ALGORITHMS``), characterisation fits
(``fit``), preprocessing (``preprocess``), the spec's scenarios (``scenarios``), the online pipeline and
node (``pipeline``, ``node``), offline replay (``offline``) and the comparison report (``compare``).
"""
