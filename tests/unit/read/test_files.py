"""read/files.py: what cannot be read is a LeakfinderError naming the file; a bug stays a bug."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys

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


def test_read_private_is_the_callers_writable_memory_of_the_file(tmp_path):
    path = tmp_path / "h.xplane.pb"
    content = bytes(range(256)) * 5000
    path.write_bytes(content)
    with files.read_private(str(path)) as data:
        assert bytes(data) == content and not data.readonly
        data[:4] = b"gone"  # the caller's own memory, not the file
    assert path.read_bytes() == content
    path.write_bytes(b"")
    with files.read_private(str(path)) as data:
        assert len(data) == 0


def test_read_private_keeps_the_size_limit_and_errors_of_read_bytes(tmp_path):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"12345")
    with pytest.raises(LeakfinderError) as via_bytes:
        files.read_bytes(str(path), limit=4)
    with pytest.raises(LeakfinderError) as via_private, files.read_private(str(path), limit=4):
        pass
    assert via_private.value.message == via_bytes.value.message
    assert via_bytes.value.message == f"{path}: the file is 5 bytes, over the 4-byte limit for one analysis"
    with pytest.raises(LeakfinderError, match="cannot read the file"), files.read_private(str(tmp_path / "gone")):
        pass


def test_read_private_reads_what_is_left_of_a_file_cut_short_after_its_size_was_taken(tmp_path, monkeypatch):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"0123456789")
    taken = files.identity(str(path))
    path.write_bytes(b"0123")  # truncated between the stat and the read: no SIGBUS, only fewer bytes
    monkeypatch.setattr(files, "identity", lambda p: taken)
    with files.read_private(str(path)) as data:
        assert bytes(data) == b"0123"


def test_read_private_maps_only_a_regular_file_and_within_the_limit_once_open(tmp_path, monkeypatch):
    fifo = tmp_path / "f.xplane.pb"
    os.mkfifo(fifo)  # no writer: opening it must not wait for one
    with pytest.raises(LeakfinderError, match="not a regular file"), files.read_private(str(fifo)):
        pass
    grown = tmp_path / "g.xplane.pb"
    grown.write_bytes(b"0123")
    taken = files.identity(str(grown))
    grown.write_bytes(b"0123456789")  # grew past the limit between the stat and the open
    monkeypatch.setattr(files, "identity", lambda p: taken)
    with (
        pytest.raises(LeakfinderError, match="the file is 10 bytes, over the 4-byte limit"),
        files.read_private(str(grown), limit=4),
    ):
        pass


def test_read_private_reads_a_remote_file_through_gfile_in_blocks(monkeypatch):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    content = os.urandom(100_000)
    with fs.open("/private_remote/h.xplane.pb", "wb") as f:
        f.write(content)
    monkeypatch.setattr(files, "REMOTE_BLOCK_BYTES", 4096)  # 25 blocks, the last one short
    try:
        with files.read_private("memory://private_remote/h.xplane.pb") as data:
            assert bytes(data) == content and not data.readonly
        limited = files.read_private("memory://private_remote/h.xplane.pb", limit=99_999)
        with pytest.raises(LeakfinderError, match="over the 99999-byte limit"), limited:
            pass
    finally:
        fs.rm("/private_remote", recursive=True)


def _special_files(tmp_path) -> dict[str, tuple[str, str]]:
    """path -> what the refusal calls it: each kind of file that is no regular one."""
    fifo = tmp_path / "p.xplane.pb"
    os.mkfifo(fifo)
    folder = tmp_path / "d.prof"
    folder.mkdir()
    device = tmp_path / "z.prof"
    device.symlink_to("/dev/zero")
    sock = tmp_path / "s.pt.trace.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
    return {
        str(fifo): "a FIFO, not a regular file",
        str(folder): "a folder, not a regular file",
        str(device): "a character device, not a regular file",
        str(sock): "cannot read the file",  # a socket cannot even be opened
    }


def test_no_read_opens_or_reads_a_fifo_device_socket_or_folder(tmp_path):
    for path, why in _special_files(tmp_path).items():
        assert files.read_head(path, 64) == b""  # a sniff: no profile
        for read in (
            lambda p: files.read_bytes(p, 1 << 20),
            lambda p: list(files.read_blocks(p, limit=1 << 20)),
            lambda p: files.read_private(p, 1 << 20).__enter__(),
        ):
            with pytest.raises(LeakfinderError) as err:
                read(path)
            assert err.value.message.startswith(f"{path}: ") and why in err.value.message
            assert err.value.source == path


def test_a_link_to_a_regular_file_is_read(tmp_path):
    target = tmp_path / "t.prof"
    target.write_bytes(b"x")
    link = tmp_path / "l.prof"
    link.symlink_to(target)
    assert files.read_bytes(str(link), 1) == b"x"
    loop = tmp_path / "loop.prof"
    loop.symlink_to(loop)
    with pytest.raises(LeakfinderError, match="cannot read the file"):
        files.read_bytes(str(loop), 1)


def test_a_file_longer_than_its_stat_said_is_read_only_to_its_limit(tmp_path, monkeypatch):
    path = tmp_path / "h.prof"
    path.write_bytes(b"0123456789")
    shorter = files.identity(str(path))
    monkeypatch.setattr(files, "identity", lambda p: dataclasses.replace(shorter, size=4))
    # Grown since the stat: past the limit is refused, not read on.
    with pytest.raises(LeakfinderError, match="is over the 6-byte limit"):
        files.read_bytes(str(path), limit=6)
    with pytest.raises(LeakfinderError, match="is over the 6-byte limit"):
        list(files.read_blocks(str(path), 3, limit=6))
    # Without a limit, the size it had when asked.
    assert files.read_bytes(str(path)) == b"0123"


_TRUNCATE_WHILE_READ = """
import os, sys
from tb_leakfinder.read import files
files.ALLOW_MAP = sys.argv[2] == "map"
path = sys.argv[1]
with files.read_private(path) as data:
    os.truncate(path, 0)  # `cp` over a profile while it is read
    print(sum(data[::4096]))
"""


@pytest.mark.parametrize(("how", "survives"), [("map", False), ("copy", True)])
def test_a_file_truncated_while_read_kills_a_mapping_reader_which_is_why_tensorboard_copies(tmp_path, how, survives):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"\x01" * (1 << 20))
    child = subprocess.run([sys.executable, "-c", _TRUNCATE_WHILE_READ, str(path), how], capture_output=True, timeout=60)
    assert (child.returncode == 0) == survives, child
    if not survives:
        assert child.returncode == -signal.SIGBUS


def test_tensorboards_plugin_copies_profiles_rather_than_mapping_them(monkeypatch, tmp_path):
    from tensorboard.plugins import base_plugin

    from tb_leakfinder.plugin_loader import LeakfinderLoader

    monkeypatch.setattr(files, "ALLOW_MAP", True)
    assert LeakfinderLoader().load(base_plugin.TBContext(logdir=str(tmp_path), flags=None)) is not None
    assert files.ALLOW_MAP is False


def test_a_protobuf_cut_short_says_how_many_bytes_its_last_field_needs():
    # Two length-delimited fields of field 1: 3 bytes of payload, then 200 of which 10 are here.
    whole = b"\x0a\x03abc" + b"\x0a\xc8\x01" + b"x" * 200
    assert files.protobuf_needs(whole, 1 << 20) is None
    assert files.protobuf_needs(whole[:18], 1 << 20) == len(whole)
    # A field past the limit, or no field at all (field number 0, wire type 7), is corrupt, not cut short.
    assert files.protobuf_needs(whole[:18], 100) is None
    assert files.protobuf_needs(b"\x07abc", 1 << 20) is None


def test_truncated_says_what_it_knows_and_what_to_do():
    said = f"truncated (10 of at least 20 bytes: its last plane). {files.TRUNCATED_ADVICE}"
    assert files.truncated(10, 20, "its last plane") == said
    assert files.truncated(None, detail="the JSON ends") == f"truncated (the JSON ends). {files.TRUNCATED_ADVICE}"
