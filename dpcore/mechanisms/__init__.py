"""Mechanism registry; importing this package registers every mechanism module."""

from .base import REGISTRY, Mechanism, MechanismOutput, Problem, get_mechanism, register
from . import baseline, distributed, gradient, input, local, objective, output  # noqa: F401  (registers)

__all__ = ["REGISTRY", "Mechanism", "MechanismOutput", "Problem", "get_mechanism", "register"]
