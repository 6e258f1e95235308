"""The warm server's socket folder (flows/warm_run.py): its socket binds however deep TMPDIR is. Under
pytest-xdist a TMPDIR of ~80 characters made the path pass AF_UNIX's 108 bytes; the server never bound, and
every stage of the run fell back to a plain process."""
import os
import socket
import tempfile

import pytest

from flows.warm_run import SUN_PATH_MAX, socket_folder


@pytest.mark.parametrize("depth", [10, 120])
def test_the_socket_binds_under_a_shallow_and_a_deep_tmpdir(tmp_path, monkeypatch, depth):
    deep = tmp_path / ("d" * max(1, depth - len(str(tmp_path)) - 1))
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    folder = socket_folder()
    try:
        assert os.path.basename(folder).startswith("prbench-warm-") and oct(os.stat(folder).st_mode)[-3:] == "700"
        path = os.path.join(folder, "sock.tmp")
        assert len(path.encode()) <= SUN_PATH_MAX
        assert folder.startswith(str(deep)) == (len(str(deep)) < 80), "TMPDIR honoured while the path fits"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)   # what the server does; a path past the limit raises OSError here
        s.close()
    finally:
        for f in os.listdir(folder):
            os.unlink(os.path.join(folder, f))
        os.rmdir(folder)
    assert not [f for f in os.listdir(deep) if f.startswith("prbench-warm-")], "the too-deep attempt is not left"
