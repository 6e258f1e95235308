"""A DPO entry in params.yaml through `prbench run` to the page, in a temp copy of the repo with tiny params
(tests/serve_project.py): a tiny random Llama policy scored against its reference runs every stage seq-cls runs
— the personalised leaderboard, `bench_score@rb2-demo` (list-wise, best-of-4), BoN selection (`bon_score@`) and
RL reward (`rl.rms`) — and the page, in headless Chromium, labels it an implicit reward with its reference."""
import subprocess

import pyarrow.parquet as pq
import pytest
import yaml

from tasks.core import layout
from tests.browser import browser_page, screenshot
from tests.serve_project import PRBENCH, env, make_repo
from tests.test_llm_transformers import build_tiny_llama
from tests.tiny_lm import tiny_causal_lm

RM = "dpo-tiny"


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_dpo_entry_runs_through_prbench_run_to_the_page(tmp_path, seed_prefect_home):
    policy = tiny_causal_lm(tmp_path / "policy", seed=0)
    reference = tiny_causal_lm(tmp_path / "reference", seed=1, like=policy)

    def add_dpo(params):
        params["scoring"]["rms"][RM] = {"kind": "dpo", "model": str(policy), "ref_model": str(reference),
                                        "max_length": 512, "batch_size": 8}
        params["benchmarks"]["rb2-demo"]["rms"].append(RM)
        params["rl"]["rms"] = [RM]   # the policy trained with the implicit reward as its only reward
        params["rl"]["policy"]["model"] = str(build_tiny_llama(tmp_path / "rl-policy", max_positions=4096,
                                                               own_pad=True))   # training pads with a token of its own
        params["rl"].update(profile_k=1, max_words_per_post=20)
        params["rl"]["train"].update(updates=1, response_length=8, train_layers=1)

    repo = make_repo(tmp_path / "repo", edit=add_dpo)
    home = seed_prefect_home(tmp_path / "home")
    proc = subprocess.run([*PRBENCH, "run"], cwd=repo, env=env(PREFECT_HOME=str(home)), capture_output=True,
                          text=True, timeout=1400)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    assert {f"score@{RM}", f"bon_score@{RM}", f"rl_train@{RM}", "bench_score@rb2-demo", "report"} <= set(lock)

    scores = pq.read_table(repo / layout.scores(RM)["scores"]).to_pylist()
    assert scores and {r["rm_kind"] for r in scores} == {"dpo"} and all(r["score_chosen"] is not None for r in scores)
    assert {r["rm_identity"].split("|")[1].split("@")[0] for r in scores} == {f"reference:{reference}"}
    bench = pq.read_table(repo / layout.bench_scores("rb2-demo")["scores"] / f"{RM}.parquet").to_pylist()
    assert len(bench) == 6 and all(len(r["scores_correct"]) == r["n_correct"] for r in bench), "list-wise, every answer"
    bon = pq.read_table(repo / layout.bon_scores(RM)["scores"]).to_pylist()
    assert bon and all(r["score"] is not None for r in bon), "BoN selects with the implicit reward"
    assert (repo / layout.rl_train(RM)["metrics"]).is_file(), "rl_train@ ran with the implicit reward"

    label = f"DPO vs {reference}"
    with browser_page() as (page, errors):
        page.goto((repo / "report/index.html").as_uri())
        head = page.locator("#leaderboard-table th[data-key=implicit_reward]")
        assert head.count() == 1 and head.inner_text().strip() == "implicit reward"
        cells = page.locator("#leaderboard-table tbody tr td[data-key=implicit_reward]")
        by_rm = {}
        for row in page.locator("#leaderboard-table tbody tr").all():
            cell = row.locator("td[data-key=implicit_reward]")
            if cell.count():   # the null baselines' folded summary row has no per-RM columns
                by_rm.setdefault(row.get_attribute("data-rm"), set()).add(cell.inner_text().strip())
        assert cells.count() and by_rm[RM] == {label}, by_rm
        assert all(v <= {"", "–", "-"} for rm, v in by_rm.items() if rm != RM), "only the DPO entry carries it"
        names = {t.strip() for t in page.locator(f"#leaderboard-table tbody tr[data-rm='{RM}'] td[data-key=rm]")
                 .all_inner_texts()}
        assert names == {f"{RM} (implicit reward)"}, names
        model = page.locator(f"#provenance tr[data-rm='{RM}']").inner_text()
        assert f"{policy} vs reference {reference}" in model, model
        assert page.locator(f"#rl tr[data-rm='{RM}']").count() == 1, "the RL section shows its policy"
        screenshot(page, "dpo-run-page")
        assert not errors, errors
