"""The manifest of shipped files (dpcore/shipped.py): it lists every shipped file as it is, and a
file that is not the one listed is refused by every read (tests/test_shipped_files.py forges each kind)."""

from __future__ import annotations

import shutil

import pytest

from dpcore import shipped


def test_the_manifest_lists_every_shipped_file_as_it_is():
    """Fails after a shipped file changed by any route but the commands that ship files (which list
    what they write): run the command that makes it, or `git checkout` the file."""
    assert shipped.manifest_problems() == []
    assert len(shipped.shipped_files()) >= 60  # every preset twice, Compare's first preset, tunings, a reference


def test_every_shipped_kind_is_declared_once_with_a_cap_above_its_largest_file():
    for rel in shipped.shipped_files():
        kind = shipped.KINDS[shipped.kind_of(rel)]
        assert shipped.path_of(rel).stat().st_size <= kind.max_bytes / 2, f"{rel}: near its kind's size cap"


def test_a_file_listed_by_record_reads_and_a_changed_byte_is_refused(tmp_path):
    src = shipped.path_of("tuned/adult-logreg.json")
    (tmp_path / "tuned").mkdir()
    copy = tmp_path / "tuned" / "adult-logreg.json"
    shutil.copy(src, copy)
    with pytest.raises(shipped.ShippedFileError, match=r"not in the manifest|manifest \(.*\) is missing"):
        shipped.read_bytes("tuned/adult-logreg.json", tmp_path)
    assert shipped.record([copy], tmp_path) == ["tuned/adult-logreg.json"]
    assert shipped.read_bytes("tuned/adult-logreg.json", tmp_path) == src.read_bytes()
    copy.write_bytes(src.read_bytes().replace(b"0.7", b"0.9", 1))
    with pytest.raises(shipped.ShippedFileError, match="not the file that was shipped"):
        shipped.read_bytes("tuned/adult-logreg.json", tmp_path)
    assert shipped.manifest_problems(tmp_path) != []


def test_record_touches_no_manifest_outside_the_data_folder(tmp_path):
    (tmp_path / "elsewhere.json").write_text("{}")
    assert shipped.record([tmp_path / "elsewhere.json"]) == []
    assert not (tmp_path / shipped.MANIFEST).exists()
