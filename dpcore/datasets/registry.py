"""The registry: the bundled files and their checksums, how each dataset is built from its file,
and :func:`load`, cached per process and per data folder.

The folder a loader reads is its ``data_dir`` argument, or else :func:`data_folder` at that call
(``DPCORE_DATA_DIR`` when set, else the bundled files).  The folder is part of every cache key: a
load from one folder is never answered from another's.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import load_iris

from ..numerics import linalg, streams
from ..exceptions import DatasetError, unknown_choice
from ..params import validate
from ..partition import record_split
from .base import DataFile, Dataset, DatasetSpec
from .preprocess import from_dataframe, train_test_rows
from .synthetic import SYNTHETIC_SPECS

__all__ = [
    "DATASETS",
    "data_folder",
    "default_data_dir",
    "get_spec",
    "list_datasets",
    "load",
    "subsample_rows",
    "verify_file",
]


def default_data_dir() -> Path:
    """The bundled files: the repository's ``data/`` in a source checkout (and an editable
    install), ``dpcore/_data`` in an installed wheel (pyproject.toml maps one onto the other)."""
    package = Path(__file__).resolve().parent.parent  # dpcore/
    installed = package / "_data"
    return installed if installed.is_dir() else package.parent / "data"


def data_folder(data_dir: str | os.PathLike | None = None) -> Path:
    """The data folder (the bundled datasets and the shipped results, tunings and references):
    ``data_dir`` when given, else ``DPCORE_DATA_DIR`` as the environment has it at this call,
    else :func:`default_data_dir`.  Nothing keeps a copy: a :class:`~dpcore.experiments.context.Context`
    takes its :attr:`~dpcore.experiments.context.Context.data_dir` from here when it is made.

    >>> data_folder("/tmp/elsewhere")
    PosixPath('/tmp/elsewhere')
    >>> (data_folder() / "MANIFEST.json").is_file()
    True
    """
    if data_dir is not None:
        return Path(data_dir)
    return Path(os.environ.get("DPCORE_DATA_DIR") or default_data_dir())


# --------------------------------------------------------------------------
# files and checksums


#: the largest bundled file is 1.3 MB: a file in a bundled file's place larger than this is refused unread
MAX_DATA_FILE_BYTES = 64 * 2**20


# pure: a file's digest check, keyed by its path, size and modification time
@functools.cache
def _verified(path: str, size: int, mtime_ns: int, expected: str) -> bool:
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if digest != expected:
        raise DatasetError(
            f"data file {Path(path).name} has sha256 {digest[:12]}…, expected {expected[:12]}…: "
            "it was altered or corrupted; restore it with `git checkout -- data/` "
            "(the originals and their checksums are listed in data/README.md)."
        )
    return True


def verify_file(f: DataFile, data_dir: str | os.PathLike | None = None) -> Path:
    """Return the path of a bundled file in ``data_dir`` (default: :func:`data_folder`) after
    checking it exists and its sha256."""
    path = data_folder(data_dir) / f.filename
    if not path.is_file():
        raise DatasetError(
            f"data file {f.filename} is missing from {path.parent}: restore it with "
            "`git checkout -- data/` or copy it from shared/data/ (see data/README.md)."
        )
    st = path.stat()
    if st.st_size > MAX_DATA_FILE_BYTES:  # never read whole to be hashed (a sparse 3 GiB file hung: issue 67)
        raise DatasetError(
            f"data file {f.filename} holds {st.st_size:,} bytes, far more than any bundled file: it was "
            "altered or replaced; restore it with `git checkout -- data/` (see data/README.md).")
    _verified(str(path), st.st_size, st.st_mtime_ns, f.sha256)
    return path


# --------------------------------------------------------------------------
# bundled datasets


_UCI_LICENSE = "CC BY 4.0"


def _bundled(spec_id: str, df: pd.DataFrame, class_names: tuple[str, str] | None = None, **kwargs: Any) -> Dataset:
    """A bundled file through the one preprocessing; ``class_names``: its classes (−1, +1) as a
    reader names them (the guessing note says "always answering “benign (class 2)”", not "not 4")."""
    spec = DATASETS[spec_id]
    ds = from_dataframe(
        df,
        id=spec.id,
        name=spec.name,
        description=spec.description,
        citation=spec.citation,
        license=spec.license,
        source=spec.source,
        **kwargs,
    )
    return ds if class_names is None else dataclasses.replace(ds, class_names=class_names)


def _read(spec_id: str, data_dir: Path, **read_kwargs: Any) -> pd.DataFrame:
    f = DATASETS[spec_id].files[0]
    return pd.read_csv(verify_file(f, data_dir), **read_kwargs)


def _adult(bias: bool, seed: int, test_fraction: float, data_dir: Path) -> Dataset:
    df = _read("adult", data_dir).drop(columns=["split"])
    return _bundled(
        "adult", df, label_column="income", positive_class=">50K", class_names=("income ≤ 50K", "income > 50K"),
        drop=("fnlwgt",), bias=bias, seed=seed, test_fraction=test_fraction,
        notes=(("Rows with '?' were removed upstream (45,222 of 48,842 remain); "
               "fnlwgt (a census sampling weight, not a person's attribute) is dropped; "
               "the official train/test split is replaced by a seeded stratified split."),),
    )


def _bank(bias: bool, seed: int, test_fraction: float, data_dir: Path) -> Dataset:
    df = _read("bank", data_dir)
    return _bundled(
        "bank", df, label_column="y", positive_class="yes", class_names=("did not subscribe", "subscribed"),
        drop=("duration",), bias=bias, seed=seed, test_fraction=test_fraction,
        notes=(("'duration' is dropped: it is only known after the call and leaks the label "
               "(UCI's warning); 'unknown' is kept as its own category; pdays = 999 (never "
               "contacted) is kept as a number."),),
    )


def _kdd(spec_id: str, bias: bool, seed: int, test_fraction: float, data_dir: Path) -> Dataset:
    df = _read(spec_id, data_dir)
    df["label"] = np.where(df["label"] == "normal.", "normal", "attack")
    return _bundled(
        spec_id, df, label_column="label", positive_class="attack", class_names=("normal traffic", "attack"),
        categorical=["protocol_type", "service", "flag"],
        bias=bias, seed=seed, test_fraction=test_fraction,
        notes=(("Binary task: any attack (+1) against normal traffic (−1); constant columns "
               "become all-zero after standardising."),),
    )


def _breast_cancer(bias: bool, seed: int, test_fraction: float, data_dir: Path) -> Dataset:
    df = _read("breast-cancer", data_dir, na_values="?")
    return _bundled(
        "breast-cancer", df, label_column="Class", positive_class="4",
        class_names=("benign (class 2)", "malignant (class 4)"),
        drop=("Sample_code_number",), bias=bias, seed=seed, test_fraction=test_fraction,
        notes=(("Class 4 (malignant) is +1, class 2 (benign) −1; the 16 rows with '?' in "
               "Bare_nuclei are dropped (683 remain)."),),
    )


def _credit(spec_id: str, bias: bool, seed: int, test_fraction: float, data_dir: Path) -> Dataset:
    df = _read(spec_id, data_dir)
    return _bundled(
        spec_id, df, label_column="Class", positive_class="1", class_names=("not fraud (class 0)", "fraud (class 1)"),
        bias=bias, seed=seed, test_fraction=test_fraction,
        notes=(("Fraud (Class 1) is +1; V1–V28 are the PCA components published by the "
               "source; Time and Amount are standardised like the rest."),),
    )


def _iris(bias: bool, seed: int, test_fraction: float, data_dir: Path) -> Dataset:
    raw = load_iris(as_frame=True)
    df = raw.frame.copy()
    df["species"] = np.asarray(raw.target_names)[df.pop("target").to_numpy()]
    return _bundled(
        "iris", df, label_column="species", positive_class="virginica",
        class_names=("setosa or versicolor", "virginica"),
        bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("Binary task: virginica (+1) against setosa and versicolor (−1).",),
    )


_KDD_CITE = (
    "Stolfo, S., Fan, W., Lee, W., Prodromidis, A. & Chan, P. (1999). KDD Cup 1999 Data "
    "[Dataset]. UCI Machine Learning Repository. https://doi.org/10.24432/C51C7N."
)
_CC_CITE = (
    "Dal Pozzolo, A., Caelen, O., Johnson, R. A. & Bontempi, G. (2015). Calibrating "
    "Probability with Undersampling for Unbalanced Classification. IEEE CIDM."
)
_CC_SOURCE = (
    "Kaggle mlg-ulb/creditcardfraud (ULB / Worldline), via a public sample holding all 492 "
    "frauds and 4,920 non-frauds; see data/README.md"
)


def _specs() -> list[DatasetSpec]:
    """The bundled datasets' entries (the synthetic ones: :data:`~.synthetic.SYNTHETIC_SPECS`)."""
    f = DataFile
    return [
        DatasetSpec(
            "adult", "Adult (Census Income)", "classification",
            "1994 US Census extract: predict income > $50K from age, education, work and "
            "family attributes.",
            "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning "
            "Repository. https://doi.org/10.24432/C5XW20.",
            _UCI_LICENSE, "UCI Machine Learning Repository, dataset 2",
            _adult,
            (f("adult.csv.gz", "9f2ed1905aa71757a38845a00a662d135f5e8048bec9826d65b53f39862bc97d"),),
            36177, 9045, 103,
        ),
        DatasetSpec(
            "bank", "Bank Marketing", "classification",
            "Portuguese bank phone campaigns 2008–2010: predict whether the client subscribes "
            "to a term deposit.",
            "Moro, S., Cortez, P. & Rita, P. (2014). A Data-Driven Approach to Predict the "
            "Success of Bank Telemarketing. Decision Support Systems 62:22–31.",
            _UCI_LICENSE, "UCI Machine Learning Repository, dataset 222 (bank-additional-full)",
            _bank,
            (f("bank-additional-full.csv.gz", "93a8c8626236b95797a35a77e5c517103db82a56f93aed7bc33b0693c6fb72ed"),),
            32950, 8238, 63,
        ),
        DatasetSpec(
            "kddcup99", "KDD Cup 1999 (70k sample)", "classification",
            "Network connections from the KDD Cup 1999 intrusion-detection contest: attack "
            "against normal; a 70,000-row stratified sample of the 10% file (seed 0).",
            _KDD_CITE, _UCI_LICENSE, "UCI Machine Learning Repository, dataset 130",
            functools.partial(_kdd, "kddcup99"),
            (f("kddcup99_10percent_sample70k_seed0.csv.gz", "3f8ca7e2a2c0c182ee2fc91400b4a9116b5af7acb8852bf0f62d03bba57546f3"),),
            56000, 14000, 112,
        ),
        DatasetSpec(
            "kddcup99-full", "KDD Cup 1999 (10% file, 494k rows)", "classification",
            "The full '10 percent' KDD Cup 1999 training file: attack against normal.",
            _KDD_CITE, _UCI_LICENSE, "UCI Machine Learning Repository, dataset 130",
            functools.partial(_kdd, "kddcup99-full"),
            (f("kddcup99_10percent.csv.xz", "342dc94d79eca024a5f255dd0d809b995e6384fac248ede7a73f8a8f8596d693"),),
            395216, 98805, 118,
        ),
        DatasetSpec(
            "breast-cancer", "Breast Cancer Wisconsin (Original)", "classification",
            "Wolberg's 699 cytology samples, 9 features scored 1–10: malignant against benign.",
            "Mangasarian, O. L. & Wolberg, W. H. (1990). Cancer diagnosis via linear "
            "programming. SIAM News 23(5):1, 18.",
            _UCI_LICENSE, "UCI Machine Learning Repository, dataset 15",
            _breast_cancer,
            (f("breast-cancer-wisconsin-original.csv.gz", "3f0f2a952534dd7be308b1fc4e814e49c3a42449530245e6b49277933530cc60"),),
            546, 137, 10,
        ),
        DatasetSpec(
            "credit-card", "Credit Card Fraud (984 balanced)", "classification",
            "European card transactions (Sept. 2013): all 492 frauds and 492 random "
            "non-frauds.",
            _CC_CITE, "ODbL 1.0", _CC_SOURCE,
            functools.partial(_credit, "credit-card"),
            (f("creditcard_balanced984_seed0.csv.gz", "60fa73770ae6bb4e294bd21814dcb4f77f4f34956f336ecf3e4a8eb7d1e738b4"),),
            787, 197, 31,
        ),
        DatasetSpec(
            "credit-card-5412", "Credit Card Fraud (5,412 sample)", "classification",
            "European card transactions (Sept. 2013): all 492 frauds and 4,920 random "
            "non-frauds (9.1% fraud).",
            _CC_CITE, "ODbL 1.0", _CC_SOURCE,
            functools.partial(_credit, "credit-card-5412"),
            (f("creditcard_sample5412.csv.gz", "9a9be0687ddb98547814b491533a3c0d49e60a55ceb3b2074f962d6937e38786"),),
            4329, 1083, 31,
        ),
        DatasetSpec(
            "iris", "Iris (virginica vs rest)", "classification",
            "Fisher's 150 iris flowers, 4 measurements: virginica against the other two "
            "species (from scikit-learn).",
            "Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. "
            "Annals of Eugenics 7(2):179–188.",
            "CC BY 4.0", "scikit-learn sklearn.datasets.load_iris",
            _iris, (), 120, 30, 5,
        ),
    ]


DATASETS: dict[str, DatasetSpec] = {s.id: s for s in (*_specs(), *SYNTHETIC_SPECS.values())}


def list_datasets() -> list[DatasetSpec]:
    return list(DATASETS.values())


def get_spec(dataset_id: str) -> DatasetSpec:
    try:
        return DATASETS[dataset_id]
    except KeyError:
        raise DatasetError(unknown_choice("dataset", dataset_id, DATASETS)) from None


def load(
    dataset_id: str,
    *,
    bias: bool = True,
    seed: int = 0,
    test_fraction: float = 0.2,
    n: int = 10_000,
    d: int = 14,
    noise: float = 0.1,
    n_test: int = 10_000,
    subsample: int | None = None,
    data_dir: str | os.PathLike | None = None,
) -> Dataset:
    """Load a registered dataset, preprocessed; cached per process.

    ``seed`` drives the train/test split (and the synthetic draw); ``n``,
    ``d``, ``noise`` and ``n_test`` apply to the synthetic generators only.
    ``subsample`` (bundled data only) keeps that many training rows, drawn
    without replacement by ``seed`` after preprocessing; the test split is kept
    whole.  Experiments use it for scaling in n and for quick test runs.
    ``data_dir`` is the folder of the bundled files (default: :func:`data_folder`);
    the cache is kept per folder.
    """
    spec = get_spec(dataset_id)
    seed = validate("seed", seed, "load")
    if spec.synthetic:
        return _load_synthetic(spec.id, int(n), int(d), float(noise), seed, int(n_test), bool(bias))
    test_fraction = validate("test_fraction", test_fraction, "load")
    folder = str(data_folder(data_dir).resolve())
    if subsample is not None:
        subsample = validate("n", subsample, "load")
        return _subsampled(spec.id, bool(bias), seed, float(test_fraction), int(subsample), folder)
    return _load_bundled(spec.id, bool(bias), seed, float(test_fraction), folder)


def subsample_rows(n_full: int, n: int, seed: int) -> np.ndarray:
    """The training rows a subsample of ``n`` keeps (``RunSpec.n`` on bundled data): a seeded
    choice of positions, whatever the records."""
    return np.sort(np.random.default_rng([seed, streams.SUBSAMPLE]).choice(n_full, size=n, replace=False))


@record_split("subsample (RunSpec.n)", record_independent=True,
              certifies="a guarantee about the subsample as the dataset: which rows it keeps does not read them")
def _subsample_parts(X, y, seed):
    return [subsample_rows(len(y), len(y) // 2, seed)]


@record_split("train/test split", record_independent=False,
              certifies=("nothing: the held-out rows are chosen (stratified on the label) before any mechanism "
                         "runs, and every guarantee is about the training split as given, the papers' convention"))
def _train_test_parts(X, y, seed):
    return list(train_test_rows(len(y), np.asarray(y), "classification", 0.2, seed))


# pure: a bundled dataset (its bytes fixed by the registry's checksums) from its folder and settings
@functools.lru_cache(maxsize=16)
def _subsampled(dataset_id: str, bias: bool, seed: int, test_fraction: float, n: int, folder: str) -> Dataset:
    full = _load_bundled(dataset_id, bias, seed, test_fraction, folder)
    if n > full.n:
        raise DatasetError(
            f"{dataset_id} has {full.n} training rows; a subsample of n = {n} is not possible "
            f"(choose n ≤ {full.n})"
        )
    if n == full.n:
        return full
    rows = subsample_rows(full.n, n, seed)
    X, y = full.X_train[rows], full.y_train[rows]
    y.setflags(write=False)
    linalg.share(X)
    return dataclasses.replace(
        full, X_train=X, y_train=y,
        notes=full.notes + (f"training split subsampled to n = {n} rows (seed {seed})",),
    )


# pure: a bundled dataset (its bytes fixed by the registry's checksums) from its folder and settings
@functools.lru_cache(maxsize=16)
def _load_bundled(dataset_id: str, bias: bool, seed: int, test_fraction: float, folder: str) -> Dataset:
    return DATASETS[dataset_id].builder(bias=bias, seed=seed, test_fraction=test_fraction, data_dir=Path(folder))


# pure: a seeded generator's output from its arguments
@functools.lru_cache(maxsize=8)
def _load_synthetic(
    dataset_id: str, n: int, d: int, noise: float, seed: int, n_test: int, bias: bool
) -> Dataset:
    return DATASETS[dataset_id].builder(n=n, d=d, noise=noise, seed=seed, n_test=n_test, bias=bias)
