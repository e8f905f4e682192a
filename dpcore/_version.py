"""The package's version, in a module of its own: the foundations read it without importing
the package's public face (``dpcore/__init__.py``, which imports the experiments)."""

__version__ = "0.1.0"
