"""Progress bars: drawn on a terminal, quiet in a log. The real list-wise scorer (`prbench score` on the
RewardBench 2 fixture) run once with stderr on a pseudo-terminal and once on a pipe."""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from tests.conftest import ROOT

SCORE = [sys.executable, "-m", "flows.cli", "score", "--kind", "random", "--data",
         "data/benchmarks/fixtures/rewardbench2.jsonl"]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _on_a_terminal(cmd: list[str]) -> tuple[int, str]:
    """Run `cmd` with stderr on a pseudo-terminal; (exit status, what it drew there)."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))   # a terminal has a size; a new pty's is 0
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=side, stdin=subprocess.DEVNULL)
    os.close(side)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:   # the other end closed: the process is done
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    return proc.wait(timeout=120), out.decode(errors="replace")


def test_list_wise_scoring_shows_a_bar_on_a_terminal_and_none_in_a_log(tmp_path):
    rc, drawn = _on_a_terminal([*SCORE, "--out", str(tmp_path / "tty")])
    assert rc == 0, drawn[-2000:]
    assert "rewardbench2 random" in drawn and "item" in drawn and "%|" in drawn, drawn[-2000:]
    piped = subprocess.run([*SCORE, "--out", str(tmp_path / "log")], cwd=ROOT, env=_env(), capture_output=True,
                           text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert "%|" not in piped.stderr and "item/s" not in piped.stderr, piped.stderr[-2000:]
