"""Multi-point contact identification from geometry (Agar 2004 §1.5, §3, §4.7) and peg/hole contact
geometry (Wahl & Colton Part A). In progress (issue 9)."""
