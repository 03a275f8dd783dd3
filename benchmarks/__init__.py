"""The project's benchmark and report scripts, run as modules from the repository root
(`python3 -m benchmarks.<dir>.<script>`, benchmarks/README.md); spyre_bench holds what they share."""
