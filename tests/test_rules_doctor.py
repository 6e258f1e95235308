"""docs/determinism.md#checking-a-machine-prbench-doctor: `prbench doctor` exits 1 only on a real problem, each one
line. Below the floor (the CPU lacks AVX2: `line` says so) numpy and OpenBLAS run what they can, so their kernels
are no problem there, while torch's capability, a failed training and the hashes still are; the floor's line is
always first. A hash differs from the reference only as a problem when ALL the reference versions match."""
from tasks.ops.doctor import REFERENCE, problems

FLOOR = "prbench: this CPU (test) has no AVX2: below the numerics floor"
VERSIONS = {**REFERENCE["versions"], **REFERENCE["statistics_versions"]}


def _row(torch="AVX2", sha=None, stats=None, numpy="X86_V3", core="Haswell", capability="avx2"):
    return {"capability": capability, "torch": torch, "onednn": "AVX2", "numpy": numpy,
            "openblas": {"numpy": core, "scipy": core}, "sha256": sha or REFERENCE["sha256"],
            "statistics": stats or REFERENCE["statistics_sha256"], "seconds": 1.0}


def test_below_the_floor_numpy_and_openblas_kernels_are_not_problems_but_torch_and_hashes_are():
    baseline = _row(numpy="baseline", core="Nehalem")
    assert problems([baseline], FLOOR, VERSIONS) == [FLOOR], "the floor line alone: no kernel complaint"
    said = problems([_row(torch="DEFAULT", numpy="baseline", core="Nehalem")], FLOOR, VERSIONS)
    assert said[0] == FLOOR and len(said) == 2 and "torch reports DEFAULT" in said[1]
    said = problems([_row(sha="1" * 64, numpy="baseline", core="Nehalem")], FLOOR, VERSIONS)
    assert said[0] == FLOOR and len(said) == 2 and "pinned weights differ" in said[1]


def test_a_failed_training_keeps_the_floor_line_first():
    assert problems([{"capability": "avx2", "error": "boom"}], FLOOR, VERSIONS) == [
        FLOOR, "the pinned training failed: boom"]


def test_the_pinned_row_is_the_first_whatever_the_others_ran():
    rows = [_row(), _row(torch="AVX512", sha="2" * 64, stats="3" * 64, numpy="X86_V4", core="SkylakeX", capability="avx512"),
            {"capability": "default", "error": "killed"}]
    assert problems(rows, None, VERSIONS) == []
    assert "torch reports AVX512" in problems([_row(torch="AVX512")], None, VERSIONS)[0]
    assert "torch reports DEFAULT" in problems([_row(torch="DEFAULT")], None, VERSIONS)[0]


def test_a_hash_is_held_to_the_reference_only_when_every_reference_version_matches():
    for key in REFERENCE["versions"]:
        assert problems([_row(sha="1" * 64)], None, {**VERSIONS, key: "0.0"}) == [], key
    for key in REFERENCE["statistics_versions"]:
        assert problems([_row(stats="1" * 64)], None, {**VERSIONS, key: "0.0"}) == [], key
    assert len(problems([_row(sha="1" * 64, stats="1" * 64)], None, VERSIONS)) == 2
    assert problems([_row(sha="1" * 64)], None, {k: v for k, v in VERSIONS.items() if k != "trl"}) == [], \
        "a version not reported is not a match"
