"""Statistics of one annotator kind's ratings (human or LLM proxy, never pooled): mean ± sd per
dimension and domain, Wilcoxon signed-rank chosen vs rejected with the matched-pairs rank-biserial
effect size (p-values raw and Holm-corrected over the four dimensions), Krippendorff's alpha
between annotators, and the parity verdict beside the paper. The general-quality gap is the mean
per-item |chosen - rejected|, so gaps of opposite sign on different items cannot cancel.
p-values keep full precision (JSON writes 3e-12, never a rounded 0.0)."""
from __future__ import annotations

import math
import warnings
from collections import defaultdict

import numpy as np

from tasks.stages.human_eval import DIMENSIONS, GENERAL, PAPER, PERSONAL, SCALE, SIDES


def _r(x):
    return None if x is None or not math.isfinite(x) else round(float(x), 4)


def item_means(ratings: list[dict]) -> dict[tuple, float]:
    """(item_id, side, dimension) -> mean over annotators: the unit every test below works on."""
    acc = defaultdict(list)
    for r in ratings:
        if r["score"] is not None:
            acc[(r["item_id"], r["side"], r["dimension"])].append(r["score"])
    return {k: float(np.mean(v)) for k, v in sorted(acc.items())}


def describe(ratings: list[dict]) -> dict:
    """{dimension: {domain | "all": {side: {mean, sd, n}}}} over item means."""
    means, domain = item_means(ratings), {r["item_id"]: r["domain"] for r in ratings}
    out = {}
    for dim in DIMENSIONS:
        groups = defaultdict(lambda: defaultdict(list))
        for (item, side, d), m in means.items():
            if d == dim:
                groups["all"][side].append(m)
                groups[domain[item]][side].append(m)
        out[dim] = {g: {s: {"mean": _r(np.mean(v[s])) if v[s] else None,
                            "sd": _r(np.std(v[s], ddof=1)) if len(v[s]) > 1 else None, "n": len(v[s])}
                        for s in SIDES} for g, v in sorted(groups.items())}
    return out


def paired(ratings: list[dict], dim: str) -> tuple[np.ndarray, np.ndarray]:
    """Item means of chosen and of rejected, over the items with both rated."""
    means = item_means(ratings)
    items = sorted({i for (i, s, d) in means if d == dim})
    both = [i for i in items if (i, "chosen", dim) in means and (i, "rejected", dim) in means]
    return (np.array([means[(i, "chosen", dim)] for i in both]), np.array([means[(i, "rejected", dim)] for i in both]))


def rank_biserial(chosen, rejected) -> float | None:
    """Matched-pairs rank-biserial r = (W+ - W-) / (W+ + W-), zero differences dropped as in
    scipy's default Wilcoxon: +1 = every chosen answer rated higher."""
    from scipy.stats import rankdata

    d = np.asarray(chosen, float) - np.asarray(rejected, float)
    d = d[d != 0]
    if not len(d):
        return None
    ranks = rankdata(np.abs(d))
    return float((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())


def signed_rank(chosen, rejected) -> dict:
    from scipy.stats import wilcoxon

    n, nonzero = len(chosen), int(np.count_nonzero(np.asarray(chosen) - np.asarray(rejected)))
    out = {"n": n, "nonzero": nonzero, "statistic": None, "p_value": None, "rank_biserial": None}
    if nonzero:
        with warnings.catch_warnings():   # small-sample notes; n is reported beside the result
            warnings.simplefilter("ignore")
            res = wilcoxon(chosen, rejected)
        out.update(statistic=_r(res.statistic), p_value=_p(res.pvalue),
                   rank_biserial=_r(rank_biserial(chosen, rejected)))
    return out


def _p(x):
    """A p-value as computed: rounding would print a tiny one as 0."""
    return None if x is None or not math.isfinite(x) else float(x)


def holm(p_values: dict[str, float | None]) -> dict[str, float | None]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1) over the tests that ran."""
    ran = sorted((p, k) for k, p in p_values.items() if p is not None)
    out, running = dict.fromkeys(p_values), 0.0
    for i, (p, k) in enumerate(ran):
        running = max(running, min(1.0, (len(ran) - i) * p))
        out[k] = running
    return out


def wilcoxon_all(ratings: list[dict]) -> dict:
    """signed_rank per dimension, plus `p_holm`: corrected for testing the four dimensions at once."""
    tests = {d: signed_rank(*paired(ratings, d)) for d in DIMENSIONS}
    for d, adjusted in holm({d: t["p_value"] for d, t in tests.items()}).items():
        tests[d]["p_holm"] = adjusted
    return tests


def mean_item_gap(ratings: list[dict], dims) -> float | None:
    """Mean over items and dimensions of |chosen - rejected| (item means over annotators)."""
    gaps = [abs(c - r) for d in dims for c, r in zip(*paired(ratings, d))]
    return float(np.mean(gaps)) if gaps else None


def krippendorff_alpha(matrix, level: str, value_domain=None) -> float | None:
    """alpha of a coders × units matrix (nan = not rated); None where it is undefined
    (fewer than two coders on any unit, or a single value used throughout)."""
    import krippendorff

    m = np.asarray(matrix, float)
    if m.shape[0] < 2 or not (np.sum(~np.isnan(m), axis=0) >= 2).any():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = krippendorff.alpha(reliability_data=m, level_of_measurement=level, value_domain=value_domain)
    except (ValueError, ZeroDivisionError):
        return None
    return _r(a)


def agreement(ratings: list[dict], dim: str) -> dict:
    """Ordinal alpha between annotators; units are (item, answer) pairs."""
    rs = [r for r in ratings if r["dimension"] == dim and r["score"] is not None]
    coders = sorted({r["annotator"] for r in rs})
    units = sorted({(r["item_id"], r["side"]) for r in rs})
    m = np.full((len(coders), len(units)), np.nan)
    for r in rs:
        m[coders.index(r["annotator"]), units.index((r["item_id"], r["side"]))] = r["score"]
    alpha = krippendorff_alpha(m, "ordinal", list(range(SCALE[0], SCALE[1] + 1)))
    return {"alpha_ordinal": alpha, "annotators": len(coders), "units": len(units)}


def _in(x, lo_hi) -> bool | None:
    return None if x is None else lo_hi[0] <= x <= lo_hi[1]


def parity(desc: dict, general_gap_max: float, personal_gap_min: float, item_gap: float | None = None) -> dict:
    """The paper's claim: equal general quality, a large personal-fit gap in favour of chosen.
    `item_gap`: mean per-item |chosen - rejected| over the general dimensions (mean_item_gap);
    without it (no ratings at hand) the gap of the aggregate means is used and labelled so."""
    mean = lambda dim, side: desc[dim].get("all", {}).get(side, {}).get("mean")  # noqa: E731
    gaps = [abs(mean(d, "chosen") - mean(d, "rejected")) for d in GENERAL
            if mean(d, "chosen") is not None and mean(d, "rejected") is not None]
    gen = {s: [mean(d, s) for d in GENERAL if mean(d, s) is not None] for s in SIDES}
    gen = {s: _r(np.mean(v)) if v else None for s, v in gen.items()}
    pc, pr = mean(PERSONAL, "chosen"), mean(PERSONAL, "rejected")
    aggregate_gap = _r(np.mean(gaps)) if gaps else None
    general_gap = _r(item_gap) if item_gap is not None else aggregate_gap
    personal_gap = _r(pc - pr) if pc is not None and pr is not None else None
    if general_gap is None or personal_gap is None:
        verdict, holds = "insufficient data", None
    elif general_gap > general_gap_max:
        verdict, holds = "fails: general quality differs between chosen and rejected", False
    elif personal_gap < personal_gap_min:
        verdict, holds = "fails: personal fit does not separate chosen from rejected", False
    else:
        verdict, holds = "holds: equal general quality, chosen fits the user better", True
    return {"general_gap": general_gap, "personal_gap": personal_gap, "holds": holds, "verdict": verdict,
            "general_gap_measure": "mean per-item |chosen - rejected|" if item_gap is not None
            else "|mean chosen - mean rejected|", "general_gap_of_means": aggregate_gap,
            "thresholds": {"general_gap_max": general_gap_max, "personal_gap_min": personal_gap_min},
            "general_mean": gen, "personal_fit_mean": {"chosen": pc, "rejected": pr},
            "within_paper_range": {"general_chosen": _in(gen["chosen"], PAPER["general_dimensions"]["chosen"]),
                                   "general_rejected": _in(gen["rejected"], PAPER["general_dimensions"]["rejected"]),
                                   "personal_chosen": _in(pc, PAPER["personal_fit"]["chosen"]),
                                   "personal_rejected": _in(pr, PAPER["personal_fit"]["rejected"])}}


def summarize(ratings: list[dict], general_gap_max: float, personal_gap_min: float) -> dict:
    valid = [r for r in ratings if r["score"] is not None]
    desc = describe(valid)
    return {"annotators": len({r["annotator"] for r in valid}), "items": len({r["item_id"] for r in valid}),
            "ratings": len(valid), "invalid_ratings": len(ratings) - len(valid), "per_dimension": desc,
            "wilcoxon": wilcoxon_all(valid), "wilcoxon_correction": "holm over the four dimensions (p_holm)",
            "agreement": {d: agreement(valid, d) for d in DIMENSIONS},
            "parity": parity(desc, general_gap_max, personal_gap_min, mean_item_gap(valid, GENERAL))}


def proxy_vs_human(proxy: list[dict], human: list[dict]) -> dict:
    """Per dimension, on the (item, answer) units both rated: the proxy's score against the
    human mean, as interval alpha (two coders) and Spearman's rho."""
    from scipy.stats import spearmanr

    p, h = item_means(proxy), item_means(human)
    out = {}
    for dim in DIMENSIONS:
        units = [k for k in sorted(p) if k[2] == dim and k in h]
        x, y = [p[k] for k in units], [h[k] for k in units]
        rho = None
        if len(units) > 2 and len(set(x)) > 1 and len(set(y)) > 1:
            rho = _r(spearmanr(x, y).statistic)
        out[dim] = {"units": len(units), "alpha_interval": krippendorff_alpha([x, y], "interval") if units else None,
                    "spearman": rho}
    return out
