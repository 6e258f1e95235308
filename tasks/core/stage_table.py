"""The stage table: every stage declared once. dvc.yaml is generated from it (`prbench dag --write`),
the in-process pipeline runs it in this order, flows read their inputs and params from it, and the
tests check against it. Every stage runs through the one generic flow (`python -m flows.stage <name>
[<key>]`, flows/stage.py), which calls the logic the entry names by dotted string (`run`, and `chunk` for
a stage whose chunks go to the task runner): the table imports none of it. A stage's code deps are not
listed here: they are read off the imports of the modules it runs (`Stage.code`, tasks/core/codedeps.py).
Artifact paths live in tasks/core/layout.py; a stage names which are its own.

Fields: `run` is the stage's logic, "module:function", called (params, [key,] inputs, out); its module
may hold the small functions that tell the generic flow what else differs (flows/stage.py lists them).
`inputs` are other stages' outputs the run function reads (by name); `deps` further data it
reads (folders, `${params.key}` paths); `params` the keys it reads — its DVC params and its Prefect
cache key, so a key missing here is a key the stage cannot see. Per-RM stages (`per_rm`) run once per
`scoring.rms` entry (a DVC foreach), `${key}` standing for the RM's name; rl_train once per name in the
`rl.rms` list (`${item}`): an RM RL does not train has no stage at all."""
from __future__ import annotations

from dataclasses import dataclass, field

from tasks.core import layout, rm_labels

KEY = "${key}"   # the RM's name in a per-RM stage (DVC's foreach key)
ITEM = "${item}"  # the same over a list (rl.rms): DVC's foreach gives a list's entries as ${item} only
LISTS = ("rl.rms",)   # the foreach params that are lists of names, not mappings
FLOW = "flows.stage"     # the one stage flow: `python -m flows.stage <name> [<key>]`
RUNNER = "flows.runner"  # where a chunked stage's chunks run (a Prefect task runner)


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    outputs: object                    # a layout dict, or (per RM) a function rm -> dict
    inputs: dict = field(default_factory=dict)
    deps: tuple = ()
    params: tuple = ()
    per_rm: bool = False
    schema: type | None = None         # the params group `<name>`'s model, for a stage that brings its own group
    plot_axes: dict = field(default_factory=dict)   # csv plot -> {x:, y:} for `dvc plots`
    tracked: tuple = ()                # outs kept in git (DVC `cache: false`), like metrics and plots: a clone
                                       # shows the last committed run at once, with no DVC remote
    foreach: str = "scoring.rms"       # per-key stages: the params mapping DVC fans out over (${key} = one name)
    run: str = ""                      # the logic: "module:function", called (params, [key,] inputs, out)
    chunk: str | None = None           # a chunked stage's per-chunk function: run gets `map_chunks` (flows/runner.py)
    ui: str | None = None              # the Prefect UI's table of its results: a flows/ui.py function, given the
                                       # rows of its module's `stage_rows(out)`
    fingerprint: bool = False          # per-RM: dvc.yaml's deps are one `<name>_inputs` file per RM, the hashes of
                                       # its shared inputs, code and params (benchmarks/scale.py: lock and status)
    extra_code: tuple = ()             # modules whose files it hashes as well (a fingerprint stage: its target's)

    def __post_init__(self):
        if ":" not in self.run:
            raise ValueError(f"stage {self.name}: run= must name its logic as 'module:function'")

    @property
    def key_arg(self) -> str:
        """The flow's argument naming one key of a per-key stage."""
        return "rm" if self.foreach in ("scoring.rms", *LISTS) else "benchmark"

    @property
    def token(self) -> str:
        """What stands for the key in dvc.yaml: ${key} over a mapping, ${item} over a list."""
        return ITEM if self.foreach in LISTS else KEY

    @property
    def code(self) -> tuple[str, ...]:
        """The modules a run of the stage executes: the generic flow, the logic the entry names, the runner
        of a chunked stage. Its code deps are the closure of their imports; no other stage's logic is in it."""
        named = [f.partition(":")[0] for f in (self.run, self.chunk, self.ui) if f]
        return tuple(dict.fromkeys([FLOW, *named, *([RUNNER] if self.chunk else []), *self.extra_code]))

    @property
    def cmd(self) -> str:
        """dvc.yaml's command: the generic flow on this stage (and ${key}, one RM or entry, when per key)."""
        return f"python -m {FLOW} {self.name}" + (f" {self.token}" if self.per_rm else "")

    def out(self, rm: str | None = None) -> dict:
        return self.outputs(rm if rm is not None else self.token) if self.per_rm else dict(self.outputs)

    def params_for(self, rm: str | None = None) -> list[str]:
        return [p.replace(self.token, rm) if rm is not None else p for p in self.params]


I, P, R, PA = layout.INGEST, layout.PROFILES, layout.RUBRICS, layout.PAIRS
LABELS = tuple(f"{g}.{k}" for g, keys in rm_labels.PARAMS.items() for k in keys)   # an RM's labels read these
SCORING_INPUTS = {"questions": I["questions"], "profile_context": P["profile_context"],
                  "inferred_rubrics": R["inferred_rubrics"]}   # what the strategies' contexts are built from
RM_DEPS = (layout.TRAIN_RM["model"], "prompts")                # the trained RM, judges' prompt files
EXPLAIN_INPUTS = {**SCORING_INPUTS, "selected_pairs": PA["selected_pairs"], "profiles": I["profiles"], "ratings": layout.HUMAN_EVAL["ratings"]}
EXPLAIN_BOARD = tuple(f"leaderboard.{k}" for k in ("split", "benchmark", "tie_policy", "bootstrap", "ci"))   # not the page's
ITEM_PATH = "${item.path}"
# The `bon` / `rl` keys each downstream stage reads: its cache key, and its dvc.yaml `params`, hold these
# only, so changing the bootstrap never resamples, the eval budget never retrains, adding an RM never re-judges.
BON_SAMPLE_PARAMS = ("policy_llm", "prompt", "system_prompt", "n", "temperature", "top_p", "max_tokens", "max_words",
                     "profile_k", "max_words_per_post", "splits", "domains", "questions_limit")
BON_JUDGE_PARAMS = ("judge",)
BON_SCORE_PARAMS = ("strategy",)
BON_REPORT_PARAMS = ("max_k", "bootstrap", "ci")
RL_PROMPT_KEYS = ("policy", "prompt", "system_prompt", "max_words", "profile_k", "max_words_per_post")
RL_TRAIN_PARAMS = ("algorithm", "strategy", "max_reward_failures", "seeds", "train", *RL_PROMPT_KEYS)
RL_EVAL_PARAMS = ("eval", *RL_PROMPT_KEYS)   # a per-key stage's own params entry's `path` (DVC's foreach item)

TABLE = (
    Stage("ingest", "LaMP-QA (hub or files) -> questions, profiles, reference pairs, quarantine",
          layout.INGEST, deps=("${ingest.path}",), params=("ingest", "common.seed"),   # seed: the halves
          run="tasks.stages.ingest:stage_run"),
    Stage("profiles", "retrieval: each user's past posts ranked for the question, the profile text RMs see",
          layout.PROFILES, inputs={"questions": I["questions"], "profiles": I["profiles"]},
          params=("common", "profiles"), run="tasks.stages.profiles:stage_run"),
    Stage("rubrics", "the planner: aspects a user expects, from the question and top posts only",
          layout.RUBRICS, inputs={"questions": I["questions"], "halves": I["halves"],
                                  "ranked_profile": P["ranked_profile"]},
          deps=("${rubrics.prompt}",), params=("common", "llms", "rubrics"),
          run="tasks.stages.rubrics:run"),
    Stage("pairs", "chosen / rejected answers (generated or reference), judged against the gold rubric",
          layout.PAIRS, inputs={"questions": I["questions"], "reference_pairs": I["pairs"], "halves": I["halves"],
                                "ranked_profile": P["ranked_profile"]},
          deps=("${pairs.chosen_prompt}", "${pairs.rejected_prompt}", "${pairs.judge.prompt}"),
          params=("common", "llms", "pairs", "train_rm.splits"),   # the selected pairs of those go to train_pairs
          run="tasks.stages.pairs:run"),
    Stage("generic_pairs", "the baseline benchmark: same chosen, a non-personalised rejected",
          layout.GENERIC_PAIRS, inputs={"questions": I["questions"], "selected_pairs": PA["selected_pairs"]},
          deps=("${generic_pairs.prompt}", "${pairs.judge.prompt}"),
          params=("common", "llms", "generic_pairs", "pairs.judge"),
          run="tasks.stages.generic_pairs:run"),
    Stage("train_rm", "the embedded default's trained, profile-aware RM (Bradley-Terry on the train pairs)",
          layout.TRAIN_RM, inputs={"train_pairs": PA["train_pairs"], **SCORING_INPUTS},
          params=("common", "train_rm", "scoring.splits"),   # train_rm.splits may not overlap the scored split
          run="tasks.stages.train_rm:run"),
    Stage("score", "one RM over the benchmarks x profile strategies: adding an RM runs only score@<it> + reports",
          layout.scores, inputs={"selected_pairs": PA["selected_pairs"], "generic_pairs": layout.GENERIC_PAIRS[
              "generic_pairs"], **SCORING_INPUTS}, deps=RM_DEPS, per_rm=True,
          params=("common", "llms", "scoring.splits", "scoring.per_domain_limit", "scoring.benchmarks",
                  "scoring.strategies", "scoring.generic_strategies", f"scoring.rms.{KEY}", "scale.chunk_size"),
          run="tasks.stages.score:run", chunk="tasks.stages.score:score_chunk", fingerprint=True),
    Stage("bench_score", "one `benchmarks:` entry through the list-wise scorer, each RM it lists: adding a "
                         "benchmark runs only bench_score@<it> + the reports", layout.bench_scores,
          deps=(ITEM_PATH, *RM_DEPS), per_rm=True, foreach="benchmarks",
          params=("common", "llms", f"benchmarks.{KEY}", "scoring.rms", "leaderboard.tie_policy",
                  "leaderboard.bootstrap", "leaderboard.ci", "scale.chunk_size"),
          run="tasks.stages.benchmarks.stage:stage_run"),
    Stage("leaderboard", "accuracy with bootstrap CIs per RM x strategy x domain, ties and invalid counted",
          layout.LEADERBOARD, deps=(layout.SCORES_DIR,),
          params=("common.seed", "scoring.rms", "scoring.benchmarks", "leaderboard", "llms", *LABELS),
          plot_axes={layout.LEADERBOARD["plot_data"]: {"template": "leaderboard", "x": "accuracy", "y": "rm"}},
          run="tasks.stages.leaderboard:run", ui="flows.ui:leaderboard"),
    Stage("human_eval", "the paper's validity check: humans (or an LLM proxy) rate both answers",
          layout.HUMAN_EVAL, inputs={"pairs": PA["selected_pairs"], "questions": I["questions"],
                                     "profile_context": P["profile_context"]},
          deps=("data/human_eval/input", "${human_eval.proxy_prompt}"), params=("common", "llms", "human_eval"),
          run="tasks.stages.human_eval.stage:run"),
    Stage("explain", "why an RM fails a user: per pair what each RM did and saw; the error analysis", layout.EXPLAIN,
          inputs=EXPLAIN_INPUTS, deps=(layout.SCORES_DIR,), run="tasks.stages.explain.stage:run", ui="flows.ui:explain",
          params=("common.seed", "common.fidelity", "scoring.rms", *EXPLAIN_BOARD, "explain")),
    Stage("bon_sample", "downstream Best-of-N: the policy writes N answers per test question",
          layout.BON_SAMPLE, inputs={"questions": I["questions"], "halves": I["halves"],
                                     "ranked_profile": P["ranked_profile"]},
          deps=("${bon.prompt}",), params=("common", "llms", *(f"bon.{k}" for k in BON_SAMPLE_PARAMS)),
          run="tasks.downstream.bon.sample:run"),
    Stage("bon_judge", "the rubric judge scores every distinct answer once (RM-independent)",
          layout.BON_JUDGE, inputs={"questions": I["questions"], "samples": layout.BON_SAMPLE["samples"]},
          deps=("${bon.judge.prompt}",), params=("common", "llms", *(f"bon.{k}" for k in BON_JUDGE_PARAMS)),
          run="tasks.downstream.bon.judge_stage:run"),
    Stage("bon_score", "one RM scores every BoN answer, like score", layout.bon_scores,
          inputs={"samples": layout.BON_SAMPLE["samples"], **SCORING_INPUTS}, deps=RM_DEPS, per_rm=True,
          params=("common", "llms", *(f"bon.{k}" for k in BON_SCORE_PARAMS), f"scoring.rms.{KEY}",
                  "scale.chunk_size", "bon.splits", "rubrics.splits"),   # a planner strategy needs rubrics for them
          run="tasks.downstream.bon.select:run", chunk="tasks.downstream.bon.select:score_chunk", fingerprint=True),
    Stage("bon_report", "best-of-k per RM, oracle and random lines, CIs, the scaling curve", layout.BON_REPORT,
          inputs={"samples": layout.BON_SAMPLE["samples"], "judged": layout.BON_JUDGE["judged"]},
          deps=(layout.BON_SCORES_DIR,),
          params=("common.seed", "common.fidelity", "scoring.rms", *(f"bon.{k}" for k in BON_REPORT_PARAMS)),
          run="tasks.downstream.bon.report:run", ui="flows.ui:bon"),
    Stage("rl_train", "downstream RL: a policy trained with one RM of rl.rms as its only reward; adding a "
                      "name to rl.rms trains only that RM", layout.rl_train,
          inputs={"ranked_profile": P["ranked_profile"], **SCORING_INPUTS}, deps=RM_DEPS, per_rm=True,
          foreach="rl.rms", params=("common", "llms", *(f"rl.{k}" for k in RL_TRAIN_PARAMS),
                                    f"scoring.rms.{ITEM}", "rubrics.splits"),
          plot_axes={layout.rl_train(ITEM)["plot_data"]: {"x": "step", "y": "reward_mean"}},
          run="tasks.downstream.rl.train:run"),
    Stage("rl_eval", "every trained policy and the untrained one answer the test questions; BoN's judge scores",
          layout.RL_EVAL, inputs={"questions": I["questions"], "halves": I["halves"],
                                  "ranked_profile": P["ranked_profile"]},
          deps=(layout.RL_POLICIES_DIR, "prompts"),
          params=("common", "llms", "rl.rms", *(f"rl.{k}" for k in RL_EVAL_PARAMS), "bon.judge"),
          run="tasks.downstream.rl.evaluate:run"),
    Stage("correlation", "does the benchmark ranking of RMs predict their downstream ranking?",
          layout.CORRELATION, inputs={name: m["per_question"] for name, m in layout.DOWNSTREAM.items()},
          deps=(layout.SCORES_DIR, layout.BENCH_SCORES_DIR, "data/external"),
          params=("common.seed", "scoring.rms", "scoring.benchmarks", "correlation", "bon.n", "bon.max_k", "llms", *LABELS),
          run="tasks.downstream.correlation.stage:run", ui="flows.ui:correlation"),
    Stage("report", "the run on one self-contained page: open report/index.html in a browser", layout.REPORT,
          deps=("data/leaderboard/leaderboard.parquet", "metrics/leaderboard.json",
                *(path for m in layout.DOWNSTREAM.values() for path in (*m["report"].values(), m["per_question"])),
                "data/correlation/correlation.parquet", "data/correlation/points.parquet", "metrics/correlation.json",
                "metrics/human_eval.json", "metrics/pairs.json", "metrics/generic_pairs.json", "metrics/ingest.json",
                "metrics/train_rm.json", *(path for name, path in layout.EXPLAIN.items() if name != "plot"),
                "metrics/scores", layout.BENCH_METRICS_DIR, I["questions"], I["pairs"], I["profiles"],
                "params-paper.yaml", "params-regenerate.yaml", *layout.REPORT_CODE_VERSION),
          params=(),   # every group but serve's own (_report_params, below): the page lists what differs
          tracked=(layout.REPORT["page"], layout.REPORT["pairs"]),
          run="tasks.ops.report.stage:run"),
)


NOT_ON_THE_PAGE = ("releases",)   # serve's settings: adding a watch rule must not make the report stale


def _report_params(table) -> tuple:
    """The report reads every params group (schema's and those stages bring) except NOT_ON_THE_PAGE."""
    from dataclasses import replace

    from tasks.core.params.schema_downstream import Root

    groups = [*Root.model_fields, *(s.name for s in table if s.schema is not None)]
    keep = tuple(dict.fromkeys(g for g in groups if g not in NOT_ON_THE_PAGE))
    return tuple(replace(s, params=keep) if s.name == "report" else s for s in table)


def _fingerprints(table) -> tuple:
    """Before each `fingerprint` stage, its `<name>_inputs` stage: the target's shared inputs, deps and code,
    its params with the whole scoring.rms for one RM's entry; one file per RM (tasks/stages/fingerprint.py)."""
    out = []
    for s in table:
        if s.fingerprint:
            out.append(Stage(f"{s.name}_inputs", f"{s.name}@<rm>'s shared inputs, code and params, hashed: one "
                             "file per RM, its one DVC dep", {"fingerprints": f"{layout.RM_INPUTS_DIR}/{s.name}"},
                             inputs=dict(s.inputs), deps=s.deps, extra_code=s.code,
                             params=tuple(dict.fromkeys(p.replace(f".{s.token}", "") for p in s.params)),
                             run="tasks.stages.fingerprint:run"))
        out.append(s)
    return tuple(out)


TABLE = _report_params(_fingerprints(TABLE))
STAGES = {s.name: s for s in TABLE}
GROUP_SCHEMAS = {s.name: s.schema for s in TABLE if s.schema is not None}   # params groups stages bring
ORDER = [s.name for s in TABLE]
PER_RM = [s.name for s in TABLE if s.per_rm]


def read_keys(names=None) -> list[str]:
    """The params keys the named stages (default: all) declare: what a run of them reads from the file."""
    return sorted({k for s in TABLE if names is None or s.name in names for k in s.params
                   if KEY not in k and ITEM not in k})


def get(name: str) -> Stage:
    from tasks.core.errors import ConfigError, did_you_mean

    if name not in STAGES:
        raise ConfigError(f"stage: {did_you_mean(name, STAGES)}")
    return STAGES[name]


def fan_keys(stage: "Stage", params: dict) -> list[str]:
    """The names a per-key stage runs for: the keys of its `foreach` params mapping (the names of a list)."""
    value = params
    for part in stage.foreach.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return sorted(value or {})


def resolve(dep: str, params: dict, rm: str | None = None, stage: "Stage | None" = None) -> str | None:
    """A declared dep as a path: `${group.key}` read from params (None when unset), `${key}` the RM,
    `${item.x}` field x of the stage's own foreach entry."""
    if rm is not None:
        if dep.startswith("${item.") and stage is not None:
            dep = "${" + f"{stage.foreach}.{rm}.{dep[len('${item.'):-1]}" + "}"
        dep = dep.replace(stage.token if stage is not None else KEY, rm)
    if not (dep.startswith("${") and dep.endswith("}")):
        return dep
    value = params
    for part in dep[2:-1].split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return None if value is None else str(value)


def used_params(params: dict, stage: str, rm: str | None = None) -> dict:
    """The params a stage reads, nested as in params.yaml: exactly its declared keys (its DVC params)."""
    from tasks.core.errors import ConfigError

    out: dict = {}
    for key in get(stage).params_for(rm):
        if key == "params.yaml":
            return params
        group, _, rest = key.partition(".")
        parts = [group, *(["rms", rest.removeprefix("rms.")] if group == "scoring" and rest.startswith("rms.")
                          else rest.split(".") if rest else [])]   # an RM's name may hold dots
        src, dst = params, out
        for i, part in enumerate(parts):
            if not isinstance(src, dict) or part not in src:
                if group == "scoring" and rm is not None and parts[1:2] == ["rms"] and i == 2:
                    raise ConfigError(f"scoring.rms.{rm}: no such RM in params")
                raise ConfigError(f"params: {'.'.join(parts[:i + 1])} is missing")
            src = src[part]
            if i < len(parts) - 1:
                dst = dst.setdefault(part, {})
        dst[parts[-1]] = src
    return out
