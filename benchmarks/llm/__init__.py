"""The apps/llm reports: one card at several batch sizes (llm_report.py), tensor parallelism (tp_report.py)."""
