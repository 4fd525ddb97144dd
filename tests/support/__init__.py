"""Utilities shared by the test suite and the benchmarks (store generators, ...)."""
