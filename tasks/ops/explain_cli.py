"""`prbench explain RM [--strategy S] [--pair ID]`: why an RM fails, in the terminal, from the explain stage's
outputs in the project here (metrics/explain.json, data/explain/). Without --pair: every figure of the error
analysis per strategy and the pairs it got wrong; with --pair: that pair as the RMs saw it, the two answers
with their own words marked ({+chosen's own+}, [-rejected's own-], as git's word diff), and the RM's margin
under each strategy beside every RM's tally. An unknown RM, strategy or pair is one line with "did you mean"."""
from __future__ import annotations

import json
from pathlib import Path

from tasks.core import layout
from tasks.core.errors import ConfigError, suggestion
from tasks.stages.explain import text
from tasks.stages.explain.diff import word_diff

SHOWN = 12   # wrong pairs listed per strategy (all are in the explorer)


def _read(root: Path) -> dict:
    path = root / layout.EXPLAIN["metrics"]
    if not path.exists():
        raise ConfigError(f"explain: no {layout.EXPLAIN['metrics']} here: run `prbench run` (or `dvc repro explain`) "
                          "in the project first")
    return json.loads(path.read_text(encoding="utf-8"))


def _rows(root: Path, name: str, schema: str) -> list[dict]:
    from tasks.core.artifacts import read_table

    return read_table(root / layout.EXPLAIN[name], schema).to_pylist()


def _pick(name: str, valid, what: str) -> str:
    if name not in valid:
        listed = f"; this run has {', '.join(sorted(valid))}" if len(valid) <= 30 else f" among the run's {len(valid)}"
        raise ConfigError(f"explain: unknown {what} '{name}'{suggestion(name, valid)}{listed}")
    return name


def marked(runs: list[str], opening: str, closing: str) -> str:
    """An answer with its own words (the odd runs of word_diff) inside the markers."""
    return "".join(f"{opening}{r.rstrip()}{closing}{r[len(r.rstrip()):]}" if i % 2 and r.strip() else r
                   for i, r in enumerate(runs))


def rm_report(metrics: dict, cells: list[dict], rm: str, strategies: list[str]) -> list[str]:
    lines = []
    for s in strategies:
        if s not in metrics["rms"][rm]["strategies"]:
            lines.append(f"{rm} · {s}: not scored")
            continue
        lines += text.rm_lines(metrics, rm, s)
        wrong = sorted(c["question_id"] for c in cells if c["rm"] == rm and c["strategy"] == s and not c["right"])
        more = f" ... (+{len(wrong) - SHOWN})" if len(wrong) > SHOWN else ""
        lines.append(f"  not right on {len(wrong)} pair{'s' if len(wrong) != 1 else ''}: {', '.join(wrong[:SHOWN]) or 'none'}{more}"
                     + ("  (prbench explain RM --pair ID)" if wrong else ""))
    return lines


def pair_report(pair: dict, cells: list[dict], rm: str, strategies: list[str], roles: dict) -> list[str]:
    mine = {c["strategy"]: c for c in cells if c["rm"] == rm}
    chosen, rejected = word_diff(pair["chosen"] or "", pair["rejected"] or "")
    lines = [f"pair {pair['question_id']} ({pair['domain']}, {pair['category']}, {pair['profile_posts']} past posts): "
             f"{pair['question']}", "the user's rubric (gold, evaluation only): " + "; ".join(pair["aspects"])]
    contexts = {c["strategy"]: c for c in pair["contexts"]}
    for s in strategies:
        c = contexts.get(s) or {"text": "", "failed": False}
        shown = "the planner's reply never parsed: the question only" if c["failed"] else c["text"] or "the question only"
        lines.append(f"[{s}] the RMs saw: " + shown.replace("\n", " / "))
    lines += [f"chosen ({pair['chosen_words']} words): " + marked(chosen, "{+", "+}"),
              f"rejected ({pair['rejected_words']} words): " + marked(rejected, "[-", "-]")]
    for s in strategies:
        c = mine.get(s)
        verdict = "not scored" if not c else "invalid" if c["invalid"] else "tie" if c["tie"] else \
            "right" if c["right"] else "wrong"
        margin = "" if not c or c["margin"] is None else f", margin {c['margin']:+.4g}"
        others = [x for x in cells if x["strategy"] == s and roles.get(x["rm"]) == "contestant"]
        lines.append(f"{rm} · {s}: {verdict}{margin}; contestants right: {sum(x['right'] for x in others)} of {len(others)}")
    valid = "no verdict" if pair["judge_chosen"] is None else \
        f"chosen {pair['judge_chosen']:.2f}, rejected {pair['judge_rejected']:.2f} ({'valid' if pair['valid'] else 'not valid'})"
    lines.append(f"validity judge: {valid}")
    lines += [f"human evaluation ({h['kind']}, {h['annotators']} annotators) {h['dimension']}: chosen {h['chosen']}, "
              f"rejected {h['rejected']}" for h in pair["human"]] or ["human evaluation: not rated"]
    return lines


def explain(root: Path, rm: str, strategy: str | None = None, pair: str | None = None) -> list[str]:
    """The lines `prbench explain` prints; ConfigError (one line) for a name the run does not have."""
    metrics = _read(root)
    _pick(rm, metrics["rms"], "RM")
    strategies = [_pick(strategy, metrics["strategies"], "strategy")] if strategy else metrics["strategies"]
    if pair is None:
        return rm_report(metrics, _rows(root, "cells", "explain_cells"), rm, strategies)
    pairs = {p["question_id"]: p for p in _rows(root, "pairs", "explain_pairs")}
    _pick(pair, pairs, "pair")
    cells = [c for c in _rows(root, "cells", "explain_cells") if c["question_id"] == pair]
    roles = {r: e["role"] for r, e in metrics["rms"].items()}
    return pair_report(pairs[pair], cells, rm, strategies, roles)


def cmd_explain(args) -> int:
    print("\n".join(explain(Path(args.root), args.rm, args.strategy, args.pair)))
    return 0


def add_parser(subparsers):
    ap = subparsers.add_parser("explain", help="why an RM fails: its error analysis, or one pair as the RMs saw it")
    ap.add_argument("rm", help="an RM of the run (a name under scoring.rms)")
    ap.add_argument("--strategy", default=None, help="one profile strategy (default: every one)")
    ap.add_argument("--pair", default=None, metavar="ID", help="one pair (the user's question id)")
    ap.add_argument("--root", default=".", help="the project (default: here)")
    ap.set_defaults(func=cmd_explain)
    return ap
