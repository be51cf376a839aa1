"""Fused array kernels behind the ops: each holds a NumPy version and a CuPy version of the same computation."""
