"""read/files.py: what cannot be read is a LeakfinderError naming the file; a bug stays a bug."""

from __future__ import annotations

import os

import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files


def test_a_missing_or_unreadable_file_is_a_project_error(tmp_path):
    missing = str(tmp_path / "gone.xplane.pb")
    for read in (files.identity, files.read_bytes):
        with pytest.raises(LeakfinderError, match="cannot read the file") as err:
            read(missing)
        assert missing in err.value.message and err.value.source == missing


def test_a_bug_is_not_reported_as_an_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"x")

    def broken(*args: object, **kwargs: object) -> os.stat_result:
        raise TypeError("a bug, not a missing file")

    monkeypatch.setattr(files.os, "stat", broken)
    with pytest.raises(TypeError):
        files.identity(str(path))
