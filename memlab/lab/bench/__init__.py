"""Performance benchmarks (printed figures and ratios; never timed tests)."""
