"""T_c, effective mass, projectors (§4), ground activity LCP, contact geometry, the impact_indicator node."""
