"""Benchmarks: `python -m bench.run [--quick]` (a script, not a test)."""
