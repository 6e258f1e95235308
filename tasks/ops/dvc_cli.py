"""`dvc` as `prbench run` runs it: DVC's own CLI, with the lock written one stage entry at a time
(lock_splice.py: the same bytes, without a whole-file YAML round trip per stage). Outside `flows` on
purpose: a `python -m flows.*` process under `prbench run` hands itself to a warm fork (flows/__init__.py)."""
import sys

from tasks.ops.lock_splice import install


def main(argv: list[str]) -> int:
    install()
    from dvc.cli import main as dvc_main

    return dvc_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
