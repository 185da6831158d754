"""Anticipatory posture evaluation (§5.3), vectorised over candidates, and the posture_evaluator node."""
