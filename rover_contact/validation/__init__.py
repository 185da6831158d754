"""Validation: contact laws (§6.2), impact simulations (§6.3, T9/T10/T15), rover-approach bags, rover-sweep."""
