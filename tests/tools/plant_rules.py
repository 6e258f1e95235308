"""Plant each rule's nearest wrong rules (docs/rules.md) one at a time and check its named tests fail.

A plant is one edit of one line of product code: the rule a tired developer would write instead (`>` for
`>=`, the other side of zero, the other ranking). Each is applied alone in this checkout, the tests its
row names run in a fresh process, and the file is put back byte for byte (and its mtime, so no stale
bytecode is kept). "caught" means the tests failed under the plant; "ESCAPED" means they passed, so they
do not tell the rule from that neighbour. Bytecode is not written while a plant is in place.

    python tests/tools/plant_rules.py               # every plant
    python tests/tools/plant_rules.py RES2 FP1      # these plants (ids as docs/rules.md brackets them)
    python tests/tools/plant_rules.py --list        # rows and their plants
    python tests/tools/plant_rules.py FP1 --without tests/test_rules_fingerprint.py   # would the older tests catch it?
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.tools.rule_plants import PLANTS  # noqa: E402


def apply(plant: dict) -> tuple[Path, str, os.stat_result]:
    path = ROOT / plant["file"]
    text = path.read_text(encoding="utf-8")
    count = text.count(plant["old"])
    if count != 1:
        raise SystemExit(f"{plant['rule']}: {plant['file']}: the plant's old text is there {count} times, not once:\n"
                         f"{plant['old']}")
    st = path.stat()
    path.write_text(text.replace(plant["old"], plant["new"]), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, time.time_ns()))
    return path, text, st


def restore(path: Path, text: str, st: os.stat_result) -> None:
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def run_plant(plant: dict, timeout: int, without=()) -> tuple[str, float, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    tests = [t for t in plant["tests"] if (ROOT / t.split("::")[0]).exists() and t.split("::")[0] not in without]
    if not tests:   # pytest with no path would run the whole suite
        return "ESCAPED", 0.0, "no test left to run"
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow",
           "--hypothesis-seed=0", *tests]
    path, text, st = apply(plant)
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        rc, out = -1, "timed out"
    finally:
        restore(path, text, st)
    verdict = {0: "ESCAPED", 1: "caught"}.get(rc, f"error rc={rc}")
    return verdict, time.monotonic() - start, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rules", nargs="*", help="plant ids (RES2 ...); none: every plant")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--without", nargs="+", default=(), metavar="TEST_FILE",
                    help="leave these test files out (e.g. the tests written for a row, to see the old ones miss it)")
    ap.add_argument("-v", action="store_true", help="print the tests' output of a plant that escaped or errored")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # killed: the plant in place is still put back
    chosen = [p for p in PLANTS if not args.rules or p["rule"] in args.rules]
    if args.list:
        for p in chosen:
            print(f"{p['rule']:<6}{p['file']}: {p['why']}  ->  {' '.join(p['tests'])}")
        return 0
    bad = 0
    for p in chosen:
        verdict, seconds, out = run_plant(p, args.timeout, args.without)
        print(f"{p['rule']:<6}{verdict:<10}{seconds:6.1f}s  {p['file']}: {p['why']}", flush=True)
        if verdict != "caught":
            bad += 1
            if args.v:
                print("\n".join(out.splitlines()[-15:]))
    print(f"{len(chosen) - bad} of {len(chosen)} plants caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
