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

The loaders read :func:`data_folder` when they are given no ``data_dir`` (``DPCORE_DATA_DIR`` when
set, looked up at each call; their caches are kept per folder).
"""

from ..exceptions import DatasetError, moved_attributes
from .base import DataFile, Dataset, DatasetSpec
from .contract import CONTRACT, check_dataset
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

#: ``DATA_DIR`` and ``BUNDLED_DIR`` were module attributes in 0.1.0: reading one still works, warns
#: and gives :func:`data_folder`'s answer (reassigning one redirects nothing: pass ``data_dir=``)
__getattr__ = moved_attributes(__name__, {name: ("dpcore.datasets.data_folder()", data_folder)
                                          for name in ("DATA_DIR", "BUNDLED_DIR")})

__all__ = [
    "CONTRACT",
    "CSV_MISSING",
    "DATASETS",
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
    "check_dataset",
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
