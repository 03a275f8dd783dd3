"""Our default schedules against torch-spyre's measured times (incumbent.py, pr4302.py)."""
