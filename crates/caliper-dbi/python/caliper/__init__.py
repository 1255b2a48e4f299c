"""Caliper's Python tools. ``caliper.dbi`` scripts cali-run's dynamic
binary instrumentation engine."""
