"""metrics/ingest.json's counts (docs/stages.md, ingest): quarantined ROWS (a row with two bad fields is one row,
its reasons counted per field), `limit_per_split` counting the rows KEPT (a bad row read first does not use up
the limit), per domain/split the MEAN profile items and aspects per question, RL prompt questions from the
second source only; `first_per_domain` keeps the first N of each domain, N included."""
from tasks.stages import ingest
from tests.conftest import ingest_params, make_row, write_json_rows

FILE = "Art_and_Entertainment_test.json"


def test_a_row_with_two_bad_fields_is_one_quarantined_row_with_two_reasons(tmp_path):
    rows = [make_row(0), make_row(1, question="", category=7), make_row(2)]
    write_json_rows(tmp_path / "data" / FILE, rows)
    res = ingest.ingest(ingest.resolve_sources(ingest_params(tmp_path / "data")), on_error="quarantine")
    m = ingest.ingest_metrics(res)
    assert len(res.quarantine) == 2 and m["quarantined_rows"] == 1
    assert m["quarantine_reasons"] == {"category": 1, "question": 1} and m["questions"] == 2


def test_the_limit_per_split_counts_the_rows_kept_not_the_rows_read(tmp_path):
    rows = [make_row(0, question=""), make_row(1), make_row(2), make_row(3)]
    write_json_rows(tmp_path / "data" / FILE, rows)
    res = ingest.ingest(ingest.resolve_sources(ingest_params(tmp_path / "data")), on_error="quarantine",
                        limit_per_split=2)
    assert [q["id"] for q in res.questions] == ["1_0_1", "1_0_2"]
    assert res.files[0]["rows"] == 2, "a file's rows are those kept"


def test_per_domain_split_means_are_per_question_and_rl_prompts_count_their_own_files_only():
    res = ingest.IngestResult(
        questions=[{"id": "a", "domain": "Art", "split": "test", "rubric_aspects": [1, 2, 3]},
                   {"id": "b", "domain": "Art", "split": "test", "rubric_aspects": [1]},
                   {"id": "c", "domain": "Art", "split": "train", "rubric_aspects": []}],
        profiles=[{"question_id": "a"}] * 6 + [{"question_id": "b"}] * 3,
        pairs=[{"domain": "Art", "split": "test"}] * 2,
        files=[{"file": "x", "rows": 2, "role": "benchmark"}, {"file": "y", "rows": 1, "role": "rl_prompts"},
               {"file": "z", "rows": 4, "role": "rl_prompts"}])
    m = ingest.ingest_metrics(res)
    assert m["per_domain_split"]["Art/test"] == {"questions": 2, "pairs": 2, "mean_profile_items": 4.5,
                                                "mean_aspects": 2.0}
    assert m["per_domain_split"]["Art/train"] == {"questions": 1, "pairs": 0, "mean_profile_items": 0.0,
                                                 "mean_aspects": 0.0}
    assert (m["questions"], m["profile_items"], m["pairs"], m["rl_prompt_questions"]) == (3, 9, 2, 5)


def test_first_per_domain_keeps_the_first_n_of_each_domain_in_order():
    rows = [{"id": i, "domain": d} for i, d in enumerate("AABABBA")]
    assert [r["id"] for r in ingest.first_per_domain(rows, 2)] == [0, 1, 2, 4]
    assert ingest.first_per_domain(rows, None) == rows and [r["id"] for r in ingest.first_per_domain(rows, 4)] == list(range(7))
