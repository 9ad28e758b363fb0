"""Implementations of the ports. Only the composition root and plugins name these."""
