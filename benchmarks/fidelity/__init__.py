"""Simulator fidelity against Spyre card timings: the row mapping, the harness and the calibration."""
