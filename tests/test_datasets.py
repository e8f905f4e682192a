"""Datasets: checksums, shapes, preprocessing contract, user CSVs."""

import codecs
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore import datasets as D
from dpcore.exceptions import DatasetError

BUNDLED = [s.id for s in D.list_datasets() if not s.synthetic]


@pytest.mark.parametrize("dataset_id", BUNDLED)
def test_bundled_dataset_contract(dataset_id):
    spec = D.DATASETS[dataset_id]
    ds = D.load(dataset_id)
    # documented shapes
    assert (ds.n, ds.n_test, ds.d) == (spec.n_train, spec.n_test, spec.d)
    assert len(ds.feature_names) == ds.d
    for X, y in ((ds.X_train, ds.y_train), (ds.X_test, ds.y_test)):
        assert X.dtype == np.float64 and np.isfinite(X).all()
        assert np.linalg.norm(X, axis=1).max() <= 1 + 1e-12
        assert set(np.unique(y)) == {-1.0, 1.0}
    assert ds.feature_names[-1] == "bias"
    assert ds.citation and ds.license and ds.description
    # stratified split: class shares agree to within one row's worth
    assert abs(np.mean(ds.y_train > 0) - np.mean(ds.y_test > 0)) < 2.0 / ds.n_test + 1e-9


def test_documented_raw_counts():
    # data/README.md: breast cancer has 699 rows, 16 with '?', so 683 remain.
    ds = D.load("breast-cancer")
    assert ds.n + ds.n_test == 683
    assert int((ds.y_train > 0).sum() + (ds.y_test > 0).sum()) == 239  # malignant among the 683
    adult = D.load("adult")
    assert adult.n + adult.n_test == 45222
    assert int((adult.y_train > 0).sum() + (adult.y_test > 0).sum()) == 11208
    iris = D.load("iris")
    assert int((iris.y_train > 0).sum() + (iris.y_test > 0).sum()) == 50


def test_cached_load_is_fast_and_read_only():
    import time

    D.load("adult")
    t = time.perf_counter()
    ds = D.load("adult")
    assert time.perf_counter() - t < 0.05
    with pytest.raises(ValueError):
        ds.X_train[0, 0] = 1.0


def test_split_seed_changes_split_but_not_shapes():
    a = D.load("breast-cancer", seed=0)
    b = D.load("breast-cancer", seed=1)
    assert a.n == b.n and not np.array_equal(a.y_train, b.y_train)


def test_bias_option():
    ds = D.load("iris", bias=False)
    assert ds.d == 4 and "bias" not in ds.feature_names


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_synthetic_generators(task):
    ds = D.load(f"synthetic-{task}", n=500, d=7, noise=0.2, seed=3)
    assert (ds.n, ds.d) == (500, 8)
    assert np.linalg.norm(ds.X_train, axis=1).max() <= 1 + 1e-12
    if task == "classification":
        assert set(np.unique(ds.y_train)) == {-1.0, 1.0}
    else:
        assert np.abs(ds.y_train).max() <= 1.0
    again = D.generate_synthetic(task, 500, 7, 0.2, 3, 10_000, True)
    np.testing.assert_array_equal(again.X_train, ds.X_train)


def test_synthetic_scales_to_two_to_the_21():
    import time

    t = time.perf_counter()
    ds = D.generate_synthetic("regression", 2**21, 14, 0.1, 0, 1000, True)
    assert ds.n == 2**21 and ds.d == 15
    assert time.perf_counter() - t < 30  # generous: a guard against accidental Python loops


def test_missing_file_message(tmp_path, monkeypatch):
    with pytest.raises(DatasetError, match="missing"):
        D.verify_file(D.DATASETS["breast-cancer"].files[0], data_dir=tmp_path)


def test_altered_file_message(tmp_path, monkeypatch):
    f = D.DATASETS["breast-cancer"].files[0]
    shutil.copy(D.data_folder() / f.filename, tmp_path / f.filename)
    with open(tmp_path / f.filename, "ab") as fh:
        fh.write(b"x")
    with pytest.raises(DatasetError, match="altered or corrupted"):
        D.verify_file(f, data_dir=tmp_path)


def test_unknown_dataset():
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        D.load("nope")


# -- user data -------------------------------------------------------------

GOOD = "age,colour,score,label\n" + "30,red,1.5,yes\n40,blue,2.5,no\n50,red,3.5,yes\n20,green,0.5,no\n" * 5


def test_from_csv_roundtrip(tmp_path):
    p = tmp_path / "good.csv"
    p.write_text(GOOD)
    ds = D.from_csv(p, "label", "yes", test_fraction=0.25)
    assert ds.n + ds.n_test == 20
    assert ds.feature_names == ("age", "score", "colour_blue", "colour_green", "colour_red", "bias")
    assert np.linalg.norm(ds.X_train, axis=1).max() <= 1 + 1e-12
    assert ds.positive_class == "yes"


def test_from_csv_bytes_and_regression():
    text = "a,b,y\n" + "".join(f"{i},{i % 3},{2 * i + 1}\n" for i in range(30))
    ds = D.from_csv(text.encode(), "y", task="regression")
    assert ds.task == "regression" and np.abs(ds.y_train).max() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "content, kwargs, message",
    [
        ("", {}, "empty"),
        ("age,label\n", {}, "no data rows"),
        ("age,label\n?,yes\n,no\n", {}, "no rows left after dropping"),
        ("age,label\n1,yes\n2,yes\n3,yes\n", {}, "only one class"),
        ("age,label\n1,yes\n2,no\n", {"label_column": "target"}, "label column 'target' is not in the data"),
        ("age,label\n" + "1,yes\n2,no\n" * 10 + "abc,no\n", {}, "column 'age' is numeric but row 21 holds the non-numeric value 'abc'"),
    ],
    ids=["empty", "header-only", "all-missing", "one-class", "unknown-label", "non-numeric"],
)
def test_bad_csvs_get_clear_errors(tmp_path, content, kwargs, message):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    kwargs = {"label_column": "label", **kwargs}
    with pytest.raises(DatasetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        D.from_csv(p, **kwargs)


def test_unknown_positive_class_and_multiclass():
    df = pd.DataFrame({"x": range(12), "y": ["a", "b", "c"] * 4})
    with pytest.raises(DatasetError, match="choose the positive class"):
        D.from_dataframe(df, "y")
    with pytest.raises(DatasetError, match="positive class 'z' does not occur"):
        D.from_dataframe(df, "y", "z")
    ds = D.from_dataframe(df, "y", "c", test_fraction=0.25)
    assert ds.n_test == 3


def test_impute_keeps_rows():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0] * 5, "c": ["u", None, "v", "u"] * 5, "y": [0, 1] * 10})
    ds = D.from_dataframe(df, "y", "1", missing="impute", test_fraction=0.25)
    assert ds.n + ds.n_test == 20
    assert "c_missing" in ds.feature_names
    dropped = D.from_dataframe(df, "y", "1", test_fraction=0.25)
    assert dropped.n + dropped.n_test == 15


def _csv(header, rows):
    return (header + "\n" + "".join(r + "\n" for r in rows)).encode()


def test_an_upload_is_read_as_the_user_wrote_it():
    from dpcore import datasets as D
    from dpcore.exceptions import DatasetError
    n = 60
    # spaces after the commas, in the header and the values
    ds = D.from_csv(_csv("a, b, y", [f"{i}, {i % 3}, {'p' if i % 2 else 'q'}" for i in range(n)]), "y", "p")
    assert ds.feature_names[:2] == ("a", "b")
    # NA, None and null are values (a class called "NA" stays), only empty cells are missing
    ds = D.from_csv(_csv("a,c,y", [f"{i},{['NA', 'None', 'null'][i % 3]},{'NA' if i % 2 else 'B'}"
                                   for i in range(n)]), "y", "NA")
    assert {"c_NA", "c_None", "c_null"} <= set(ds.feature_names)
    assert ds.n + ds.X_test.shape[0] == n  # no row dropped as missing
    # numbers with decimal commas are read as numbers, and the notes say so
    ds = D.from_csv(_csv("a,b,y", [f'{i},"{i % 7},{i % 10}",{"p" if i % 2 else "q"}' for i in range(n)]), "y", "p")
    assert ds.d == 3 and "decimal commas" in ds.notes[0]  # a, b, bias: not dozens of one-hot columns
    # a column name given twice is refused with its name (a copied label would be a perfect feature)
    with pytest.raises(DatasetError, match="'y' appear more than once"):
        D.from_csv(_csv("a,y,y", [f"{i},{'p' if i % 2 else 'q'},{'p' if i % 2 else 'q'}" for i in range(n)]), "y", "p")


def test_a_label_left_empty_after_the_preview_rows_keeps_its_classes():
    """The Datasets view offers classes from its preview ("1"); a row far below with an empty
    label must not turn the column into floats ("1.0") and the upload into a refusal."""
    from dpcore import datasets as D
    rows = [f"{i},{i % 2}" for i in range(300)]
    rows[250] = "250,"
    raw = _csv("a,y", rows)
    preview = D.csv_preview(raw)
    classes = sorted(preview["y"].dropna().str.strip().unique())
    assert classes == ["0", "1"]
    ds = D.from_csv(raw, "y", classes[1])
    assert ds.n + ds.X_test.shape[0] == 299 and "1 row with a missing value was dropped." in ds.notes


# -- the data folder (issue 42) ----------------------------------------------------------------


def test_loads_are_cached_per_data_folder(tmp_path, monkeypatch):
    """The folder is part of every loader's cache key: a load from another folder (given, or
    ``DPCORE_DATA_DIR`` set, read at each call) is never answered from the bundled folder's cache."""
    f = D.DATASETS["breast-cancer"].files[0]
    bundled, sub = D.load("breast-cancer"), D.load("breast-cancer", subsample=100)  # cached now
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(D.data_folder() / f.filename, copy / f.filename)
    again = D.load("breast-cancer", data_dir=copy)
    assert again is not bundled
    np.testing.assert_array_equal(again.X_train, bundled.X_train)
    assert D.load("breast-cancer", data_dir=D.data_folder()) is bundled  # the same folder: the same entry
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="missing"):
        D.load("breast-cancer", data_dir=empty)
    monkeypatch.setenv("DPCORE_DATA_DIR", str(empty))  # the environment, read at each call
    with pytest.raises(DatasetError, match="missing"):
        D.load("breast-cancer")
    with pytest.raises(DatasetError, match="missing"):
        D.load("breast-cancer", subsample=100)
    monkeypatch.undo()
    assert D.load("breast-cancer") is bundled and D.load("breast-cancer", subsample=100) is sub


# -- uploads read as the file says (issue 43) ----------------------------------------------------


def test_a_header_with_too_many_columns_is_refused_before_the_body_is_parsed(monkeypatch):
    """100,000 columns (about 10 MB, under the upload limit) are refused from the header row: the
    body is never parsed (the parser raises if called, and the body itself would not parse)."""
    header = ",".join(f"c{i}" for i in range(100_000)) + ",y\n"
    body = "".join(",".join("1" for _ in range(100)) + "\n" for _ in range(50)) + '"' + "x" * 200_000 + "\n"
    raw = (header + body).encode()

    def parse(*args, **kwargs):
        raise AssertionError("the body was parsed")

    monkeypatch.setattr(pd, "read_csv", parse)
    limit = r"the header row has 100,001 columns; an upload may have at most 5,001 \(the label and 5,000 features\)"
    with pytest.raises(DatasetError, match=limit):
        D.from_csv(raw, "y", "1")
    with pytest.raises(DatasetError, match=limit):
        D.csv_preview(raw)  # what the Datasets view reads first
    assert D.MAX_UPLOAD_COLUMNS == D.MAX_ENCODED_COLUMNS + 1


ACCENTS = "a,nom,y\n" + "".join(f"{i},{'é' if i % 3 else 'ü'},{'p' if i % 2 else 'q'}\n" for i in range(60))


@pytest.mark.parametrize("encoding, note", [
    ("utf-8-sig", None), ("utf-16", None), ("utf-32", None),  # marked: nothing to say
    ("utf-16-le", "read as UTF-16 little-endian"), ("utf-16-be", "read as UTF-16 big-endian"),
    ("cp1252", "not UTF-8 (at byte 10): read as Windows-1252"),
])
def test_an_upload_is_read_in_its_encoding(encoding, note):
    """UTF-8 with or without a byte-order mark, UTF-16 with or without one (without, it was read
    as UTF-8 and refused as "only one class"), Windows-1252: the same dataset, and the notes name
    an encoding that was inferred."""
    ref = D.from_csv(ACCENTS.encode(), "y", "p")
    raw = ACCENTS.encode(encoding)
    assert list(D.csv_preview(raw).columns) == ["a", "nom", "y"]
    ds = D.from_csv(raw, "y", "p")
    assert ds.feature_names == ref.feature_names == ("a", "nom_é", "nom_ü", "bias")
    for a, b in ((ds.X_train, ref.X_train), (ds.y_train, ref.y_train), (ds.X_test, ref.X_test)):
        np.testing.assert_array_equal(a, b)
    if note is None:
        assert ds.notes == ref.notes
    else:
        assert note in ds.notes[0] and ds.notes[1:] == ref.notes


def test_an_upload_that_is_not_text_in_a_known_encoding_is_refused_in_one_line():
    # bytes Windows-1252 leaves undefined: Latin-1, said
    ds = D.from_csv(b"a,c,y\n" + b"".join(b"%d,\x8d%d,%s\n" % (i, i % 2, b"pq"[i % 2:][:1]) for i in range(40)), "y", "p")
    assert "read as Latin-1" in ds.notes[0]
    for raw, message in [
        (b"PK\x03\x04\x14\x00\x06\x00binary", r"holds bytes of value zero \(NUL\) and is not UTF-16: it is not a text CSV"),
        (codecs.BOM_UTF16_LE + "a,y\n1,p\n".encode("utf-16-le") + b"x", "UTF-16 byte-order mark but is not valid"),
        ("a,y\n1,p\n".encode("utf-16-le")[:-1], "UTF-16 little-endian text without a byte-order mark but is not"),
    ]:
        with pytest.raises(DatasetError, match=message) as info:
            D.from_csv(raw, "y", "p")
        assert "\n" not in str(info.value) and "CSV UTF-8" in str(info.value)


@pytest.mark.parametrize("rows", [["1,2,yes", "3,4,no"], ["1,2,yes", "3,4,no", "5,6,no", "7,8,no"]])
def test_an_upload_with_a_class_of_one_row_says_what_to_add_not_scikit_learns_words(rows):
    """A lecturer's walk: a 2-row CSV showed scikit-learn's "The least populated class in y has only 1
    member"; the refusal now says which split cannot be made and what to add (a class of 2 rows splits)."""
    with pytest.raises(DatasetError, match="the smaller class has 1 row, and each needs at least 2") as info:
        D.from_csv(("a,b,y\n" + "\n".join(rows) + "\n").encode(), "y", "yes")
    assert "least populated" not in str(info.value)
    more = [f"{i},{i % 5},{'yes' if i % 2 else 'no'}" for i in range(20)]
    D.from_csv(("a,b,y\n" + "\n".join(rows + more) + "\n").encode(), "y", "yes")  # the truth passes


def test_spreadsheet_trailing_commas_are_dropped_with_a_note():
    """Every line ending in ',' (an empty unnamed last column) was refused with advice naming
    missing='impute', which the Datasets view does not offer; commas on the data lines only
    shifted every column by one.  Now the empty unnamed columns go, and the notes say so."""
    rows = [f"{i},{i % 3},{'p' if i % 2 else 'q'}" for i in range(60)]
    ref = D.from_csv(_csv("a,b,y", rows), "y", "p")
    for raw in (_csv("a,b,y,", [r + "," for r in rows]), _csv("a,b,y", [r + "," for r in rows]),
                _csv("a,b,y,,", [r + ",," for r in rows]), _csv("a,b,y", rows[:5] + [r + "," for r in rows[5:]])):
        assert list(D.csv_preview(raw).columns) == ["a", "b", "y"]  # the view's default label: the last, y
        ds = D.from_csv(raw, "y", "p")
        assert ds.feature_names == ref.feature_names
        np.testing.assert_array_equal(ds.X_train, ref.X_train)
        assert "trailing commas" in ds.notes[0] and ds.notes[1:] == ref.notes
    # a value after the header's last column is not dropped: refused with its row
    with pytest.raises(DatasetError, match=r"row 3 has a value \('x'\) after the last of the header's 3 columns"):
        D.from_csv(_csv("a,b,y", rows[:2] + [rows[2] + ",x"] + rows[3:]), "y", "p")


def test_every_class_of_the_label_is_offered_not_only_the_previews():
    """The positive class was offered from a 200-row preview: a class first seen in row 251 could
    not be chosen.  csv_classes scans the whole label column, as from_csv reads it."""
    rows = [f"{i},{'p' if i % 2 else 'q'}" for i in range(300)]
    rows[250], rows[280] = "250, r ", "280,r"
    raw = _csv("a,y", rows)
    assert sorted(D.csv_preview(raw)["y"].dropna().str.strip().unique()) == ["p", "q"]  # the preview's rows
    assert D.csv_classes(raw, "y") == ["p", "q", "r"]
    assert D.from_csv(raw, "y", "r").positive_class == "r"


def test_the_datasets_view_offers_every_class_and_the_last_named_column():
    from streamlit.testing.v1 import AppTest

    rows = [f"{i},{i % 3},{'p' if i % 2 else 'q'}," for i in range(300)]
    rows[250], rows[280] = "250,1,r,", "280,2,r,"
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "datasets.py"),
                           default_timeout=120).run()
    at.file_uploader(key="upload_file").set_value(("mine.csv", _csv("a,b,y,", rows), "text/csv")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="upload_label").value == "y"
    assert at.selectbox(key="upload_positive").options == ["p", "q", "r"]
    at.selectbox(key="upload_positive").set_value("r").run()
    at.button(key="upload_add").click().run()
    assert not at.exception and not at.error
    ds = at.session_state["user_datasets"]["mine"]
    assert ds.positive_class == "r" and ds.d == 3
    assert any("trailing commas" in c.value for c in at.caption)
