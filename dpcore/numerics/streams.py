"""Named random streams.

Every seeded draw in the package comes from ``numpy.random.default_rng([seed, STREAM])``
with one of these stream numbers, so that independent uses of one seed never share
draws and a reader can see which use a draw belongs to.  ``seed`` itself always means
the user's seed (``RunSpec.seed``; run r of a batch uses ``seed + r``) or, for data,
the dataset's own seed.  The numbers are part of the results: changing one changes
every number that depends on it.
"""

#: a run's noise, mini-batches and every other draw of its mechanism (``BatchRNG``'s default)
RUN = 0
#: the MLP's random starting point (``Problem.start``), apart from the run's noise
MODEL_INIT = 1
#: a synthetic dataset (its true parameter and records)
SYNTHETIC_DATA = 0x5EED
#: a seeded subsample of a dataset's training rows (``RunSpec.n`` on bundled data)
SUBSAMPLE = 7013
#: random client sizes of a federation (``partition.client_sizes(mode="random")``)
CLIENT_SIZES = 404
#: which records each client holds (``partition.partition``)
CLIENT_SPLIT = 405
#: the white-box audit's probe direction
WHITE_BOX = 0xB0C5
#: the audit's subsample of the training rows, and its random canary
AUDIT_SUBSAMPLE, AUDIT_CANARY = 0xA0D1, 0xA0D2
#: one-run audits (``audit.one_run``): which canaries go in, and the run's own noise
ONE_RUN_MEMBERS, ONE_RUN_NOISE = 0xA0D3, 0xA0D4
#: the simulated audits of the sampled-Gaussian family fit (``audit.bounds.sampled_gaussian_bound``)
AUDIT_SIMULATION = 0xA0D5
#: tuning: the validation split of the training rows, and the private choice among candidates
TUNE_SPLIT, TUNE_SELECT = 0x7E57, 0x7E58
#: tuning: first word of a candidate's and of the final run's ``RunSpec.stream`` (every release
#: of a search draws its own noise)
TUNE_CANDIDATE, TUNE_FINAL = 0x7E59, 0x7E5A
#: input and local perturbation's choice of training settings on their own released records
#: (``mechanisms.released``): the split of the released records and the tuned SGD's batches
RELEASE_CHOICE = 0x7E5B
