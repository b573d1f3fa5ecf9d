"""utils.manifest: the one reader of a run or model folder's manifest (format, version,
confinement, bounded size, one-line errors) and its lenient peek."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.utils.manifest import check_format, peek_manifest, read_manifest


def _folder(tmp_path: Path, manifest: object, name: str = "manifest.json") -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / name).write_text(json.dumps(manifest))
    return folder


def test_read_manifest_returns_the_path_and_the_object(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"format": "demo", "version": 2, "seed": 7})
    path, manifest = read_manifest(folder, expected_format="demo", what="a demo run",
                                   version=2)
    assert path == folder / "manifest.json" and manifest["seed"] == 7


@pytest.mark.parametrize("content, fragment", [
    ({"format": "other"}, "is not the manifest of a demo run (format 'other'): make one"),
    ([1, 2], "is not the manifest of a demo run (format 'list')"),
    ({"format": "demo", "version": 3}, "unsupported version 3 of the manifest of a demo run"),
])
def test_a_foreign_manifest_is_one_line_naming_the_file(tmp_path: Path, content: object,
                                                        fragment: str) -> None:
    folder = _folder(tmp_path, content)
    with pytest.raises(CorruptFileError) as err:
        read_manifest(folder, expected_format="demo", what="a demo run", version=2,
                      hint="make one")
    message = str(err.value)
    assert fragment in message and str(folder / "manifest.json") in message
    assert "\n" not in message


def test_missing_damaged_and_oversized_manifests_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(CorruptFileError, match="is missing: did the run finish"):
        read_manifest(folder, expected_format="demo", what="a demo run",
                      missing="did the run finish?")
    (folder / "manifest.json").write_text('{"format": "demo", "x": NaN}')
    with pytest.raises(CorruptFileError, match="damaged"):
        read_manifest(folder, expected_format="demo", what="a demo run")
    (folder / "manifest.json").write_text(json.dumps({"format": "demo", "pad": "x" * 200}))
    with pytest.raises(TensorCFRError, match="too large"):
        read_manifest(folder, expected_format="demo", what="a demo run", max_bytes=100)
    with pytest.raises(TensorCFRError, match="is not a folder"):
        read_manifest(folder / "manifest.json", expected_format="demo", what="a demo run")


def test_the_manifest_name_is_confined_to_the_folder(tmp_path: Path) -> None:
    (tmp_path / "outside.json").write_text(json.dumps({"format": "demo"}))
    folder = _folder(tmp_path, {"format": "demo"})
    with pytest.raises(CorruptFileError):
        read_manifest(folder, "../outside.json", expected_format="demo", what="a demo run")
    os.symlink(tmp_path / "outside.json", folder / "link.json")
    with pytest.raises(CorruptFileError):
        read_manifest(folder, "link.json", expected_format="demo", what="a demo run")


def test_a_fifo_manifest_is_refused_unopened(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    os.mkfifo(folder / "manifest.json")  # opening it for reading would block
    with pytest.raises(TensorCFRError, match="FIFO"):
        read_manifest(folder, expected_format="demo", what="a demo run")
    assert peek_manifest(folder) is None


def test_peek_manifest_is_lenient(tmp_path: Path) -> None:
    assert peek_manifest(tmp_path / "nowhere") is None
    assert peek_manifest(_folder(tmp_path, [1, 2])) is None
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text("{broken")
    assert peek_manifest(other) is None
    good = tmp_path / "good"
    good.mkdir()
    (good / "manifest.json").write_text(json.dumps({"deal": [1]}))  # no format needed
    assert peek_manifest(good) == {"deal": [1]}


def test_check_format_passes_the_object_through() -> None:
    obj = {"format": "f", "version": 1}
    assert check_format(obj, "f", "p", "a thing", version=1) is obj
    with pytest.raises(CorruptFileError, match="^p is not a thing"):
        check_format(None, "f", "p", "a thing")
