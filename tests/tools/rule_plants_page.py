"""Plants of docs/rules.md's rows on the report page and the stages' tables (PAGE1-PAGE13, FMT4, CORR4): each the
wrong rule a tired developer would write into the page's code (see tests/tools/rule_plants.py)."""
from __future__ import annotations

from tests.tools.plants_base import P

FMT = "tasks/ops/report/fmt.py"
BOARD = "tasks/ops/report/board.py"
DOWN = "tasks/ops/report/downstream.py"
BENCH = "tasks/ops/report/benchmarks.py"
PUB = "tasks/downstream/correlation/published.py"
PROV = "tasks/ops/report/provenance.py"
BUILD = "tasks/ops/report/build.py"
METHODS = "tasks/ops/report/methods.py"
CHARTS = "tasks/ops/report/charts.py"
DIFF = "tasks/downstream/correlation/diff.py"
BATCH = "tasks/downstream/correlation/batch.py"
BCLI = "tasks/stages/benchmarks/cli.py"
BSTAGE = "tasks/stages/benchmarks/stage.py"
CSTAGE = "tasks/downstream/correlation/stage.py"
CMETHODS = "tasks/downstream/correlation/methods.py"
PRIMARY = "tasks/downstream/correlation/primary.py"

T_FMT = ["tests/test_rules_fmt.py"]
T_BOARD = ["tests/test_rules_board.py"]
T_SECTIONS = ["tests/test_rules_report_sections.py"]
T_REPORT = ["tests/test_rules_report.py"]
T_PUB = ["tests/test_rules_published.py", "tests/test_rules_page_rows.py"]
T_PROV = ["tests/test_rules_provenance.py", "tests/test_rules_report_methods.py", "tests/test_rules_page_rows.py"]
T_METHODS = ["tests/test_rules_report_methods.py"]
T_CHARTS = ["tests/test_rules_charts.py"]
T_DIFF = ["tests/test_rules_diff.py"]
T_BATCH = ["tests/test_rules_metrics.py", "tests/test_correlation_metrics.py"]
T_BCLI = ["tests/test_rules_bench_cli.py", "tests/test_rules_bench_stage.py"]
T_CSTAGE = ["tests/test_rules_corr_stage.py"]
T_CMETHODS = ["tests/test_rules_methods.py"]
T_FLIP = ["tests/test_rules_tests.py", "tests/test_rules_primary.py"]

PLANTS = [
    # --- the in-page sort's values (FMT4) ------------------------------------------------------------------------------
    P("SORT1", FMT, "    if isinstance(x, (int, float)):\n        return x\n", "    if isinstance(x, (int, float)):\n        return str(x)\n",
      T_FMT, "numbers as text ('10' before '9')"),
    P("SORT2", FMT, "    if x is None:\n        return \"\"", "    if x is None:\n        return 0", T_FMT,
      "none as 0 (sorted among the numbers)"),
    P("SORT3", FMT, "    if isinstance(x, bool):\n        return int(x)", "    if isinstance(x, bool):\n        return str(x)", T_FMT,
      "a flag as the text True/False"),
    # --- the leaderboard table and heatmaps (PAGE1) ----------------------------------------------------------------------
    P("PG1A", BOARD, "\"order\": (strategy_order(s), -acc if acc is not None else 1, rm)})",
      "\"order\": (strategy_order(s), -acc if acc is not None else -2, rm)})", T_BOARD, "unscored rows first"),
    P("PG1B", BOARD, "\"order\": (strategy_order(s), -acc if acc is not None else 1, rm)})",
      "\"order\": (strategy_order(s), acc if acc is not None else 2, rm)})", T_BOARD, "worst first"),
    # (no PG1C: equal accuracies "in metrics order" is by name anyway, the rows are built from sorted (rm, strategy) keys)
    P("PG1D", BOARD, "    base = (33, 102, 172) if t >= 0 else (178, 24, 43)", "    base = (178, 24, 43) if t >= 0 else (33, 102, 172)",
      T_BOARD, "blue below chance, red above"),
    P("PG1E", BOARD, "    t = max(-1.0, min(1.0, (acc - 0.5) * 2))", "    t = max(-1.0, min(1.0, acc - 0.5))", T_BOARD,
      "half the colour's strength (full red or blue never reached)"),
    P("PG1F", BOARD, "    if len(rms) <= MAX_RMS_SHOWN:\n        return rms, []", "    if len(rms) < MAX_RMS_SHOWN:\n        return rms, []",
      T_BOARD, "exactly MAX_RMS_SHOWN RMs cut"),
    P("PG1G", BOARD, "key=lambda rm: (micro.get(rm) is None, -(micro.get(rm) or 0), rm))",
      "key=lambda rm: (micro.get(rm) is None, micro.get(rm) or 0, rm))", T_BOARD, "above the cap the worst kept"),
    P("PG1H", BOARD, "        role = \" (positive control)\" if rm in controls else \" (null baseline)\" if rm in nulls else \"\"",
      "        role = \" (null baseline)\" if rm in nulls else \" (positive control)\" if rm in controls else \"\"", T_BOARD,
      "an RM in both sets labelled null baseline"),
    P("PG1I", BOARD, "        return _cell(None, f\"not tested: {role.strip(' ()')}\" if role else fmt.DASH)",
      "        return _cell(None, fmt.DASH)", T_BOARD, "a control or null baseline's untested cell does not say why"),
    # --- the report's sections (PAGE2) -------------------------------------------------------------------------------------
    P("PG2A", DOWN, "    method = (metrics or {}).get(\"reported_method\") or \"expected\"", "    method = \"expected\"", T_SECTIONS,
      "the BoN table at expected whatever was reported"),
    P("PG2B", DOWN, "        return (not r.get(\"baseline\"), -(r.get(\"mean_score\") or 0), r.get(\"rm\") or \"\")",
      "        return (bool(r.get(\"baseline\")), -(r.get(\"mean_score\") or 0), r.get(\"rm\") or \"\")", T_SECTIONS,
      "RL's baseline last"),
    P("PG2C", DOWN, "    cells = list(dict.fromkeys((r[\"benchmark\"], r.get(\"predictor\") or \"accuracy\", r[\"downstream\"])",
      "    cells = sorted(set((r[\"benchmark\"], r.get(\"predictor\") or \"accuracy\", r[\"downstream\"])", T_SECTIONS,
      "the correlation table sorted by name, not the stage's order"),
    P("PG2D", DOWN, "    level = level_of(m)\n    cells", "    level = 0.05\n    cells", T_SECTIONS, "verdicts at 0.05, not the run's alpha"),
    P("PG2E", DOWN, "              \"status\": verdict(r[\"status\"], r.get(\"p_holm\"), r[\"p_value\"], level)}",
      "              \"status\": verdict(r[\"status\"], None, r[\"p_value\"], level)}", T_SECTIONS, "verdicts on the raw p"),
    P("PG2F", DOWN, "    return {\"source\": m.get(\"source\"), \"human\": _rater(m[\"human\"]) if m.get(\"human\") else None,",
      "    return {\"source\": m.get(\"source\"), \"human\": _rater(m.get(\"human\") or m[\"llm-proxy\"]) if m.get(\"human\") or m.get(\"llm-proxy\") else None,",
      T_SECTIONS, "the proxy shown as the humans while none rated"),
    P("PG2G", DOWN, "                      \"questions\": fmt.num((r.get(\"questions\") or 0) * (r.get(\"seeds\") or 1)),",
      "                      \"questions\": fmt.num(r.get(\"questions\") or 0),", T_SECTIONS, "questions answered not counted per seed"),
    P("PG2H", DOWN, "    sources += [(f\"generic ({name})\", block) for name, block in sorted((generic or {}).items())",
      "    sources = [(f\"generic ({name})\", block) for name, block in sorted((generic or {}).items())", T_SECTIONS,
      "the generic baseline replaces the pair sources"),
    # --- the other-benchmarks matrix and boards (PAGE3, CORR4) -----------------------------------------------------------------
    P("PG3A", BENCH, "\"below_chance\": e[\"accuracy\"] is not None and e[\"accuracy\"] <= e[\"chance\"],",
      "\"below_chance\": e[\"accuracy\"] is not None and e[\"accuracy\"] < e[\"chance\"],", T_REPORT,
      "at chance counted as above it"),
    P("PG3B", BENCH, "                          \"verdict\": verdict(c[\"status\"], v.get(\"p_holm\"), v.get(\"p_value\"), level) if ok else \"\",",
      "                          \"verdict\": verdict(c[\"status\"], v.get(\"p_holm\"), None, level) if ok else \"\",", T_REPORT,
      "no verdict where no Holm p (the raw p ignored)"),
    P("PG3C", BENCH, "        rows.sort(key=lambda x: (x[\"strategy\"], x[\"accuracy\"] == \"-\", -float(x[\"accuracy\"]) if x[\"accuracy\"] != \"-\" else 0))",
      "        rows.sort(key=lambda x: (x[\"strategy\"], x[\"accuracy\"] == \"-\", float(x[\"accuracy\"]) if x[\"accuracy\"] != \"-\" else 0))",
      T_REPORT, "a benchmark board worst first"),
    P("PG3D", BENCH, "            diff = \"\" if not pair or pair[\"status\"] != \"ok\" else \\",
      "            diff = \"\" if not pair else \\", T_REPORT, "a failed comparison shows a difference"),
    P("PG3E", BENCH, "                    key=lambda x: (-x[0], x[1]))", "                    key=lambda x: (-x[0], x[1]), reverse=True)",
      T_REPORT, "the lowest correlation as the top benchmark"),
    P("STAR1", BENCH, "        out[d][\"holds\"] = bool(own and p is not None and p < level)",
      "        out[d][\"holds\"] = bool(own and p is not None and p <= level)", T_REPORT, "a paired p at alpha holds"),
    P("STAR2", BENCH, "        out[d][\"holds\"] = bool(own and p is not None and p < level)",
      "        out[d][\"holds\"] = bool(own or (p is not None and p < level))", T_REPORT, "either test enough for a star"),
    P("STAR3", BENCH, "    for d, p in holm(raw).items():", "    for d, p in raw.items():", T_REPORT, "the raw paired p, no Holm over the columns"),
    # --- an other benchmark by its publisher's score (PAGE4) -------------------------------------------------------------------
    P("PG4A", PUB, "            mine = [r for r in rows if r[\"rm\"] == rm and r[\"strategy\"] == use]",
      "            mine = [r for r in rows if r[\"rm\"] == rm]", T_PUB, "every strategy's items pooled"),
    P("PG4B", PUB, "        use = strategy if any(r[\"strategy\"] == strategy for r in rows) else \"none\"", "        use = strategy",
      T_PUB, "a benchmark without the asked strategy gives no number at all"),
    P("PG4C", PUB, "            if pub.get(\"score\") is not None:\n                side.fixed[rm] = float(pub[\"score\"])",
      "            if True:\n                side.fixed[rm] = float(pub.get(\"score\") or 0)", T_PUB, "no published number read as 0"),
    # --- provenance (PAGE5) -------------------------------------------------------------------------------------------------------
    P("PG5A", PROV, "        h.update(f.relative_to(root).as_posix().encode() + b\"\\0\" + file_hash(f).encode() + b\"\\0\")",
      "        h.update(file_hash(f).encode() + b\"\\0\")", T_PROV, "contents only (a renamed file the same version)"),
    P("PG5B", PROV, "        h.update(f.relative_to(root).as_posix().encode() + b\"\\0\" + file_hash(f).encode() + b\"\\0\")",
      "        h.update(str(f).encode() + b\"\\0\" + file_hash(f).encode() + b\"\\0\")", T_PROV,
      "the absolute path (another checkout another version)"),
    P("PG5C", PROV, "        if SKIP.intersection(parts) or f.suffix == \".pyc\":", "        if f.suffix == \".pyc\":", T_PROV,
      "a cache folder's other files hashed"),
    P("PG5D", PROV, "        if any(v != run for v in values.values()):", "        if all(v != run for v in values.values()):", T_PROV,
      "a difference only where the run differs from every reference"),
    P("PG5E", PROV, "        out.update(flatten(v, key + \".\") if isinstance(v, dict) and v else {key: v})",
      "        out.update(flatten(v, key + \".\") if isinstance(v, dict) else {key: v})", T_PROV, "an empty mapping vanishes"),
    P("PG5F", BUILD, "    context = run_context(params, inputs, code_version)\n",
      "    context = run_context(params, inputs, code_version, provenance.machine_records())\n", T_PROV,
      "the DVC page shows the machines that made it"),
    # --- the generic downstream section (PAGE6) ---------------------------------------------------------------------------------
    P("PG6A", METHODS, "        lo, hi = np.quantile(draws, [0.025, 0.975])", "        lo, hi = np.quantile(draws, [0.05, 0.95])",
      T_METHODS, "a 90% interval"),
    P("PG6B", METHODS, "    for m in methods():", "    for m in sorted(methods(), key=lambda m: m.name):", T_METHODS,
      "sections by name, not registry order"),
    P("PG6C", METHODS, "        rng = stable_rng(seed, \"report\", method.name, rm)", "        rng = np.random.default_rng()",
      T_METHODS, "an unseeded bootstrap"),
    P("PG6E", METHODS, "        rng = stable_rng(seed, \"report\", method.name, rm)", "        rng = stable_rng(seed, \"report\", method.name)",
      T_METHODS, "one stream for every RM (the same resampled questions for each)"),
    P("PG6D", METHODS, "        rows.append({\"rm\": rm, \"mean\": float(x.mean()),", "        rows.append({\"rm\": rm, \"mean\": float(np.median(x)),",
      T_METHODS, "the median score, not the mean"),
    # --- the charts (PAGE7) ---------------------------------------------------------------------------------------------------
    P("PG7A", CHARTS, "    pad = (hi - lo) * 0.06", "    pad = (hi - lo) * 0.05", T_CHARTS, "the axis padded 5%"),
    P("PG7B", CHARTS, "(xs.index(x) / max(1, len(xs) - 1))", "((x - xs[0]) / max(1, xs[-1] - xs[0]))", T_CHARTS,
      "k placed by value (1, 2, 4, 8 bunched at the left)"),
    P("PG7C", CHARTS, "    sy = lambda y: TOP + (hi - y) / (hi - lo) * ph  # noqa: E731\n    colour",
      "    sy = lambda y: TOP + (y - lo) / (hi - lo) * ph  # noqa: E731\n    colour", T_CHARTS, "higher drawn lower"),
    P("PG7D", CHARTS, "\"dash\": \"5,4\" if s.get(\"reference\") else \"\"", "\"dash\": \"\"", T_CHARTS, "reference lines solid"),
    P("PG7E", CHARTS, "    lo, hi = min(0.0, min(values)), max(values) * 1.05 or 1.0", "    lo, hi = min(values), max(values) * 1.05 or 1.0",
      T_CHARTS, "bars from the smallest value, not zero"),
    P("PG7F", CHARTS, "\"x0\": _fmt(min(zero, sx(i[\"value\"])))", "\"x0\": _fmt(zero)", T_CHARTS, "a negative bar drawn rightwards"),
    P("PG7G", CHARTS, "    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(names))}",
      "    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}", T_CHARTS, "colours by order of appearance"),
    P("PG7H", CHARTS, "    sy = lambda y: TOP + (yhi - y) / (yhi - ylo) * ph  # noqa: E731",
      "    sy = lambda y: TOP + (y - ylo) / (yhi - ylo) * ph  # noqa: E731", T_CHARTS, "a scatter's higher value drawn lower"),
    # --- prbench diff --all (PAGE8) ----------------------------------------------------------------------------------------------
    P("PG8A", DIFF, "    if \"correlations\" in parts or \"comparisons\" in parts:", "    if \"correlations\" in parts:", T_DIFF,
      "a comparison's metric of kind other"),
    P("PG8B", DIFF, "    return sorted(rows, key=lambda r: (KINDS.index(r[\"kind\"]), r[\"file\"], r[\"metric\"]))",
      "    return sorted(rows, key=lambda r: (r[\"kind\"], r[\"file\"], r[\"metric\"]))", T_DIFF, "kinds in alphabetical order"),
    P("PG8C", DIFF, "            out.update({prefix + k: ci for k in CI_OF if k in obj})",
      "            out.update({prefix + k: ci for k in obj if k != \"ci\"})", T_DIFF, "a ci bounds every sibling (n too)"),
    P("PG8D", DIFF, "        why = next((line for line in reversed(proc.stderr.splitlines()) if line.strip()), f\"exit {proc.returncode}\")",
      "        why = proc.stderr.strip() or f\"exit {proc.returncode}\"", T_DIFF, "dvc's whole stderr, not its last line"),
    P("PG8E", DIFF, "    rows = [r for r in rows if all_metrics or r[\"kind\"] != \"other\"]", "    rows = [r for r in rows]", T_DIFF,
      "other metrics without --all"),
    # --- the batched metrics (PAGE9) ---------------------------------------------------------------------------------------------
    P("PG9A", BATCH, "    rx, ry = (stats.rankdata(v, axis=1) for v in (x, y))", "    rx, ry = (stats.rankdata(v, axis=1, method=\"ordinal\") for v in (x, y))",
      T_BATCH, "Spearman on ordinal ranks (ties broken by position)"),
    P("PG9B", BATCH, "    tau = np.minimum(1.0, np.maximum(-1.0, agree / np.sqrt(untied_x) / np.sqrt(untied_y)))",
      "    tau = np.minimum(1.0, np.maximum(-1.0, agree / (n * (n - 1) / 2)))", T_BATCH, "Kendall tau-a"),
    P("PG9C", BATCH, "    undefined = (y < 0).any(axis=1) | ~(y > 0).any(axis=1)", "    undefined = ~(y > 0).any(axis=1)", T_BATCH,
      "NDCG with a negative gain computed"),
    P("PG9D", BATCH, "        weighted += p ** d * (overlap / d)", "        weighted += p ** (d - 1) * (overlap / d)", T_BATCH,
      "RBO's weights one depth off"),
    # (no PG9E: with one side constant its variance is 0 and the quotient 0/0 is NaN already; the mask only names why)
    # --- prbench score and bench_score (PAGE10) -------------------------------------------------------------------------------
    P("PG10A", BSTAGE, "    for stale in folder.glob(\"*.parquet\"):", "    for stale in folder.glob(\"*.json\"):", T_BCLI,
      "an RM taken off the list leaves its table"),
    P("PG10B", BCLI, "    for f in files:\n        try:", "    for f in reversed(files):\n        try:", T_BCLI,
      "the layout of the last file"),
    P("PG10C", BSTAGE, "               \"rms\": per_rm, \"run\": res.stats()}", "               \"rms\": {rm: {**m, \"run\": res.stats()} for rm, m in per_rm.items()}}",
      T_BCLI, "run counters inside each RM's metrics"),
    P("PG10D", BCLI, "    if \"winner\" in keys and {\"response_1\", \"response_2\"} <= keys:", "    if \"winner\" in keys:", T_BCLI,
      "any row with a winner read as PPE"),
    P("PG10E", BCLI, "        raise ConfigError(f\"--strategy {wrong[0]}: {benchmark} is scored with {', '.join(bench.strategies())} only\")",
      "        raise ConfigError(f\"{benchmark} is scored with {', '.join(bench.strategies())} only\")", T_BCLI,
      "the refusal does not name its flag"),
    # --- the correlation stage (PAGE11) ------------------------------------------------------------------------------------
    P("PG11A", CSTAGE, "    family.update({(\"v\", key, m): r[\"cells\"][m][\"p_value\"] for key, r in compared.items() for m in M.METRICS})",
      "    family.update({})", T_CSTAGE, "the comparisons adjusted per pair, outside the family"),
    P("PG11B", CSTAGE, "        \"status\": \"ok\" if any(r[\"status\"] == \"ok\" for r in results.values()) else best[\"status\"],",
      "        \"status\": \"ok\" if all(r[\"status\"] == \"ok\" for r in results.values()) else best[\"status\"],", T_CSTAGE,
      "ok only where every pairing is"),
    P("PG11C", CSTAGE, "    if p.get(\"tie_policy\") not in (\"strict\", \"half\"):", "    if p.get(\"tie_policy\") not in (\"strict\", \"half\", \"drop\"):",
      T_CSTAGE, "drop accepted (questions fall out)"),
    P("PG11D", CSTAGE, "        \"significant\": sum(c[m][\"verdict\"] == M.SIGNIFICANT for v in correlations.values() for c in v.values()",
      "        \"significant\": sum(c[m][\"verdict\"] != M.NOT_SIGNIFICANT for v in correlations.values() for c in v.values()",
      T_CSTAGE, "too-few cells counted significant"),
    P("PG11E", CSTAGE, "    best = max(results.values(), key=lambda r: r[\"n_rms\"]) if results else {\"status\": \"no pairings\"}",
      "    best = min(results.values(), key=lambda r: r[\"n_rms\"]) if results else {\"status\": \"no pairings\"}", T_CSTAGE,
      "the status of the narrowest pairing"),
    # --- the correlation's downstream sides (PAGE12) ---------------------------------------------------------------------------
    P("PG12A", CMETHODS, "        if not r[\"baseline\"] and r[\"score\"] is not None and math.isfinite(r[\"score\"]):",
      "        if r[\"score\"] is not None and math.isfinite(r[\"score\"]):", T_CMETHODS, "the untrained baseline an RM"),
    P("PG12B", CMETHODS, "        side.per_question[rm] = {q: sum(v) / len(v) for q, v in per.items()}",
      "        side.per_question[rm] = {q: v[-1] for q, v in per.items()}", T_CMETHODS, "the last seed, not their mean"),
    P("PG12C", CMETHODS, "        if r[\"k\"] == k and r[\"judge_score\"] is not None and math.isfinite(r[\"judge_score\"]):",
      "        if r[\"k\"] == k and r[\"judge_score\"] is not None:", T_CMETHODS, "a non-finite BoN score kept"),
    P("PG12D", CMETHODS, "        if not r[\"baseline\"] and r[\"score\"] is not None and math.isfinite(r[\"score\"]):",
      "        if not r[\"baseline\"] and r[\"score\"] is not None:", T_CMETHODS, "a non-finite RL score kept"),
    # --- the label flip (PAGE13) ---------------------------------------------------------------------------------------------
    P("PG13A", PRIMARY, "    flipped = np.array([credits([swap(per[rm][q]) for q in common], c[\"tie_policy\"]) for rm in rms])",
      "    flipped = 1 - credit", T_FLIP, "a flip as 1 - credit (a strict tie and an invalid row turned right)"),
    P("PG13B", PRIMARY, "    swap = lambda r: r if _invalid(r) or _tie(r) else {**r, \"correct\": not r[\"correct\"]}  # noqa: E731",
      "    swap = lambda r: {**r, \"score_chosen\": r[\"score_rejected\"], \"score_rejected\": r[\"score_chosen\"]}  # noqa: E731",
      T_FLIP, "the scores swapped, the correct flag kept"),
    P("PG13C", PRIMARY, "                and c[\"split\"] in (None, r[\"split\"])]", "                ]", T_FLIP,
      "every split's pairs, not correlation.split's"),
]
