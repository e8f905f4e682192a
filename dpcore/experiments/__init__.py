"""Experiments: everything that runs mechanisms on data and measures them.

``run`` (one :class:`~dpcore.experiments.run.RunSpec`, R batched repeats) is the
unit; ``grid`` runs many specs into one tidy table (through the ``sweep``
back end: local processes, Dask, an on-disk result cache); ``studies`` and
``presets`` only generate specs for it and shape its table.  Nothing below this
package imports it; above it, :mod:`dpcore.audit` measures a mechanism's privacy
through it (this package never imports the audit).
"""
