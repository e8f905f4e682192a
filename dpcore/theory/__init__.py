"""Theory: the published formulas and the bounds catalog, apart from any experiment.

``formulas`` holds one function per published formula (a noise scale, a privacy
parameter, a rate); the mechanisms' published calibrations and the catalog's
rows both call them, so each is written once.  ``catalog`` holds the rows of the
bounds tables and evaluates them at a setting; it never trains a model (the
measured-vs-predicted comparison lives in :mod:`dpcore.experiments.studies`
and only reads the catalog).
"""
