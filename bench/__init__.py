"""Benchmarks of Triage Console: ``python -m bench [--quick] [--only NAME ...] [--runs N]`` (see bench/README.md)."""
