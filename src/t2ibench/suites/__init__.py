"""Benchmarks as data: prompt suites defined in YAML/JSONL and their generators."""
