"""The collectives among simulated cards (collectives_report.py runs spyre_collectives_bench)."""
