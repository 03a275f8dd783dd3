"""Hand schedules, our Spyre autoscheduler and Halide's stock ones on Spyre (autoschedule_experiments.py)."""
