"""The nearest wrong rules of docs/rules.md, as one-line plants in product code, each with the fast tests that
must fail under it (tests/tools/plant_rules.py applies them one at a time). `rule` is the row's id in
docs/rules.md; `why` names the neighbour."""
from __future__ import annotations

from tests.tools.plants_base import P


PRECISION = "tasks/core/precision.py"
INVARIANT = "tasks/models/rms/invariant.py"
FINGERPRINT = "tasks/stages/fingerprint.py"
DVC_HASH = "tasks/core/dvc_hash.py"
DOCTOR = "tasks/ops/doctor.py"
TXN = "tasks/ops/release_txn.py"
SCORE_RM = "tasks/ops/release_score.py"
RELEASES = "tasks/ops/releases.py"
INGEST = "tasks/stages/ingest.py"
HALVES = "tasks/core/halves.py"
ADJ = "tasks/stages/adjacent.py"
CHANCE = "tasks/stages/chance.py"
REWARD = "tasks/downstream/rl/reward.py"
METRICS = "tasks/downstream/correlation/metrics.py"
PRIMARY = "tasks/downstream/correlation/primary.py"
YAML = "tasks/core/params/yaml_load.py"
CHECK = "tasks/core/params/check.py"
RULES = "tasks/core/params/rules.py"

BI = "tests/test_batch_invariant.py::"
T_PRECISION = [BI + "test_resolution_is_a_few_ulps_of_the_scores_magnitude",
               BI + "test_the_count_leaves_out_ties_and_invalid_rows_and_says_none_without_a_dtype",
               BI + "test_leaderboard_and_page_show_the_dtype_and_the_count_within_it", "tests/test_rules_precision.py"]
T_INVARIANT = ["tests/test_rules_invariant.py"]
T_FINGERPRINT = ["tests/test_lock_growth.py", "tests/test_rules_fingerprint.py"]
T_DOCTOR = ["tests/test_numerics.py::test_the_doctor_fails_only_on_a_real_problem", "tests/test_rules_doctor.py"]
T_RELEASE = ["tests/test_rules_release_recovery.py", "tests/test_releases.py", "tests/test_rules_release.py"]
T_INGEST = ["tests/test_validation.py", "tests/test_sources.py", "tests/test_rules_ingest.py"]
T_HALVES = ["tests/test_halves.py", "tests/test_rules_downstream.py", "tests/test_rules_halves.py"]
T_ADJ = ["tests/test_rules_tests.py", "tests/test_leaderboard.py", "tests/test_rules_leaderboard.py",
         "tests/test_rules_adjacent.py"]
T_CHANCE = ["tests/test_chance.py", "tests/test_rules_tests.py", "tests/test_rules_leaderboard.py"]
T_REWARD = ["tests/test_rules_downstream.py", "tests/test_rl.py"]
T_PERM = ["tests/test_rules_permutation.py", "tests/test_decisions.py", "tests/test_correlation_metrics.py",
          "tests/test_rules_metrics.py"]
T_PRIMARY = ["tests/test_rules_permutation.py", "tests/test_decisions.py", "tests/test_rules_tests.py"]
T_PARAMS = ["tests/test_rules_params.py", "tests/test_params_mistakes.py", "tests/test_params_schema.py",
            "tests/test_rules_params_loader.py"]

PLANTS = [
    # --- decided within the dtype's resolution (docs/statistics.md#leaderboard) ---------------------------------
    P("RES1", PRECISION, "return abs(chosen - rejected) <= resolution", "return abs(chosen - rejected) < resolution",
      T_PRECISION, "strictly inside the resolution (a margin exactly on it not counted)"),
    P("RES2", PRECISION, "resolution(dtype, max(abs(chosen), abs(rejected)))",
      "resolution(dtype, min(abs(chosen), abs(rejected)))", T_PRECISION,
      "the smaller score's magnitude (differs where the pair straddles a power of two)"),
    P("RES3", PRECISION, "math.frexp(abs(magnitude))[1] - 1", "math.frexp(abs(magnitude))[1]", T_PRECISION,
      "the ulp of the binade above ([2^e, 2^(e+1)) read as 2^(e+1))"),
    P("RES4", PRECISION, '"bfloat16": 7}', '"bfloat16": 8}', T_PRECISION,
      "bfloat16's mantissa with its implicit bit (8)"),
    P("RES5", PRECISION, "return abs(chosen - rejected) <= resolution(dtype, max(abs(chosen), abs(rejected)))",
      "return chosen - rejected <= resolution(dtype, max(abs(chosen), abs(rejected)))", T_PRECISION,
      "the signed margin (a wrong pair always 'within')"),
    P("RES6", PRECISION, "for r in rows if not r.get(\"invalid\") and not r.get(\"tie\"))", "for r in rows)",
      T_PRECISION, "invalid rows counted"),
    P("RES7", PRECISION, "if not any(r.get(\"score_dtype\") for r in rows):\n        return None",
      "if not any(r.get(\"score_dtype\") for r in rows):\n        return 0", T_PRECISION,
      "0 instead of no count where no model ran"),
    P("RES8", PRECISION, "ULPS = 8", "ULPS = 4", T_PRECISION, "another number of ulps"),
    # --- batch-invariant scoring (docs/determinism.md#batch-invariant-scoring) ----------------------------------
    P("BINV1", INVARIANT, "step = max(STEP, 2 ** (math.ceil(math.log2(length)) - 1) // grid)",
      "step = max(STEP, 2 ** math.ceil(math.log2(length)) // grid)", T_INVARIANT,
      "the octave above (steps twice as wide: up to 1/2 padding)"),
    P("BINV2", INVARIANT, "step = max(STEP, 2 ** (math.ceil(math.log2(length)) - 1) // grid)",
      "step = max(STEP, 2 ** (math.floor(math.log2(length)) - 1) // grid)", T_INVARIANT,
      "floor of log2 (the octave below: differs straddling a power of two)"),
    P("BINV3", INVARIANT, "if length <= FLOOR:", "if length < STEP:", T_INVARIANT,
      "no steps of 16 below 64 (the octave grid from the start)"),
    P("BINV4", INVARIANT, "return max(STEP, math.ceil(length / STEP) * STEP)", "return max(STEP, round(length / STEP) * STEP)",
      T_INVARIANT, "rounded to the nearest step (cuts an answer)"),
    P("BINV5", INVARIANT, "return max(1, min(MAX_ROWS, tokens // w)) if tokens else 1",
      "return max(1, tokens // w) if tokens else 1", T_INVARIANT, "no cap of 64 rows"),
    P("BINV6", INVARIANT, "GRID = {\"cpu\": 0, \"cuda\": 4}", "GRID = {\"cpu\": 4, \"cuda\": 4}", T_INVARIANT,
      "CPU padded to the GPU's buckets (not its exact length)"),
    P("BINV7", INVARIANT, "out += [(buckets[w][k:k + r], r, w) for k in range(0, len(buckets[w]), r)]",
      "out += [(buckets[w][k:k + r], len(buckets[w][k:k + r]), w) for k in range(0, len(buckets[w]), r)]",
      T_INVARIANT, "no fillers: the last micro-batch of a bucket has fewer rows"),
    P("BINV8", "tasks/models/rms/seq_cls.py", "encs = encs + encs[:1] * ((rows or n) - n)", "encs = encs",
      T_INVARIANT, "fillers dropped in the forward"),
    # --- per-RM fingerprints (docs/stages.md, score_inputs) ----------------------------------------------------
    P("FP1", DVC_HASH, "    if not p.is_dir():\n        return \"absent\"", "    if True:\n        return \"absent\"",
      T_FINGERPRINT, "a folder input (the trained RM, prompts/) hashed as absent: retraining never reruns scoring"),
    P("FP2", DVC_HASH, "    if p.is_file():\n        return file_md5(p)", "    if p.is_file():\n        return str(p.stat().st_size)",
      T_FINGERPRINT, "a file by its size, not its content"),
    P("FP3", FINGERPRINT, '"params": stages.used_params(params, target.name, key)',
      '"params": stages.used_params(params, f"{target.name}_inputs")', T_FINGERPRINT,
      "the inputs stage's params (every RM's entry) instead of its own"),
    P("FP4", FINGERPRINT, "return sorted({*data, *(c for c in code if any(", "return sorted({*data, *(c for c in [] if any(",
      T_FINGERPRINT, "code files left out"),
    P("FP5", FINGERPRINT, "data = [p for p in (stages.resolve(d, params) for d in data) if p]",
      "data = [p for p in (stages.resolve(d, params) for d in data[:1]) if p]", T_FINGERPRINT,
      "the declared deps (model folder, prompts) left out"),
    P("FP6", FINGERPRINT, "for stale in sorted(set(p.name for p in folder.iterdir()) - set(names)):",
      "for stale in []:", T_FINGERPRINT, "a removed RM's file kept"),
    P("FP7", "tasks/ops/lock_check.py", "            if held.get(path) != md5:", "            if held.get(path) is None:",
      ["tests/test_committed_run.py"], "a fingerprint the lock holds, whatever its md5, taken as fresh"),
    # --- prbench doctor (docs/determinism.md#checking-a-machine-prbench-doctor) ---------------------------------
    P("DOC1", DOCTOR, "if all(versions.get(k) == v for k, v in ref_versions.items()) and got != ref:",
      "if any(versions.get(k) == v for k, v in ref_versions.items()) and got != ref:", T_DOCTOR,
      "any reference version matching (not all) makes a hash difference a problem"),
    P("DOC2", DOCTOR, "if not line and pinned.get(\"numpy\") != numerics.NUMPY_PINNED:",
      "if pinned.get(\"numpy\") != numerics.NUMPY_PINNED:", T_DOCTOR,
      "numpy's kernels a problem below the floor too"),
    P("DOC3", DOCTOR, "        if not line and got != core:", "        if got != core:", T_DOCTOR,
      "OpenBLAS's core a problem below the floor too"),
    P("DOC4", DOCTOR, "return [*out, f\"the pinned training failed: {pinned['error']}\"]",
      "return [f\"the pinned training failed: {pinned['error']}\"]", T_DOCTOR, "the floor line dropped when training failed"),
    P("DOC5", DOCTOR, "    pinned = rows[0]\n    out = [line] if line else []", "    pinned = rows[-1]\n    out = [line] if line else []",
      T_DOCTOR, "the last capability's row read as the pinned one"),
    P("DOC6", DOCTOR, "if pinned[\"torch\"] != numerics.CAPABILITY.upper():", "if pinned[\"torch\"] == \"DEFAULT\":",
      T_DOCTOR, "only torch's default capability a problem (avx512 under the pins passes)"),
    # --- releases: registration, landed, recovery (docs/releases.md) -------------------------------------------
    P("REL1", RELEASES, "for r in reversed(found):", "for r in found:", T_RELEASE, "newest first"),
    P("REL2", RELEASES, "if (r.model, r.revision) not in seen:", "if r.model not in {m for m, _ in seen}:",
      T_RELEASE, "a known model's new revision not new"),
    P("REL3", RELEASES, "return known | {(m, s.get(\"revision\")) for m, s in state[\"models\"].items()}",
      "return known", T_RELEASE, "registered.json not read"),
    P("REL4", TXN, 'log = gitops.git(root, "log", "-n", "50", "--format=%B", ref, "--", check=False)',
      'log = gitops.git(root, "log", "-n", "1", "--format=%B", ref, "--", check=False)', T_RELEASE,
      "only the branch's last commit counts as landed"),
    P("REL5", TXN, "ref = j.branch or \"HEAD\"", "ref = \"HEAD\"", T_RELEASE, "landed looked for on HEAD, not the release branch"),
    P("REL6", TXN, "return f\"{TOKEN} {j.id}\" in log", "return TOKEN in log", T_RELEASE,
      "any release's commit counts as this one's"),
    P("REL7", SCORE_RM, "if tries >= RESCORE_TRIES:", "if tries > RESCORE_TRIES:", T_RELEASE,
      "4 runs in all before failed"),
    P("REL8", SCORE_RM, "and record.get(\"revision\") == release.revision and record.get(\"status\") == \"scored\")",
      "and record.get(\"revision\") == release.revision)", T_RELEASE,
      "an announced (not scored) record counts as already scored"),
    P("REL9", SCORE_RM, "    return (entry.get(\"model\") == release.model and entry.get(\"revision\") == release.revision\n            and",
      "    return (entry.get(\"model\") == release.model\n            and", T_RELEASE,
      "another revision of the model in params counts as already scored"),
    P("REL10", SCORE_RM, "        if skip is not None and (j.release.model, j.release.revision) == (skip.model, skip.revision):",
      "        if skip is not None and j.release.model == skip.model:", T_RELEASE,
      "a dead run of another revision of the model dropped as if it were this one"),
    # --- ingest's counts (docs/stages.md, metrics/ingest.json) -------------------------------------------------
    P("ING1", INGEST, "\"quarantined_rows\": len(bad_rows),", "\"quarantined_rows\": len(res.quarantine),", T_INGEST,
      "quarantined fields counted, not rows"),
    P("ING2", INGEST, "if limit_per_split is not None and kept >= limit_per_split:",
      "if limit_per_split is not None and raw.index >= limit_per_split:", T_INGEST,
      "the limit counts rows read (bad ones too), not rows kept"),
    P("ING3", INGEST, "m[\"mean_profile_items\"] = round(m.pop(\"profile_items\") / max(m[\"questions\"], 1), 2)",
      "m[\"mean_profile_items\"] = m.pop(\"profile_items\")", T_INGEST, "the total, not the mean per question"),
    P("ING4", INGEST, "\"rl_prompt_questions\": sum(f[\"rows\"] for f in res.files if f.get(\"role\") == \"rl_prompts\"),",
      "\"rl_prompt_questions\": sum(f[\"rows\"] for f in res.files),", T_INGEST, "every file's rows"),
    P("ING5", INGEST, "        if seen[r[\"domain\"]] <= limit:", "        if seen[r[\"domain\"]] < limit:", T_INGEST,
      "first_per_domain keeps limit - 1"),
    # --- split halves (docs/statistics.md#split-half-questions) ------------------------------------------------
    P("HALF1", "tasks/downstream/bon/sample.py",
      "pick_questions(halves.keep(everything, halves.read(inputs[\"halves\"]), halves.DOWNSTREAM), p)",
      "pick_questions(halves.keep(everything, halves.read(inputs[\"halves\"]), halves.BENCHMARK), p)", T_HALVES,
      "BoN samples the benchmark half"),
    P("HALF2", "tasks/downstream/bon/sample.py",
      "pick_questions(halves.keep(everything, halves.read(inputs[\"halves\"]), halves.DOWNSTREAM), p)",
      "pick_questions(everything, p)", T_HALVES, "BoN samples both halves"),
    P("HALF3", "tasks/downstream/rl/evaluate.py",
      "everything = halves.keep(everything, halves.read(inputs[\"halves\"]), halves.DOWNSTREAM)",
      "everything = halves.keep(everything, halves.read(inputs[\"halves\"]), halves.BENCHMARK)", T_HALVES,
      "RL evaluation answers the benchmark half"),
    P("HALF4", "tasks/downstream/rl/evaluate.py",
      "everything = halves.keep(everything, halves.read(inputs[\"halves\"]), halves.DOWNSTREAM)", "pass", T_HALVES,
      "RL evaluation answers both halves"),
    P("HALF5", "tasks/stages/pairs.py",
      "questions = halves.keep(questions, halves.read(inputs[\"halves\"]), halves.BENCHMARK)",
      "questions = halves.keep(questions, halves.read(inputs[\"halves\"]), halves.DOWNSTREAM)", T_HALVES,
      "pairs select the downstream half"),
    P("HALF6", HALVES, "n_down = min(int(share * len(ranked)), len(ranked) - 1)",
      "n_down = min(round(share * len(ranked)), len(ranked) - 1)", T_HALVES, "rounded to nearest, not down"),
    P("HALF7", HALVES, "n_down = min(int(share * len(ranked)), len(ranked) - 1)", "n_down = int(share * len(ranked))",
      T_HALVES, "no cap at n - 1 (a domain can lose its last scored question)"),
    P("HALF8", HALVES, "half.update({qid: DOWNSTREAM if i < n_down else BENCHMARK for i, qid in enumerate(ranked)})",
      "half.update({qid: BENCHMARK if i < n_down else DOWNSTREAM for i, qid in enumerate(ranked)})", T_HALVES,
      "the first of the order is the benchmark half"),
    P("HALF9", HALVES, "groups[(q[\"split\"], q[\"domain\"])].append(q[\"id\"])", "groups[q[\"split\"]].append(q[\"id\"])",
      T_HALVES, "split per split, not per (split, domain)"),
    # --- adjacent RMs (docs/statistics.md#leaderboard) -----------------------------------------------------------
    P("ADJ1", ADJ, "key=lambda r: (-r[\"accuracy\"], r[\"rm\"]))",
      "key=lambda r: (r[\"accuracy\"], r[\"rm\"]), reverse=True)",
      T_ADJ, "equal accuracies by name descending"),
    P("ADJ2", ADJ, "shared = sorted(set(a) & set(b))", "shared = sorted(set(a) | set(b))", T_ADJ,
      "pairs either counted (a pair one left out compared with a default)"),
    P("ADJ3", ADJ, "p = binomtest(up, up + down, 0.5).pvalue if up + down else 1.0",
      "p = binomtest(up, up + down, 0.5, alternative=\"greater\").pvalue if up + down else 1.0", T_ADJ,
      "one-sided sign test"),
    P("ADJ4", ADJ, "t[\"significant\"] = t[\"p_holm\"] is not None and t[\"p_holm\"] < alpha",
      "t[\"significant\"] = t[\"p_holm\"] is not None and t[\"p_holm\"] <= alpha", T_ADJ, "p (Holm) at alpha significant"),
    P("ADJ5", ADJ, "t[\"significant\"] = t[\"p_holm\"] is not None and t[\"p_holm\"] < alpha",
      "t[\"significant\"] = t[\"p\"] < alpha", T_ADJ, "the raw p, not Holm's"),
    P("ADJ6", ADJ, "micro = [r for r in rows if r[\"domain\"] == \"micro\" and r[\"accuracy\"] is not None]",
      "micro = [r for r in rows if r[\"domain\"] == \"macro\" and r[\"accuracy\"] is not None]", T_ADJ,
      "ranked by macro accuracy"),
    P("ADJ7", ADJ, "alpha = round(1 - float(p[\"ci\"]), 10)", "alpha = 0.05", T_ADJ, "alpha fixed, not 1 - leaderboard.ci"),
    # --- against chance ------------------------------------------------------------------------------------------
    P("CH1", CHANCE, "return n + 1 if 0.5 ** n * max(m, 1) >= alpha else n", "return n + 1 if 0.5 ** n * max(m, 1) > alpha else n",
      T_CHANCE, "m * 0.5^n <= alpha (equal passes)"),
    P("CH2", CHANCE, "t[\"above_chance\"] = t[\"p_holm\"] < alpha", "t[\"above_chance\"] = t[\"p_holm\"] <= alpha", T_CHANCE,
      "p (Holm) at alpha passes"),
    P("CH3", CHANCE, "binomtest(right, n, 0.5, alternative=\"greater\")", "binomtest(right, n, 0.5)", T_CHANCE,
      "two-sided binomial"),
    P("CH4", CHANCE, "right, wrong = values.count(1.0), values.count(0.0)", "right, wrong = values.count(1.0), len(values) - values.count(1.0)",
      T_CHANCE, "a half-credit tie counted wrong under `half`"),
    P("CH5", CHANCE, "if role((rms or {}).get(r[\"rm\"])) == CONTESTANT:", "if True:", T_CHANCE,
      "null baselines and positive controls among the contestants"),
    # --- RL: the reward change ---------------------------------------------------------------------------------
    P("RLC1", REWARD, "w = max(1, len(steps) // 4)", "w = max(1, round(len(steps) / 4))", T_REWARD,
      "a window rounded to nearest, not down"),
    P("RLC2", REWARD, "first = np.array([v for s in steps[:w] for v in s.values])",
      "first = np.array([np.mean(s.values) for s in steps[:w] if s.values])", T_REWARD,
      "the mean of the updates' means (each update weighted alike), not of the rollouts"),
    P("RLC3", REWARD, "\"excludes_zero\": bool(lo > 0 or hi < 0)}", "\"excludes_zero\": bool(lo >= 0 or hi <= 0)}", T_REWARD,
      "an interval touching zero excludes it"),
    P("RLC4", REWARD, "w = max(1, len(steps) // 4)", "w = max(1, len(steps) // 2)", T_REWARD, "halves, not quarters"),
    # --- the correlation's permutation p --------------------------------------------------------------------------
    P("PERM1", METRICS, "exact=math.factorial(len(bench)) <= n_resamples)", "exact=math.factorial(len(bench)) < n_resamples)",
      T_PERM, "exact only when n! is below the resamples (at n! = resamples: the randomised formula)"),
    P("PERM2", METRICS, "hits = int(np.sum(settled(null - observed) >= 0))", "hits = int(np.sum(settled(observed - null) >= 0))",
      T_PERM, "the other alternative (less)"),
    P("PERM3", METRICS, "hits = int(np.sum(settled(null - observed) >= 0))",
      "hits = int(np.sum(settled(np.abs(null) - abs(observed)) >= 0))", T_PERM, "two-sided"),
    P("PERM4", METRICS, "hits = int(np.sum(settled(null - observed) >= 0))", "hits = int(np.sum(settled(null - observed) > 0))",
      T_PERM, "a permutation as good as the data not counted"),
    P("PERM5", METRICS, "return hits / len(null) if exact else (hits + 1) / (len(null) + 1)",
      "return (hits + 1) / (len(null) + 1)", T_PERM, "the randomised formula where the p is exact"),
    P("PRIM1", PRIMARY, "            out = settled(null - observed) <= 0", "            out = settled(null - observed) < 0",
      T_PRIMARY, "alternative less: a flip equal to the data not extreme"),
    P("PRIM2", PRIMARY, "            out = settled(np.abs(null) - np.abs(observed)) >= 0",
      "            out = settled(null - np.abs(observed)) >= 0", T_PRIMARY, "two-sided on one tail"),
    # --- the params loader ---------------------------------------------------------------------------------------
    P("PAR1", YAML, "if name is not None and name in seen:", "if False:", T_PARAMS, "a repeated key kept silently (the last)"),
    P("PAR2", YAML, "out.append((here, seen[name], f\"{key.start_mark.line + 1}:{key.start_mark.column + 1}\"))",
      "out.append((here, seen[name], f\"{key.start_mark.line}:{key.start_mark.column}\"))", T_PARAMS,
      "0-based line:column"),
    P("PAR3", YAML, "            out += duplicate_keys(value, here)", "            pass", T_PARAMS,
      "repeats only at the top level (two RMs of one name under scoring.rms missed)"),
    P("PAR4", YAML, "    if data is None:\n        raise ConfigError", "    if data is None and False:\n        raise ConfigError",
      T_PARAMS, "an empty file read as {}"),
    P("PAR5", CHECK, "    if problems or not limits(f) or value is None:", "    if problems or not limits(f):", T_PARAMS,
      "null range-checked (a `*_limit: null` refused)"),
    P("PAR6", RULES, "        if rel == \"<=\" and mine > theirs:", "        if rel == \"<=\" and mine >= theirs:", T_PARAMS,
      "profile_k equal to profiles.k refused"),
    P("PAR7", RULES, "        elif rel == \"<\" and mine >= theirs:", "        elif rel == \"<\" and mine > theirs:", T_PARAMS,
      "partly equal to well allowed"),
    P("PAR8", RULES, "        other = next((o for o in others if value(p, o) is not None), others[-1])",
      "        other = others[-1]", T_PARAMS, "micro_batch_size held against batch_size even when mini_batch_size is set"),
    P("PAR9", CHECK, "    if plugin_check is not None and all(OUT_OF_RANGE in t for t in typed):",
      "    if plugin_check is not None and not typed:", T_PARAMS,
      "a range problem hides the names' problems (not all at once)"),
]

LB = "tasks/stages/leaderboard.py"
LISTWISE = "tasks/models/listwise.py"
SELECT = "tasks/downstream/bon/select.py"
BON_REPORT = "tasks/downstream/bon/report.py"
PAIRED = "tasks/downstream/correlation/resample.py"
HOLM = "tasks/stages/human_eval/analysis.py"
HEAD = "tasks/downstream/correlation/headline.py"
CARDS = "tasks/ops/report/headline.py"
FMT = "tasks/ops/report/fmt.py"
COMPARE = "tasks/ops/report/compare.py"
RB2 = "tasks/stages/benchmarks/rewardbench2.py"
RMB = "tasks/stages/benchmarks/rm_bench.py"
CSTAGE = "tasks/downstream/correlation/stage.py"
SCHEMA = "tasks/core/params/schema_downstream.py"

T_LB = ["tests/test_leaderboard.py", "tests/test_rules_leaderboard.py", "tests/test_rules_board.py"]
T_LISTWISE = ["tests/test_listwise.py", "tests/test_rules_scoring.py", "tests/test_benchmarks.py"]
T_BON = ["tests/test_bon_select.py", "tests/test_rules_downstream.py"]
T_RL = ["tests/test_rules_downstream.py", "tests/test_rl.py"]
T_TESTS = ["tests/test_rules_tests.py", "tests/test_rules_paired.py", "tests/test_decisions.py"]
T_DIFF = ["tests/test_diff_headline.py", "tests/test_rules_diff.py", "tests/test_rules_report.py"]
T_CARDS = ["tests/test_rules_headline.py", "tests/test_rules_report.py", "tests/test_chance.py"]
T_FMT = ["tests/test_rules_fmt.py"]
T_COMPARE = ["tests/test_rules_compare.py"]
T_RB2 = ["tests/test_rules_rb2.py", "tests/test_rb2_official.py"]
T_CORR = ["tests/test_rules_corr_stage.py", "tests/test_rules_tests.py", "tests/test_correlation_metrics.py"]
T_RANGES = ["tests/test_rules_params.py", "tests/test_rules_corr_stage.py"]

PLANTS += [
    # --- leaderboard credits and CIs -----------------------------------------------------------------------------
    P("LB1", LB, "out.append(0.5 if policy == \"half\" else 0.0)", "out.append(0.5)", T_LB, "a tie half right under strict"),
    P("LB2", LB, "        if _invalid(r):\n            out.append(0.0)", "        if _invalid(r):\n            continue", T_LB,
      "an invalid score dropped, not counted wrong"),
    P("LB3", LB, "            if policy != \"drop\":", "            if policy == \"strict\":", T_LB,
      "a tie under half dropped"),
    P("LB4", LB, "    lo, hi = np.quantile(means, [(1 - ci) / 2, (1 + ci) / 2])\n    return float(values.mean())",
      "    lo, hi = np.quantile(means, [1 - ci, ci])\n    return float(values.mean())", T_LB,
      "the CI's tails at 1 - ci and ci (a 90% interval for 95%)"),
    P("LB5", LB, "        macro = (float(np.mean([v.mean() for v in counted])), (float(lo), float(hi)))",
      "        macro = (float(np.concatenate(counted).mean()), (float(lo), float(hi)))", T_LB,
      "macro = the pooled (micro) mean"),
    # --- the list-wise scorer and RewardBench 2 -------------------------------------------------------------------
    P("LW1", LISTWISE, "        return {\"correct\": False, \"tie\": True, \"tie_credit\": chance(a, b), \"invalid\": False}",
      "        return {\"correct\": False, \"tie\": True, \"tie_credit\": 0.5, \"invalid\": False}", T_LISTWISE,
      "a tie worth 1/2 whatever how many share the top"),
    P("LW2", LISTWISE, "    if worst > best:", "    if worst >= best:", T_LISTWISE, "a tie at the boundary right"),
    P("LW3", LISTWISE, "    return 1.0 / math.comb(m + n, m)", "    return 1.0 / (m + n)", T_LISTWISE,
      "chance 1/(m+n) instead of 1/C(m+n, m)"),
    P("LW4", LISTWISE, "        return None if policy == \"drop\" else row[\"tie_credit\"] if policy == \"half\" else 0.0",
      "        return 0.0 if policy == \"drop\" else row[\"tie_credit\"] if policy == \"half\" else 0.0", T_LISTWISE,
      "a tie under drop counted wrong"),
    P("RB2a", RB2, "    return 1.0 / sum(x == top for x in scores) if c[0] == top else 0.0",
      "    return 1.0 if c[0] == top else 0.0", T_RB2, "full credit for a tie at the top"),
    P("RB2b", RB2, "    spread = max(c) - min(c) if len(c) > 1 else None", "    spread = max(c) - min(c) if len(c) > 1 else 0.0",
      T_RB2, "no spread read as a zero spread"),
    P("RB2c", RB2, "        known = [v for v in per.values() if v is not None]",
      "        known = [v if v is not None else 0.0 for v in per.values()]", T_RB2,
      "a subset with nothing scored counted 0 in the mean"),
    P("RMB1", RMB, "m += np.array([[c > i for i in r[\"scores_incorrect\"]] for c in r[\"scores_correct\"]], dtype=float)",
      "m += np.array([[c >= i for i in r[\"scores_incorrect\"]] for c in r[\"scores_correct\"]], dtype=float)", T_LISTWISE + ["tests/test_rules_importers.py"],
      "RM-Bench's matrix with >= (a tie right)"),
    # --- Best-of-N ------------------------------------------------------------------------------------------------
    P("BON1", SELECT, "/ (j + 1) for j in range(min(e, k - 1) + 1)) / total", "/ (e + 1) for j in range(min(e, k - 1) + 1)) / total",
      T_BON, "a tie split among all tied samples, not those in the subset"),
    P("BON2", SELECT, "return (1, float(score)) if usable(score) else (0, -float(judge))",
      "return (1, float(score)) if usable(score) else (0, float(judge))", T_BON,
      "among failures the judge's best, not worst"),
    P("BON3", SELECT, "        if best is None or s > best[1]:", "        if best is None or s >= best[1]:", T_BON,
      "first_k: the latest of equal scores"),
    P("BON4", BON_REPORT, "return [k for k in powers if k <= n], [k for k in powers if k > n]",
      "return [k for k in powers if k < n], [k for k in powers if k >= n]", T_BON + ["tests/test_bon_run_metrics.py"],
      "k = N skipped"),
    P("BON5", SELECT, "    pool = [v for i, v in judge.items() if method == \"expected\" or i < k]",
      "    pool = [v for i, v in judge.items() if method == \"expected\" or i <= k]", T_BON,
      "the random line's first_k pool one too wide"),
    # --- RL: failed rewards ----------------------------------------------------------------------------------------
    P("RLF1", REWARD, "                same[q] = min(r, same.get(q, r))", "                same[q] = max(r, same.get(q, r))", T_RL,
      "the best reward of the question, not the lowest"),
    P("RLF2", REWARD, "        step = min((r for r in rewards if r is not None), default=self.lowest)",
      "        step = self.lowest", T_RL, "the run's lowest before the step's"),
    P("RLF3", REWARD, "        if self.failures > self.max_failures:", "        if self.failures >= self.max_failures:", T_RL,
      "stops at the budget, not above it"),
    P("RLF4", REWARD, "float(finite.std()) if finite.size else None", "float(finite.std(ddof=1)) if finite.size > 1 else None",
      T_RL, "the sample SD"),
    P("RLF5", REWARD, "    return value / 10 if value is not None and math.isfinite(value) else 0.5",
      "    return value / 10 if value is not None and math.isfinite(value) else 0.0", T_RL + ["tests/test_fidelity_release.py"],
      "release fidelity: a failure 0, not the release's 0.5"),
    # --- the primary test --------------------------------------------------------------------------------------------
    P("PRIM3", PRIMARY, "    if n_pairs <= MAX_ENUMERATED and 2 ** n_pairs <= b:", "    if n_pairs <= MAX_ENUMERATED and 2 ** n_pairs < b:",
      T_PRIMARY, "enumerated only when 2^pairs is below B (not at it)"),
    P("PRIM4", PRIMARY, "    return observed, (hits / len(masks) if exact else (1 + hits) / (1 + len(masks)))",
      "    return observed, (1 + hits) / (1 + len(masks))", T_PRIMARY, "the randomised formula on an enumeration"),
    P("PRIM5", PRIMARY, "MIN_N = {\"spearman\": 4, \"kendall_tau_b\": 5, \"pearson\": 4}",
      "MIN_N = {\"spearman\": 4, \"kendall_tau_b\": 4, \"pearson\": 4}", T_PRIMARY + ["tests/test_primary_power.py"],
      "Kendall's interval from 4 RMs"),
    P("PRIM6", PRIMARY, "       \"pearson\": lambda r, n: 1 / math.sqrt(n - 3)}", "       \"pearson\": lambda r, n: 1 / math.sqrt(n - 2)}",
      T_PRIMARY + ["tests/test_primary_power.py"], "Pearson's SE 1/sqrt(n - 2)"),
    P("PRIM7", PRIMARY, "    if abs(r) >= 1:", "    if r >= 1:", T_PRIMARY, "r = -1 given an interval"),
    # --- paired comparison and Holm ----------------------------------------------------------------------------------
    P("PAIR1", PAIRED, "    p = float((1 + np.sum(ok <= 0)) / (1 + len(ok))) if len(ok) else None",
      "    p = float((1 + np.sum(ok < 0)) / (1 + len(ok))) if len(ok) else None", T_TESTS,
      "an equal resample counted as X better"),
    P("PAIR2", PAIRED, "    p = float((1 + np.sum(ok <= 0)) / (1 + len(ok))) if len(ok) else None",
      "    p = float(np.sum(ok <= 0) / len(ok)) if len(ok) else None", T_TESTS, "no +1 (a p of 0 possible)"),
    P("HOLM1", HOLM, "        running = max(running, min(1.0, (len(ran) - i) * p))", "        running = min(1.0, (len(ran) - i) * p)",
      T_TESTS, "not monotone (no running max)"),
    P("HOLM2", HOLM, "        running = max(running, min(1.0, (len(ran) - i) * p))",
      "        running = max(running, min(1.0, len(ran) * p))", T_TESTS, "Bonferroni"),
    P("HOLM3", HOLM, "        running = max(running, min(1.0, (len(ran) - i) * p))",
      "        running = max(running, min(1.0, (len(p_values) - i) * p))", T_TESTS, "the untested counted in m"),
    P("VERD1", METRICS, "    return SIGNIFICANT if p < level else NOT_SIGNIFICANT", "    return SIGNIFICANT if p <= level else NOT_SIGNIFICANT",
      T_CORR, "significant at p = alpha"),
    P("VERD2", METRICS, "    p = p_holm if p_holm is not None else p_value", "    p = p_value", T_CORR, "the raw p where Holm's exists"),
    P("VERD3", METRICS, "    return float((p.get(\"primary\") or {}).get(\"alpha\") or round(1 - float(p[\"ci\"]), 10))",
      "    return round(1 - float(p[\"ci\"]), 10)", T_CORR, "alpha from ci even where a primary names one"),
    P("MINRMS", METRICS, "    return f\"too few RMs (n={n} < {minimum})\" if n < minimum else None",
      "    return f\"too few RMs (n={n} < {minimum})\" if n <= minimum else None", T_CORR, "min_rms RMs too few"),
    # --- prbench diff's headline ---------------------------------------------------------------------------------------
    P("DIFF1", HEAD, "    return not ci[0] <= old <= ci[1]", "    return not ci[0] < old < ci[1]", T_DIFF,
      "on the bound counts as beyond noise"),
    P("DIFF2", HEAD, "    board.sort(key=lambda r: (r[\"null\"], not r[\"beyond\"], -abs(r[\"change\"] or 0), r[\"what\"]))",
      "    board.sort(key=lambda r: (not r[\"beyond\"], r[\"null\"], -abs(r[\"change\"] or 0), r[\"what\"]))", T_DIFF,
      "a null baseline beyond noise before a real RM's change"),
    P("DIFF3", HEAD, "    board.sort(key=lambda r: (r[\"null\"], not r[\"beyond\"], -abs(r[\"change\"] or 0), r[\"what\"]))",
      "    board.sort(key=lambda r: (r[\"null\"], not r[\"beyond\"], -(r[\"change\"] or 0), r[\"what\"]))", T_DIFF,
      "largest signed change first (drops before rises)"),
    P("DIFF4", HEAD, "MAX_LINES = 40", "MAX_LINES = 42", T_DIFF, "a budget of 42 (41 lines printed)"),
    # --- the headline cards ---------------------------------------------------------------------------------------------
    P("CARD1", CARDS, "        above_next = len(winners) == 1 and bool(test and test[\"significant\"])",
      "        above_next = bool(test and test[\"significant\"])", T_CARDS, "a tie at the top crowned"),
    P("CARD2", CARDS, "        item[\"holds\"] = item[\"above_chance\"] and above_next", "        item[\"holds\"] = item[\"above_chance\"] or above_next",
      T_CARDS, "either test enough to be best"),
    P("CARD3", CARDS, "    if need is not None and n < need:", "    if need is not None and n <= need:", T_CARDS,
      "exactly min_pairs said too few"),
    P("CARD4", CARDS, "        lo, hi = ranked[0], min((x for x in ranked if x[0] == ranked[-1][0]), key=lambda x: x[1])",
      "        lo, hi = ranked[0], ranked[-1]", T_CARDS, "the highest null baseline's name: the last by name on a tie"),
    # --- the page's numbers ----------------------------------------------------------------------------------------------
    P("FMT1", FMT, "    return DASH if p is None else \"< 0.001\" if p < 0.001 else f\"{p:.3f}\"",
      "    return DASH if p is None else \"< 0.001\" if p <= 0.001 else f\"{p:.3f}\"", T_FMT, "0.001 shown as < 0.001"),
    P("FMT2", FMT, "    if n is not None and value in (0, 1):", "    if n is not None and value == 1:", T_FMT,
      "all wrong not said"),
    P("FMT3", FMT, "    return f\"{100 * x:+.{digits}f} pp\" if percent else f\"{x:+.{digits}f}\"",
      "    return f\"{100 * x:.{digits}f} pp\" if percent else f\"{x:+.{digits}f}\"", T_FMT, "a rise unsigned"),
    P("CMP1", COMPARE, "    return {rm: 1 + sum(b > a for b in known.values()) for rm, a in known.items()}",
      "    return {rm: 1 + sum(b >= a for b in known.values()) - 1 for rm, a in known.items()}", T_COMPARE,
      "dense-ish ranks: ties share the lower place"),
    P("CMP2", COMPARE, "    flag = beyond_noise(old, ci) if old != new else None", "    flag = beyond_noise(old, ci)", T_COMPARE,
      "an unchanged value given a verdict"),
    # --- ranges checked by the stages themselves ------------------------------------------------------------------------
    P("RNG1", CSTAGE, "p[\"min_rms\"] < 3:", "p[\"min_rms\"] < 2:", T_RANGES, "min_rms 2 accepted by the stage"),
    P("RNG2", SCHEMA, "    rbo_p: float = F(0.9, \"RBO persistence\", gt=0, lt=1)", "    rbo_p: float = F(0.9, \"RBO persistence\", gt=0, le=1)",
      T_RANGES, "rbo_p = 1 accepted"),
]

HE = "tasks/stages/human_eval/analysis.py"
SIDES = "tasks/downstream/correlation/sides.py"
METHODS = "tasks/downstream/correlation/methods.py"
POWER = "tasks/downstream/correlation/power.py"
STRATS = "tasks/models/strategies.py"
OPS_PARAMS = "tasks/ops/params.py"

T_HE = ["tests/test_human_eval_stats.py", "tests/test_human_eval_parity.py", "tests/test_rules_human_eval.py"]
T_SIDES = ["tests/test_rules_sides.py", "tests/test_rules_methods.py", "tests/test_rules_paired.py"]
T_GUARDS = ["tests/test_rules_guards.py", "tests/test_leakage.py", "tests/test_params_mistakes.py", "tests/test_params_schema.py"]

PLANTS += [
    P("HE1", HE, "    elif general_gap > general_gap_max:", "    elif general_gap >= general_gap_max:", T_HE,
      "a general gap equal to the maximum fails"),
    P("HE2", HE, "    elif personal_gap < personal_gap_min:", "    elif personal_gap <= personal_gap_min:", T_HE,
      "a personal gap equal to the minimum fails"),
    P("HE3", HE, "    personal_gap = _r(pc - pr) if pc is not None and pr is not None else None",
      "    personal_gap = _r(abs(pc - pr)) if pc is not None and pr is not None else None", T_HE,
      "the personal gap's size, not chosen minus rejected (a rejected that fits better passes)"),
    P("SIDE1", SIDES, "            return float(min(np.mean(v) for v in by_domain.values()))",
      "            return float(min(min(v) for v in by_domain.values()))", T_SIDES,
      "worst domain = the lowest single question, not the lowest domain mean"),
    P("SIDE2", SIDES, "            return np.nanmin(np.stack(per_domain), axis=0)",
      "            return np.nanmean(np.stack(per_domain), axis=0)", T_SIDES,
      "per resample the mean of the domain means, not the lowest"),
    P("METH1", METHODS, "    k = p.get(\"bon_k\") or max(r[\"k\"] for r in rows)", "    k = p.get(\"bon_k\") or min(r[\"k\"] for r in rows)",
      T_SIDES, "bon_k null: the smallest k"),
    P("POW1", POWER, "    return float(np.mean(simulate(d, [effect], sims, flips, seed)[effect] < d.alpha))",
      "    return float(np.mean(simulate(d, [effect], sims, flips, seed)[effect] <= d.alpha))",
      ["tests/test_rules_power.py"], "power counts p = alpha as a rejection"),
    P("GUARD1", STRATS, "    if strategy in EVALUATION_ONLY:\n        raise ConfigError(f\"{key}: '{strategy}' is evaluation-only",
      "    if strategy in EVALUATION_ONLY and key == \"correlation.strategy\":\n        raise ConfigError(f\"{key}: '{strategy}' is evaluation-only",
      T_GUARDS, "the gold rubric refused for the correlation only (BoN, RL, train_rm take it)"),
    P("GUARD2", OPS_PARAMS, "    both = sorted(set(p[\"train_rm\"][\"splits\"]) & set(p[\"scoring\"][\"splits\"]))",
      "    both = sorted(set(p[\"train_rm\"][\"splits\"]) & set(p[\"scoring\"][\"splits\"]) - {\"test\"})", T_GUARDS,
      "training on the scored test split allowed"),
]

PLANTS += [
    P("PAR10", "tasks/core/params/__init__.py", "key = (str(path.resolve()), st.st_mtime_ns, st.st_size,",
      "key = (str(path.resolve()), st.st_size,", T_PARAMS, "a checked file remembered by path and size only"),
    P("RES9", PRECISION, "    return \", \".join(sorted({r[\"score_dtype\"] for r in rows if r.get(\"score_dtype\")})) or None",
      "    return next((r[\"score_dtype\"] for r in rows if r.get(\"score_dtype\")), None)", T_PRECISION,
      "the first row's dtype for a table of several"),
]

JUDGES = "tasks/models/rms/judges.py"
PLANTS += [
    P("JP1", JUDGES, "        key = \"\\x1f\".join((str(self.seed), p.question_id, p.question, p.chosen, p.rejected))",
      "        key = \"\\x1f\".join((str(self.seed), p.question))", ["tests/test_judge_position.py"],
      "the A/B coin keyed by the question only (two pairs of one question always placed alike)"),
    P("JP2", JUDGES, "            votes = [-pref if swap else pref for pref, swap in shown]",
      "            votes = [pref for pref, swap in shown]", ["tests/test_judge_position.py", "tests/test_listwise.py"],
      "the position not folded out (a verdict for A always counted for chosen)"),
    P("BM1", METHODS, "    rows = [r for r in _read(\"bon\", path, BON_COLUMNS) if r[\"method\"] == p[\"bon_method\"]]",
      "    rows = [r for r in _read(\"bon\", path, BON_COLUMNS) if r[\"method\"] == \"expected\"]", T_SIDES,
      "correlation.bon_method first_k read as expected"),
    P("ONERR", INGEST, "    if fatal or (errors and on_error == \"fail\"):", "    if fatal or errors:", T_INGEST,
      "ingest.on_error: quarantine fails like fail"),
]

# the rows of the report page, the importers, the options and the rest proven later (one module each, kept short)
from tests.tools.rule_plants_rows import PLANTS as _ROWS  # noqa: E402
from tests.tools.rule_plants_page import PLANTS as _PAGE  # noqa: E402

PLANTS += _ROWS + _PAGE
