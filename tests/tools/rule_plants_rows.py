"""Plants of docs/rules.md's rows outside the report page: the leaderboard's empty and labelled rows, rounding,
human evaluation, RL evaluation, the halves, the correlation's resampling and ordering, the power model,
determinism, release rollback, params, the importers, scoring, results.json, ingest's errors, the options users
set and the paper setting (see tests/tools/rule_plants.py)."""
from __future__ import annotations

from tests.tools.plants_base import P

LB = "tasks/stages/leaderboard.py"
ADJ = "tasks/stages/adjacent.py"
HE = "tasks/stages/human_eval/analysis.py"
HE_STAGE = "tasks/stages/human_eval/stage.py"
PROXY = "tasks/stages/human_eval/proxy.py"
EVAL = "tasks/downstream/rl/evaluate.py"
HALVES = "tasks/core/halves.py"
RESAMPLE = "tasks/downstream/correlation/resample.py"
PAIRED = "tasks/downstream/correlation/paired.py"
METRICS = "tasks/downstream/correlation/metrics.py"
BATCH = "tasks/downstream/correlation/batch.py"
CSTAGE = "tasks/downstream/correlation/stage.py"
POWER = "tasks/downstream/correlation/power.py"
DET = "tasks/core/determinism.py"
SEQ_CLS = "tasks/models/rms/seq_cls.py"
TXN = "tasks/ops/release_txn.py"
RULES = "tasks/core/params/rules.py"
CHECK = "tasks/core/params/check.py"
PARAMS_INIT = "tasks/core/params/__init__.py"
PRISM = "tasks/stages/benchmarks/prism.py"
PPE = "tasks/stages/benchmarks/ppe_human.py"
GENERIC = "tasks/stages/benchmarks/generic.py"
SCORING = "tasks/stages/benchmarks/scoring.py"
RESULTS = "tasks/core/results.py"
VALIDATE = "tasks/core/validate.py"
INGEST = "tasks/stages/ingest.py"
TRAINERS = "tasks/downstream/rl/trainers.py"
TRAIN = "tasks/downstream/rl/train.py"
ALGOS = "tasks/downstream/rl/algorithms.py"
JUDGE = "tasks/models/judge.py"
RMS_JUDGES = "tasks/models/rms/judges.py"
RETRIEVAL = "tasks/models/retrieval.py"
BASELINES = "tasks/models/rms/baselines.py"
MIXTURE = "tasks/models/rms/mixture.py"

T_LB = ["tests/test_leaderboard.py", "tests/test_rules_leaderboard.py"]
T_ADJ = ["tests/test_rules_tests.py", "tests/test_rules_adjacent.py"]
T_ROUND = ["tests/test_rules_rounding.py", "tests/test_retrieval.py"]
T_HE = ["tests/test_human_eval_stats.py", "tests/test_human_eval_parity.py", "tests/test_rules_human_eval.py",
        "tests/test_human_eval_import.py"]
T_HE_STAGE = ["tests/test_human_eval_proxy.py", "tests/test_human_eval_export.py"]
T_RLE = ["tests/test_rl_honest.py", "tests/test_rules_rl_eval.py"]
T_HALVES = ["tests/test_halves.py", "tests/test_rules_downstream.py", "tests/test_rules_halves.py"]
T_CORR = ["tests/test_rules_paired.py", "tests/test_correlation_metrics.py", "tests/test_rules_metrics.py",
          "tests/test_decisions.py", "tests/test_rules_tests.py"]
T_CSTAGE = ["tests/test_rules_corr_stage.py", "tests/test_correlation_stage.py"]
T_POWER = ["tests/test_rules_power.py", "tests/test_primary_power.py"]
T_DET = ["tests/test_rules_determinism.py", "tests/test_leaderboard.py"]
T_BINV = ["tests/test_batch_invariant.py::test_scores_are_the_same_bits_at_any_batch_size_and_order_only_when_invariant"]
T_ROLLBACK = ["tests/test_rules_release.py::test_rollback_restores_every_file_anywhere_and_the_index"]
T_PARAMS = ["tests/test_rules_params.py", "tests/test_params_mistakes.py", "tests/test_params_schema.py",
            "tests/test_rules_params_loader.py"]
T_IMP = ["tests/test_rules_importers.py", "tests/test_benchmarks.py"]
T_SCORING = ["tests/test_rules_scoring.py"]
T_RESULTS = ["tests/test_rules_results.py", "tests/test_bench_cli.py"]
T_VALID = ["tests/test_validation.py"]
T_PROXY = ["tests/test_fast_defaults.py", "tests/test_rules_options.py"]
T_RL_OPT = ["tests/test_rules_options.py"]
T_JUDGE = ["tests/test_bon_judge.py", "tests/test_judge_budget.py", "tests/test_rules_options.py"]
T_FID = ["tests/test_fidelity_release.py"]

PLANTS = [
    # --- the leaderboard: nothing counted, position A, the rows' order (LB6-LB8) -------------------------------------
    P("LBN1", LB, "    if not len(values):\n        return None, (None, None)",
      "    if not len(values):\n        return 0.0, (0.0, 0.0)", T_LB, "no pair counted: 0 with a [0, 0] CI"),
    P("LBN2", LB, "    macro = (None, (None, None))", "    macro = (0.0, (0.0, 0.0))", T_LB,
      "no domain counted: a macro accuracy of 0"),
    P("LBA1", LB, "    known = [r[\"picked_a\"] for r in rows if r.get(\"picked_a\") is not None]",
      "    known = [bool(r.get(\"picked_a\")) for r in rows]", T_LB, "the share over all rows (unknown as B)"),
    P("LBA2", LB, "    return _r4(sum(known) / len(known)) if known else None",
      "    return _r4(sum(known) / len(known)) if known else 0.5", T_LB, "a pointwise kind given 0.5 (no preference)"),
    P("LBO1", LB, "    return (STRATEGIES.index(s) if s in STRATEGIES else len(STRATEGIES.names()), s)",
      "    return (0, s)", T_LB, "strategies by name"),
    P("LBO2", LB, "    return (STRATEGIES.index(s) if s in STRATEGIES else len(STRATEGIES.names()), s)",
      "    return (STRATEGIES.index(s) if s in STRATEGIES else -1, s)", T_LB, "unknown strategies first"),
    P("LBO3", LB, "    keys = sorted(groups, key=lambda k: (k[0], _strategy_key(k[1])))",
      "    keys = sorted(groups, key=lambda k: (_strategy_key(k[1]), k[0]))", T_LB, "strategy first, then the RM"),
    # --- rounding scores that rank or compare (RES6) -----------------------------------------------------------------
    P("RND1", RETRIEVAL, "    scores = np.round(np.asarray(scores, dtype=np.float64), 6)",
      "    scores = np.asarray(scores, dtype=np.float64)", T_ROUND, "retrieval ranks unrounded scores"),
    P("RND2", RMS_JUDGES, "    return round(d, 6) if math.isfinite(d) else None", "    return d if math.isfinite(d) else None",
      T_ROUND, "a judge's log-ratio unrounded"),
    P("RND3", BASELINES, "        return [AnswerScore(round(float(s), 6), input_hash=input_hash(r, a))",
      "        return [AnswerScore(float(s), input_hash=input_hash(r, a))", T_ROUND, "the similarity baseline unrounded"),
    P("RND4", MIXTURE, "            out.append(AnswerScore(round(score, 6), input_hash=input_hash(refs[i], a)))",
      "            out.append(AnswerScore(score, input_hash=input_hash(refs[i], a)))", T_ROUND, "the mixture RM unrounded"),
    P("RND5", RETRIEVAL, "    scores = np.round(np.asarray(scores, dtype=np.float64), 6)",
      "    scores = np.round(np.asarray(scores, dtype=np.float64), 3)", T_ROUND,
      "retrieval rounds to 3 decimals (scores 1e-4 apart tied)"),
    # --- adjacent pairs under the tie policy (ADJ4) ------------------------------------------------------------------
    P("ADJP1", ADJ, "                                        pair_credits(by_group[(lo[\"rm\"], strategy)], p[\"tie_policy\"], credits))",
      "                                        pair_credits(by_group[(lo[\"rm\"], strategy)], \"strict\", credits))", T_ADJ,
      "the lower RM's pairs under strict whatever the policy"),
    P("ADJP2", ADJ, "            out[(*key, seen[key])] = float(c[0])", "            out[key] = float(c[0])", T_ADJ,
      "a repeated question overwrites its first pair"),
    P("ADJP3", ADJ, "        if len(c):\n            out[(*key, seen[key])] = float(c[0])",
      "        out[(*key, seen[key])] = float(c[0]) if len(c) else 0.0", T_ADJ, "a dropped tie shared as a 0"),
    # --- human evaluation (HE2, HE3) -----------------------------------------------------------------------------------
    P("HEG1", HE, "    gaps = [abs(c - r) for d in dims for c, r in zip(*paired(ratings, d))]",
      "    gaps = [c - r for d in dims for c, r in zip(*paired(ratings, d))]", T_HE,
      "signed per-item gaps (opposite signs cancel)"),
    P("HEG2", HE, "    general_gap = _r(item_gap) if item_gap is not None else aggregate_gap",
      "    general_gap = aggregate_gap", T_HE, "the gap of the means where the per-item gap is known"),
    P("HES1", HE, "            res = wilcoxon(chosen, rejected)", "            res = wilcoxon(chosen, rejected, alternative=\"greater\")",
      T_HE, "a one-sided Wilcoxon"),
    P("HES2", HE, "    d = d[d != 0]\n    if not len(d):", "    if not len(d):", T_HE,
      "rank-biserial keeps the zero differences (scipy's Wilcoxon drops them)"),
    P("HES3", HE, "    ranks = rankdata(np.abs(d))", "    ranks = rankdata(d)", T_HE, "ranks of the signed differences"),
    P("HES4", HE, "    alpha = krippendorff_alpha(m, \"ordinal\", list(range(SCALE[0], SCALE[1] + 1)))",
      "    alpha = krippendorff_alpha(m, \"interval\", list(range(SCALE[0], SCALE[1] + 1)))", T_HE,
      "interval alpha for the 1-5 ratings"),
    P("HES5", HE_STAGE, "    summaries = {HUMAN: analysis.summarize(human, *thresholds) if human else None,",
      "    summaries = {HUMAN: analysis.summarize(human + proxied, *thresholds) if human else None,", T_HE_STAGE,
      "proxy ratings pooled into the human statistics"),
    P("HES6", HE, "                            \"sd\": _r(np.std(v[s], ddof=1)) if len(v[s]) > 1 else None, \"n\": len(v[s])}",
      "                            \"sd\": _r(np.std(v[s])) if len(v[s]) > 1 else None, \"n\": len(v[s])}", T_HE,
      "the population sd"),
    # --- RL evaluation counts every question (RLE1) ----------------------------------------------------------------
    P("RLEV1", EVAL, "        r[\"score\"] = MIN_SCORE if r[\"judge_score\"] is None else r[\"judge_score\"]",
      "        r[\"score\"] = np.nan if r[\"judge_score\"] is None else r[\"judge_score\"]", T_RLE,
      "an unjudged answer left out (NaN) rather than scored the minimum"),
    P("RLEV2", EVAL, "                    \"unparseable_verdicts\": sum(r[\"valid\"] and r[\"judge_score\"] is None for r in mine),",
      "                    \"unparseable_verdicts\": sum(r[\"judge_score\"] is None for r in mine),", T_RLE,
      "an invalid answer counted as an unparseable verdict too"),
    P("RLEV3", EVAL, "    values = np.where(count > 0, total / np.maximum(count, 1), MIN_SCORE)",
      "    values = np.where(count > 0, total / np.maximum(count, 1), np.nan)", T_RLE,
      "a question a policy never answered left out, not scored the minimum"),
    # --- the halves (HALF5) ------------------------------------------------------------------------------------------------
    P("HALF10", HALVES, "        if q[\"split\"] not in UNSPLIT and share > 0:", "        if share > 0:", T_HALVES,
      "training questions split too"),
    P("HALF11", HALVES, "        if q[\"split\"] not in UNSPLIT and share > 0:", "        if q[\"split\"] not in UNSPLIT:",
      T_HALVES, "share 0: every question in the benchmark half, not both"),
    P("HALF12", HALVES, "    return [r for r in rows if halves.get(r[key], BOTH) in (half, BOTH)]",
      "    return [r for r in rows if halves.get(r[key], BENCHMARK) in (half, BOTH)]", T_HALVES,
      "an unknown question in the benchmark half only"),
    # --- the correlation's bootstrap (CORR1) -------------------------------------------------------------------------------
    P("BOOT1", RESAMPLE, "    return Resamples(weights, rng.integers(0, n_rms, size=(b, n_rms)))",
      "    return Resamples(weights, np.argsort(rng.random((b, n_rms)), axis=1))", T_CORR, "RMs drawn without replacement"),
    P("BOOT2", RESAMPLE, "    lo, hi = np.quantile(ok, [(1 - ci) / 2, (1 + ci) / 2])", "    lo, hi = np.quantile(ok, [1 - ci, ci])",
      T_CORR, "one-sided tails at 1 - ci and ci"),
    P("BOOT3", RESAMPLE, "    ok = values[np.isfinite(values)]\n    if not len(ok):",
      "    ok = np.nan_to_num(values)\n    if not len(ok):", T_CORR, "an undefined resample counted as 0"),
    P("BOOT4", RESAMPLE, "    return float(lo), float(hi), int(len(values) - len(ok))", "    return float(lo), float(hi), 0",
      T_CORR, "undefined resamples left out but not counted"),
    P("BOOT5", PAIRED, "    q_only = R.metric_draws(bd, dd, rms, p[\"rbo_p\"], None) if res.weights is not None else {}",
      "    q_only = R.metric_draws(bd, dd, rms, p[\"rbo_p\"], res.rm_index) if res.weights is not None else {}", T_CORR,
      "the CI over questions alone resamples the RMs too"),
    P("BOOT6", PAIRED, "    xd, yd = (_draws(s, rms, questions, res, predictor, p[\"bootstrap\"]) for s in (x, y))",
      "    xd, yd = (_draws(s, rms, questions, R.draw(stable_rng(seed, s.name), len(questions), len(rms), p[\"bootstrap\"]), predictor, p[\"bootstrap\"]) for s in (x, y))",
      T_CORR, "each benchmark of a paired test on its own resamples"),
    # --- where a tie or an order decides (CORR2) ----------------------------------------------------------------------
    P("ORD1", METRICS, "    values = settled(np.asarray(values, dtype=float))\n    return sorted",
      "    values = np.asarray(values, dtype=float)\n    return sorted", T_CORR, "strict_order on unrounded values"),
    P("ORD2", BATCH, "    order = np.lexsort((ties, -settled(values)), axis=-1)", "    order = np.lexsort((ties, -values), axis=-1)",
      T_CORR, "batched ranks on unrounded values"),
    P("ORD3", METRICS, "        hits = int(np.sum(settled(null - observed) >= 0))",
      "        hits = int(np.sum(settled(null) - settled(observed) >= 0))", T_CORR,
      "each side rounded instead of the difference"),
    P("ORD4", METRICS, "    return sorted(range(len(names)), key=lambda i: (-values[i], names[i]))",
      "    return sorted(range(len(names)), key=lambda i: (-values[i], i))", T_CORR, "ties by position, not RM name"),
    P("ORD5", METRICS, "        return settled(num / den)   # equal means", "        return num / den   # equal means", T_CORR,
      "resampled means unrounded (equal means a few ulps apart)"),
    P("ORD6", RESAMPLE, "    d = settled(dx - dy)   # X and Y", "    d = settled(dx) - settled(dy)   # X and Y", T_CORR,
      "the paired difference of two rounded sides"),
    # --- the null values beside every value (CORR3) ------------------------------------------------------------------
    P("NULL1", METRICS, "    return compute(-down, down, names, rbo_p)", "    return compute(down[::-1], down, names, rbo_p)",
      T_CORR, "reversed = the list read backwards, not the reverse ranking"),
    P("NULL2", METRICS, "                  float(np.nanmean(null)) if np.isfinite(null).any() else math.nan)",
      "                  float(np.nanmedian(null)) if np.isfinite(null).any() else math.nan)", T_CORR,
      "the random null as the permutations' median"),
    # --- who is correlated (CORR5) ------------------------------------------------------------------------------------
    P("WHO1", CSTAGE, "    excluded = set(p.get(\"exclude_rms\") or []) | controls | (set() if p.get(\"include_null_baselines\") else nulls)",
      "    excluded = set(p.get(\"exclude_rms\") or []) | controls", T_CSTAGE, "null baselines always correlated"),
    P("WHO2", CSTAGE, "    excluded = set(p.get(\"exclude_rms\") or []) | controls | (set() if p.get(\"include_null_baselines\") else nulls)",
      "    excluded = set(p.get(\"exclude_rms\") or []) | (set() if p.get(\"include_null_baselines\") else nulls)", T_CSTAGE,
      "positive controls among the exploratory contestants"),
    P("WHO3", CSTAGE, "if (e or {}).get(\"kind\") == \"mixture\"}", "if rm.startswith(\"mixture\")}", T_CSTAGE,
      "positive controls by name"),
    # --- the power model (PRIM5) ----------------------------------------------------------------------------------------
    P("POW2", POWER, "    prob = np.vectorize(lambda j: math.comb(int(j), k - 1))(np.arange(n)) / math.comb(n, k)",
      "    prob = np.vectorize(lambda j: math.comb(int(j), k))(np.arange(n)) / math.comb(n, k)", T_POWER,
      "best-of-k weights off by one"),
    P("POW3", POWER, "            \"mc_error\": round(math.sqrt(max(at * (1 - at), 1e-9) / sims), 3)",
      "            \"mc_error\": round(math.sqrt(max(at * (1 - at), 1e-9) / (sims - 1)), 3)", T_POWER,
      "Monte Carlo error over sims - 1"),
    P("POW4", POWER, "        mde = round(hi, 2)", "        mde = round(lo, 2)", T_POWER,
      "the last effect short of 80%, not the first reaching it"),
    P("POW5", POWER, "    if power[0.99] >= TARGET:", "    if power[0.99] > TARGET:", T_POWER, "exactly 80% at 0.99 not detectable"),
    P("POW6", POWER, "    return (hits / b if exact else (1 + hits) / (1 + b)), obs", "    return (1 + hits) / (1 + b), obs",
      T_POWER, "the randomised p on an enumeration"),
    # --- determinism (DET1, BINV4) -----------------------------------------------------------------------------------------
    P("DSEED1", DET, "    digest = hashlib.sha256(\"\\x1f\".join(names).encode(\"utf-8\")).digest()",
      "    digest = hashlib.sha256(\"\".join(names).encode(\"utf-8\")).digest()", T_DET,
      "names joined without a separator (('ab', 'c') draws as ('a', 'bc'))"),
    P("DSEED2", DET, "    return np.random.default_rng([int(seed), int.from_bytes(digest[:8], \"little\")])",
      "    return np.random.default_rng(int.from_bytes(digest[:8], \"little\"))", T_DET, "common.seed ignored"),
    P("DSEED3", DET, "    return np.random.default_rng([int(seed), int.from_bytes(digest[:8], \"little\")])",
      "    return np.random.default_rng([int(seed), hash(names) & 0xFFFFFFFF])", T_DET,
      "Python's salted hash of the names (another stream in every process)"),
    P("BINV9", SEQ_CLS, "DEFAULT_INVARIANT = False", "DEFAULT_INVARIANT = True", T_BINV, "batch-invariant by default"),
    P("BINV10", SEQ_CLS, "        plan = (lambda lengths: self.PLAN(lengths, self.device)) if self.invariant else None",
      "        plan = None", T_BINV, "batch_invariant recorded but the length-sorted batches run"),
    # --- release rollback (REL3) ------------------------------------------------------------------------------------------
    P("RBK1", TXN, "    if staged and head:   # what `git add` staged", "    if False:   # what `git add` staged", T_ROLLBACK,
      "the index left as the dead run staged it"),
    P("RBK2", TXN, "        if before.get(p) is None:\n            dst.unlink(missing_ok=True)\n            continue",
      "        if before.get(p) is None:\n            continue", T_ROLLBACK, "files the run created kept"),
    P("RBK3", TXN, "        if p in backed:\n            shutil.copy2(j.backup / p, dst)",
      "        if False:\n            shutil.copy2(j.backup / p, dst)", T_ROLLBACK,
      "a file edited before the run restored from HEAD (the user's edit lost)"),
    P("RBK4", TXN, "            if p not in before_ignored:\n                (root / p).unlink(missing_ok=True)",
      "            if p not in before_ignored and p.startswith(\"data/\"):\n                (root / p).unlink(missing_ok=True)",
      T_ROLLBACK, "ignored files removed under data/ only"),
    P("RBK5", TXN, "        dirs[:] = sorted(d for d in dirs if (rel + d) not in kept)", "        dirs[:] = sorted(dirs)",
      T_ROLLBACK, "the caches and run records removed too"),
    # --- params: sets and missing keys (PAR7, PAR8) ------------------------------------------------------------------
    P("SET1", RULES, "        if n in seen and n not in out:", "        if n in seen:", T_PARAMS,
      "a name listed three times reported twice"),
    P("SET2", RULES, "    return out + comparison_problems(p) + bon_k_problems(p)", "    return out + bon_k_problems(p)",
      T_PARAMS, "a comparison of a benchmark with itself accepted"),
    P("SET3", RULES, "          (\"correlation.exclude_rms\", \"a filter: each RM once\"), ",
      "", T_PARAMS, "one of the listed sets not checked (correlation.exclude_rms)"),
    P("SET4", RULES, "                nxt += [(f\"{where}.{k}\".lstrip(\".\"), v) for k, v in node.items()] if isinstance(node, dict) else []",
      "                nxt += [(where, v) for k, v in node.items()] if isinstance(node, dict) else []", T_PARAMS,
      "`*` expanded without the entry's name (the line names the wrong key)"),
    P("MISS1", PARAMS_INIT, "    return any(key == p or key.startswith(p + \".\") or p == \"params.yaml\" for p in prefixes)",
      "    return any(key.startswith(p) or p == \"params.yaml\" for p in prefixes)", T_PARAMS,
      "a stage's keys matched by a bare prefix (rl matches rl_x)"),
    P("MISS2", CHECK, "            out += missing_keys((raw or {}).get(name) or {}, f.annotation, path)",
      "            out += [] if name in (raw or {}) else [f\"{path}: missing\"]", T_PARAMS,
      "a group present but missing keys inside it passes"),
    P("MISS3", PARAMS_INIT, "    if complete:\n", "    if complete is True:\n", T_PARAMS,
      "a stage run (its keys only) never refused a missing key"),
    # --- importers (IMP1) --------------------------------------------------------------------------------------------
    P("IMPT1", PRISM, "        return Item(row.id, prompt, tuple(a for s, a in rated if s == top), tuple(a for s, a in rated if s < top),",
      "        return Item(row.id, prompt, tuple(a for s, a in rated if s == top)[:1], tuple(a for s, a in rated if s < top),",
      T_IMP, "PRISM: only the first top-rated response correct"),
    P("IMPT2", PRISM, "        if len(rated) < 2 or len({s for s, _ in rated}) < 2:", "        if len(rated) < 2:", T_IMP,
      "PRISM: all rated alike kept (nothing incorrect)"),
    P("IMPT3", PRISM, "            if t.get(\"turn\") != 0:\n                continue", "            if t.get(\"turn\") is None:\n                continue",
      T_IMP, "PRISM: every turn's responses, not the opening one's"),
    P("IMPT4", PRISM, "                prompt = prompt or content", "                prompt = content", T_IMP,
      "PRISM: the last user message of the opening turn"),
    P("IMPT5", PPE, "        if winner in TIES:", "        if winner == \"tie\":", T_IMP, "PPE: a both-bad tie not left out"),
    P("IMPT6", PPE, "            self.ties_dropped += 1\n", "", T_IMP, "PPE: ties left out but not counted"),
    P("IMPT7", GENERIC, "subset=row.text(\"subset\", required=False) or \"all\")", "subset=row.text(\"subset\", required=False))",
      T_IMP, "no subset: none, not all"),
    # --- scoring another benchmark (SC1) -----------------------------------------------------------------------------
    P("SCB1", SCORING, "                         \"subsets\": {s: estimate(v, policy, b, ci, seed, rm, name, strategy, s)",
      "                         \"subsets\": {s: estimate(v, policy, b, ci, seed, rm, name, strategy)", T_SCORING,
      "every subset on the strategy's seed"),
    P("SCB2", SCORING, "        out[strategy] = {**estimate(mine, policy, b, ci, seed, rm, name, strategy),",
      "        out[strategy] = {**estimate(mine, policy, b, ci, seed, name, strategy),", T_SCORING, "the seed not per RM"),
    P("SCB3", SCORING, "        out.update(accuracy=round(float(got.mean()), 4),",
      "        out.update(accuracy=round(float(got.sum() / len(rows)), 4),", T_SCORING,
      "accuracy over every item, the dropped ones as wrong"),
    P("SCB4", SCORING, "        lo, hi = np.quantile(means, [(1 - ci) / 2, (1 + ci) / 2])", "        lo, hi = np.quantile(means, [1 - ci, ci])",
      T_SCORING, "tails at 1 - ci and ci"),
    P("SCB5", SCORING, "                part = items[a:a + chunk_size]", "                part = items[a:a + chunk_size - 1]",
      T_SCORING, "a chunk one item short (items lost at each boundary)"),
    # --- results.json (RES9) ----------------------------------------------------------------------------------------
    P("RJS1", RESULTS, "SCHEMA_VERSION = 1", "SCHEMA_VERSION = 2", T_RESULTS, "another schema version"),
    P("RJS2", RESULTS, "class Results(BaseModel):\n    model_config = ConfigDict(extra=\"forbid\")",
      "class Results(BaseModel):\n    model_config = ConfigDict(extra=\"ignore\")", T_RESULTS, "a misnamed field dropped silently"),
    P("RJS3", RESULTS, "    return Results(schema_version=SCHEMA_VERSION, prbench_version=version(), **fields).model_dump()",
      "    return {\"schema_version\": SCHEMA_VERSION, \"prbench_version\": version(), **fields}", T_RESULTS,
      "the document not checked before it is written"),
    # --- ingest's errors (ING3) ---------------------------------------------------------------------------------------
    P("ING6", VALIDATE, "        problems.append((bad[0][0], bad[0][1] + more))", "        problems.extend(bad)", T_VALID,
      "one line per bad item of a list"),
    P("ING7", INGEST, "            bad = [DataError(raw.file, msg, row=raw.index, row_id=row_id, field=f or None)",
      "            bad = [DataError(raw.file, msg, row=raw.index + 1, row_id=row_id, field=f or None)", T_VALID,
      "rows counted from 1"),
    P("ING8", VALIDATE, "    _string(row.get(\"question\"), \"question\", problems, nonempty=True)",
      "    _string(row.get(\"question\"), \"question\", problems)", T_VALID, "a blank question accepted"),
    # --- the proxy's log-prob verdict (OPT4) -------------------------------------------------------------------------
    P("PXY1", PROXY, "            best = max(DIGITS, key=lambda d: (lp[d], -int(d)))", "            best = max(DIGITS, key=lambda d: (lp[d], int(d)))",
      T_PROXY, "a tie goes to the higher rating"),
    P("PXY2", PROXY, "            if all(math.isfinite(lp[d]) for d in DIGITS):", "            if any(math.isfinite(lp[d]) for d in DIGITS):",
      T_PROXY, "one finite digit enough (a NaN digit kept)"),
    P("PXY3", PROXY, "            best = max(DIGITS, key=lambda d: (lp[d], -int(d)))", "            best = min(DIGITS, key=lambda d: (lp[d], -int(d)))",
      T_PROXY, "the least likely digit"),
    # --- RL options (OPT5) ------------------------------------------------------------------------------------------
    P("RLO1", TRAINERS, "    if batch % mini or mini % micro:", "    if batch % mini:", T_RL_OPT,
      "micro_batch_size need not divide mini_batch_size"),
    P("RLO2", TRAINERS, "    mini = int(t.get(\"mini_batch_size\") or batch)", "    mini = int(t.get(\"mini_batch_size\") or micro)", T_RL_OPT,
      "mini_batch_size null: the micro-batch, not the whole batch"),
    P("RLO3", TRAINERS, "                lr_scheduler_type=t.get(\"lr_schedule\", \"constant\"), warmup_steps=0)",
      "                lr_scheduler_type=\"linear\", warmup_steps=0)", T_RL_OPT, "trl's own linear decay whatever lr_schedule says"),
    P("RLO4", TRAINERS, "    if t.get(\"lr_schedule\", \"constant\") not in LR_SCHEDULES:", "    if False:", T_RL_OPT,
      "an unknown lr_schedule handed to trl"),
    P("RLO5", TRAIN, "    return [(d, qs, ms) for d, (qs, ms) in sorted(out.items())]", "    return [(d, qs, ms) for d, (qs, ms) in out.items()]",
      T_RL_OPT, "per-domain policies in the order the data lists domains"),
    P("RLO6", ALGOS, "    return _group_relative(job, RLOOConfig, RLOOTrainer)",
      "    from trl import GRPOConfig, GRPOTrainer\n\n    return _group_relative(job, GRPOConfig, GRPOTrainer)", T_RL_OPT,
      "rloo trains with GRPO's trainer"),
    P("RLO7", TRAIN, "    return [seed + i for i in range(int(p.get(\"seeds\") or 1))]", "    return [seed * (i + 1) for i in range(int(p.get(\"seeds\") or 1))]",
      T_RL_OPT, "seeds common.seed, 2 x, 3 x ..."),
    # --- the rubric judge (OPT6) --------------------------------------------------------------------------------------
    P("JDG1", JUDGE, "            out.append(Verdict([int(2 if s >= self.well else 1 if s >= self.partly else 0)",
      "            out.append(Verdict([int(2 if s > self.well else 1 if s > self.partly else 0)", T_JUDGE,
      "a similarity exactly on a threshold one level down"),
    P("JDG2", JUDGE, "            best = (av @ sv.T).max(axis=1) if len(group) else np.zeros(0)",
      "            best = (av @ sv.T).mean(axis=1) if len(group) else np.zeros(0)", T_JUDGE,
      "an aspect against the answer's mean sentence, not its best"),
    P("JDG3", JUDGE, "        return [Verdict([p.value for p in ps] if all(p.valid for p in ps) else None,",
      "        return [Verdict([p.value if p.valid else 0 for p in ps] if any(p.valid for p in ps) else None,", T_JUDGE,
      "per_aspect: an unparseable aspect scored 0, the verdict kept"),
    P("JDG4", JUDGE, "        if len(values) != n or any(v not in (0, 1, 2) for v in values):",
      "        if any(v not in (0, 1, 2) for v in values):", T_JUDGE, "`all` mode: a list of the wrong length accepted"),
    P("JDG5", JUDGE, "        judge = cls(llm_factory(cfg[\"llm\"]), cfg.get(\"mode\", \"per_aspect\"), cfg[\"prompt\"], max_tokens=max_tokens,",
      "        judge = cls(llm_factory(cfg[\"llm\"]), cfg.get(\"mode\", \"all\"), cfg[\"prompt\"], max_tokens=max_tokens,", T_JUDGE,
      "no mode: all, not per_aspect"),
    P("JDG6", JUDGE, "        return sum(self.per_aspect) / (2 * len(self.per_aspect)) if self.valid and self.per_aspect else None",
      "        return sum(self.per_aspect) / len(self.per_aspect) if self.valid and self.per_aspect else None", T_JUDGE,
      "the 0-2 mean, not normalised to [0, 1]"),
    # --- the paper setting, rows 1-7 (FID) -------------------------------------------------------------------------------
    P("PAP1", RMS_JUDGES, "    text = (reply or \"\").strip().split(\"</think>\")[-1]", "    text = (reply or \"\").strip().split(\"</think>\")[0]",
      T_FID, "row 7: the verdict read before </think>"),
    P("PAP2", RMS_JUDGES, "        return -1.0\n    return 1.0", "        return -1.0\n    return 0.0", T_FID,
      "row 7: a parse failure no vote, not A"),
    P("PAP3", "tasks/models/rms/base.py", "    return question + context", "    return question + \"\\n\" + context", T_FID,
      "row 5: question and profile joined by a newline"),
    P("PAP4", "tasks/stages/profiles.py", "for i, item in enumerate(items, 1))", "for i, item in enumerate(items))", T_FID,
      "row 5: posts numbered from 0"),
    P("PAP5", "tasks/models/rms/encode.py", "    enc = tok(texts, truncation=True, max_length=max_length) if texts else {\"input_ids\": []}",
      "    enc = tok(texts, truncation=True, max_length=max_length, add_special_tokens=False) if texts else {\"input_ids\": []}",
      T_FID, "row 6: no second BOS"),
    P("PAP6", JUDGE, "    mean = float(np.mean(numbers)) if numbers else 0.0", "    mean = float(np.mean(numbers)) if numbers else None",
      T_FID, "row 3: a reply without a number unparseable, not 0"),
    P("PAP7", JUDGE, "in_list.group(1) if in_list else text)]", "text)]", T_FID,
      "row 3: the numbers anywhere in the reply, not inside its first list"),
    P("PAP8", "tasks/downstream/bon/sample.py", "REPLY_TEXT = {\"corrected\": str.strip, \"release\": str}",
      "REPLY_TEXT = {\"corrected\": str.strip, \"release\": str.strip}", T_FID, "row 2: the reply stripped"),
]

DPO = "tasks/models/rms/dpo.py"
NUMERICS = "tasks/core/numerics.py"
COMMITTED = "tasks/ops/committed_run.py"
T_DPO = ["tests/test_dpo.py"]
T_NUM = ["tests/test_numerics.py", "tests/test_warm.py"]
T_COMMITTED = ["tests/test_committed_run.py::test_make_copies_back_what_the_clones_run_wrote_and_nothing_else",
               "tests/test_committed_run.py::test_make_refuses_and_copies_nothing", "tests/test_rules_committed_run.py"]

PLANTS += [
    # --- DPO implicit rewards (docs/benchmarks.md#dpo-models-implicit-rewards) ------------------------------------------
    P("DPO1", DPO, "            reward = sums[0][i] - (sums[1][i] if len(sums) > 1 else 0.0)",
      "            reward = sums[0][i] + (sums[1][i] if len(sums) > 1 else 0.0)", T_DPO, "the reference added, not subtracted"),
    P("DPO2", DPO, "            out.append(reward if self.normalize == \"sum\" else reward / count if count else None)",
      "            out.append(reward if self.normalize == \"sum\" else reward / len(e.ids) if count else None)", T_DPO,
      "mean over every input token, not the answer's"),
    P("DPO3", DPO, "            out.append(reward if self.normalize == \"sum\" else reward / count if count else None)",
      "            out.append(reward if self.normalize == \"sum\" else reward / count if count else 0.0)", T_DPO,
      "an empty answer's mean 0, not none"),
    P("DPO4", DPO, "        self.normalize = entry.get(\"normalize\", \"sum\")", "        self.normalize = entry.get(\"normalize\", \"mean\")",
      T_DPO, "mean by default (reward-bench's reference-free avg)"),
    P("DPO5", DPO, "        stop = min(stop + (stop < len(upto)), len(e.ids))", "        stop = min(stop + 1, len(e.ids))", T_DPO,
      "the template's end-of-turn token scored with the answer"),
    P("DPO6", DPO, "                rows = logits[i, e.start - 1 - first:e.stop - 1 - first].float().log_softmax(-1)",
      "                rows = logits[i, e.start - first:e.stop - first].float().log_softmax(-1)", T_DPO,
      "each token scored by its own position's logits, not the one before"),
    # --- MKL and the pins (docs/determinism.md#numerics-pinned-before-torch-and-numpy-load) ----------------------------
    P("MKL1", NUMERICS, "MKL_PINS = {\"MKL_CBWR\": \"COMPATIBLE\", \"MKL_DYNAMIC\": \"FALSE\"}",
      "MKL_PINS = {\"MKL_CBWR\": \"AVX2,STRICT\", \"MKL_DYNAMIC\": \"FALSE\"}", T_NUM, "MKL's AVX2 branch (Intel only)"),
    P("MKL2", NUMERICS, "    return {**env, **MKL_PINS, **{var: threads for var in THREAD_VARS}}",
      "    return {**env, **(MKL_PINS if \"avx2\" in (flags or ()) else {}), **{var: threads for var in THREAD_VARS}}", T_NUM,
      "MKL pinned only where the CPU's flags are known and have AVX2"),
    P("MKL3", NUMERICS, "            replaced[var] = env.pop(var)", "            replaced[var] = env[var]", T_NUM,
      "off x86-64 a user's MKL_CBWR recorded but left in force"),
    P("PIN1", NUMERICS, "            replaced[var] = env[var]\n        env[var] = value",
      "            replaced[var] = env[var]\n        env.setdefault(var, value)", T_NUM, "a user's value wins over the pin"),
    P("PIN2", NUMERICS, "        if env.get(var) not in (None, value) and var != \"PRBENCH_TORCH_THREADS\":",
      "        if False:", T_NUM, "a replaced value not recorded"),
    P("PIN3", NUMERICS, "    values = wanted(str(env.get(\"PRBENCH_TORCH_THREADS\") or threads), capability, cpu[\"flags\"])",
      "    values = wanted(str(threads), capability, cpu[\"flags\"])", T_NUM, "an explicit PRBENCH_TORCH_THREADS ignored"),
    P("PIN4", NUMERICS, "    if not flags or not all(f in flags for f in OPENBLAS_NEEDS[env[\"OPENBLAS_CORETYPE\"]]):",
      "    if not flags:", T_NUM, "OpenBLAS forced onto Haswell on a CPU without FMA"),
    P("PIN5", NUMERICS, "FLOOR = (\"avx2\", \"fma\", \"f16c\", \"bmi1\", \"bmi2\", \"abm\", \"movbe\")",
      "FLOOR = (\"avx2\", \"fma\", \"f16c\", \"bmi1\", \"bmi2\", \"abm\")", T_NUM, "a CPU without MOVBE taken as at the floor"),
    P("PIN6", NUMERICS, "    if line and not env.get(SAID_ENV):", "    if line:", T_NUM, "the below-floor line said by every stage"),
    # --- make committed-run (docs/determinism.md#the-committed-run-make-committed-run) ---------------------------------
    P("CR1", COMMITTED, "    return any(path == p or path.startswith(p + \"/\") for p in RUN_PATHS)",
      "    return any(path.startswith(p) for p in RUN_PATHS)", T_COMMITTED,
      "a path sharing a run path's prefix (metrics_notes.md) taken as a run file"),
    P("CR2", COMMITTED, "    if other or stale:", "    if stale:", T_COMMITTED, "a run that changed other files copied back"),
    P("CR3", COMMITTED, "    other = [line[3:] for line in gitops.git(clone, \"status\", \"--porcelain\", \"--untracked-files=all\").splitlines()",
      "    other = [line[3:] for line in gitops.git(clone, \"status\", \"--porcelain\", \"--untracked-files=no\").splitlines()",
      T_COMMITTED, "a new file the run left outside the run paths unseen"),
    P("CR4", COMMITTED, "        if path not in theirs:\n            changes[path] = None",
      "        if path not in theirs:\n            continue", T_COMMITTED, "a run file the run no longer writes kept"),
    P("CR5", COMMITTED, "    dirty = [line[3:] for line in status if not _under(line[3:].split(\" -> \")[-1])]",
      "    dirty = [line[3:] for line in status if not _under(line[3:])]", T_COMMITTED,
      "a rename read by its whole old -> new line (a run file moved out of the run paths passes)"),
]

NOTE = "tasks/ops/release_note.py"
STRATS = "tasks/models/strategies.py"
T_NOTE = ["tests/test_releases.py::test_release_note_ranks_and_compares_with_the_previous_version",
          "tests/test_rules_release_note.py"]
T_GUARD = ["tests/test_downstream_guards.py", "tests/test_bon_run_metrics.py",
           "tests/test_rl.py::test_rl_eval_refuses_to_judge_on_the_training_split", "tests/test_rules_guards.py"]

PLANTS += [
    # --- a release's note (docs/releases.md) -----------------------------------------------------------------------
    P("NOTE1", NOTE, "    return sorted(mine, key=lambda r: (r[\"accuracy\"] is None, -(r[\"accuracy\"] or 0.0), r[\"rm\"]))",
      "    return sorted(mine, key=lambda r: (r[\"accuracy\"] is None, -(r[\"accuracy\"] or 0.0)))", T_NOTE,
      "equal accuracies in table order, not by name"),
    P("NOTE2", NOTE, "    return sorted(mine, key=lambda r: (r[\"accuracy\"] is None, -(r[\"accuracy\"] or 0.0), r[\"rm\"]))",
      "    return sorted(mine, key=lambda r: (-(r[\"accuracy\"] or 0.0), r[\"rm\"]))", T_NOTE, "an unscored RM ranked as 0"),
    P("NOTE3", NOTE, "else row[\"accuracy\"] - prev[\"accuracy\"])", "else prev[\"accuracy\"] - row[\"accuracy\"])", T_NOTE,
      "the change old minus new"),
    # --- where results go (docs/results.md) --------------------------------------------------------------------------
    P("RJS4", RESULTS, "    return Path(base) / safe(benchmark) / safe(name)", "    return Path(base) / safe(name)", T_RESULTS,
      "one folder per model, benchmarks mixed"),
    P("RJS5", RESULTS, "    safe = lambda s: re.sub(r\"[^\\w.+-]+\", \"_\", s).strip(\"._\") or \"_\"  # noqa: E731",
      "    safe = lambda s: re.sub(r\"[^\\w.+-]+\", \"_\", s) or \"_\"  # noqa: E731", T_RESULTS, "'..' kept as a folder name"),
    # --- rules across keys: bon_k and ppo's num_generations (docs/params.md) ------------------------------------------
    P("BONK1", RULES, "    ks = [2 ** e for e in range(int(min(max_k, n)).bit_length()) if 2 ** e <= min(max_k, n)]",
      "    ks = [2 ** e for e in range(int(max_k).bit_length()) if 2 ** e <= max_k]", T_PARAMS,
      "correlation.bon_k checked against bon.max_k only (a k above bon.n accepted)"),
    P("BONK2", RULES, "SKIP = {\"rl.train.num_generations\": lambda p: value(p, \"rl.algorithm\") == \"ppo\"}",
      "SKIP = {}", T_PARAMS, "ppo's unused num_generations held to batch_size"),
    # --- guards: the planner's splits, rl_eval on a trained split (docs/statistics.md#rl) -------------------------------
    P("GRD1", STRATS, "    missing = [s for s in splits if s not in built]", "    missing = [s for s in splits[:1] if s not in built]",
      T_GUARD, "only the first split checked for planner rubrics"),
    P("GRD2", EVAL, "    seen = [(rm, s) for rm in trained for s in manifests[rm][\"train\"][\"splits\"] if s in eval_splits]",
      "    seen = [(rm, s) for rm in trained for s in manifests[rm][\"train\"][\"splits\"][:1] if s in eval_splits[:1]]",
      T_GUARD, "a policy judged on its training split unless it is the first of each"),
    P("GRD3", EVAL, "    stale = [rm for rm, m in manifests.items() if m[\"status\"] == TRAINED and m[\"base\"] != base_id]",
      "    stale = []", T_GUARD, "a checkpoint of another base model judged"),
]
