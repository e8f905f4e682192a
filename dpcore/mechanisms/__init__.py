"""Mechanism registry; importing this package registers every mechanism module."""

from .base import REGISTRY, Mechanism, MechanismOutput, Problem, get_mechanism, register, short_name, validate_options
# Importing registers; this order (the teaching order) is the order users see everywhere.
from . import baseline, output, objective, gradient, input, local, distributed  # noqa: F401, I001  # isort: skip

__all__ = ["REGISTRY", "Mechanism", "MechanismOutput", "Problem", "get_mechanism", "register", "short_name", "validate_options"]
