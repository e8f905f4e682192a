"""Datasets: the bundled files, the synthetic generators, and user CSVs.

Every dataset goes through one preprocessing pipeline (SPEC §1, §6):

1. drop identifier / leaking columns named by the dataset;
2. missing values: ``missing="drop"`` drops the row (default), ``"impute"``
   fills numerics with the training median and gives categoricals a
   ``"missing"`` level;
3. labels: binary tasks map the positive class to +1 and everything else to
   −1; regression targets are scaled to [−1, 1] with the training range;
4. a seeded train/test split, stratified on the label for classification;
5. categoricals one-hot encoded, numerics standardised, both with statistics of
   the training split only (treated as public, as in the papers; a fully
   private pipeline would use public bounds instead);
6. an optional bias feature (constant 1) appended;
7. rows outside the unit ball scaled onto it, so ``‖x‖₂ ≤ 1`` holds for every
   row, the bias included.

Loaded datasets are cached per process and per data folder; their arrays are read-only.

The package by role: :mod:`~.base` (the :class:`Dataset` and :class:`DatasetSpec` types),
:mod:`~.preprocess` (the pipeline above, :func:`from_dataframe`), :mod:`~.registry` (the
bundled files, their checksums, :data:`DATASETS` and :func:`load`), :mod:`~.upload` (user CSVs,
:func:`from_csv`) and :mod:`~.synthetic` (the generators).  Everything is imported from here.

:data:`DATA_DIR` is the folder the loaders read when they are given none; it is looked up at
each call, so reassigning it here redirects them (and their caches are kept per folder).
"""

from ..exceptions import DatasetError
from .base import DataFile, Dataset, DatasetSpec
from .preprocess import (
    MAX_ABS_VALUE,
    MAX_CATEGORIES,
    MAX_CELL_CHARS,
    MAX_ENCODED_COLUMNS,
    MAX_MATRIX_BYTES,
    NUMERIC_SHARE,
    from_dataframe,
    normalize_rows,
)
from .registry import (
    BUNDLED_DIR,
    DATASETS,
    data_folder,
    default_data_dir,
    get_spec,
    list_datasets,
    load,
    subsample_rows,
    verify_file,
)
from .synthetic import SYNTHETIC_SPECS, generate_synthetic
from .upload import (
    CSV_MISSING,
    MAX_UPLOAD_COLUMNS,
    csv_classes,
    csv_preview,
    decode_csv,
    from_csv,
)

#: the folder of the bundled files that :func:`load` and :func:`verify_file` read when not given
#: a ``data_dir`` (``DPCORE_DATA_DIR`` when set); read at each call, so reassigning it redirects them
DATA_DIR = BUNDLED_DIR

__all__ = [
    "BUNDLED_DIR",
    "CSV_MISSING",
    "DATASETS",
    "DATA_DIR",
    "MAX_ABS_VALUE",
    "MAX_CATEGORIES",
    "MAX_CELL_CHARS",
    "MAX_ENCODED_COLUMNS",
    "MAX_MATRIX_BYTES",
    "MAX_UPLOAD_COLUMNS",
    "NUMERIC_SHARE",
    "SYNTHETIC_SPECS",
    "DataFile",
    "Dataset",
    "DatasetError",
    "DatasetSpec",
    "csv_classes",
    "csv_preview",
    "data_folder",
    "decode_csv",
    "default_data_dir",
    "from_csv",
    "from_dataframe",
    "generate_synthetic",
    "get_spec",
    "list_datasets",
    "load",
    "normalize_rows",
    "subsample_rows",
    "verify_file",
]
