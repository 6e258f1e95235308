"""How the page writes its numbers (tasks/ops/report/fmt.py), as docs/statistics.md and the page state them: an
accuracy as a percentage with its CI, an interval of zero width with why (a [100, 100] on six pairs is not
certainty), p below 0.001 as "< 0.001", a difference signed, and what the in-page sort compares. The cases are
written by hand."""
from __future__ import annotations

import pytest

from tasks.ops.report import fmt


@pytest.mark.parametrize("x, digits, text", [(None, 1, "–"), (0.91666, 1, "91.7%"), (0.5, 2, "50.00%"),
                                             (1.0, 1, "100.0%"), (0.0, 0, "0%")])
def test_an_accuracy_reads_as_a_percentage(x, digits, text):
    assert fmt.pct(x, digits) == text
    if digits == 1:
        assert fmt.pct(x) == text, "one decimal by default"


def test_a_percentage_interval_of_zero_width_says_why():
    assert fmt.ci_pct(0.81234, 0.93, 1) == "[81.2, 93.0]"
    assert fmt.ci_pct(0.81234, 0.93) == "[81.2, 93.0]"
    assert fmt.ci_pct(0.5, 0.75, 2) == "[50.00, 75.00]"
    assert fmt.ci_pct(None, 0.9) == "" and fmt.ci_pct(0.1, None) == ""
    assert fmt.ci_pct(1.0, 1.0, n=6, value=1.0) == "[100.0, 100.0] (n = 6, all correct)"
    assert fmt.ci_pct(0.0, 0.0, n=4, value=0.0) == "[0.0, 0.0] (n = 4, all wrong)"
    assert fmt.ci_pct(0.5, 0.5, n=8, value=0.5) == \
        "[50.0, 50.0] (n = 8; zero width: every resample gave the same value)"
    assert fmt.ci_pct(0.5, 0.5) == "[50.0, 50.0] (zero width: every resample gave the same value)"


def test_why_an_interval_has_no_width():
    assert fmt.zero_width_reason(6, 1) == "n = 6, all correct"
    assert fmt.zero_width_reason(6, 0) == "n = 6, all wrong"
    assert fmt.zero_width_reason(6, 0.5) == "n = 6; zero width: every resample gave the same value"
    assert fmt.zero_width_reason(None, 1) == "zero width: every resample gave the same value"
    assert fmt.zero_width_reason() == fmt.ZERO_WIDTH


def test_a_plain_interval_and_a_number():
    assert fmt.ci(0.12345, 0.6789) == "[0.123, 0.679]"
    assert fmt.ci(0.12345, 0.6789, 1) == "[0.1, 0.7]"
    assert fmt.ci(None, 1.0) == "" and fmt.ci(0.0, None) == ""
    assert fmt.ci(0.3, 0.3, n=5) == "[0.300, 0.300] (n = 5; zero width: every resample gave the same value)"
    assert fmt.ci(0.3, 0.3) == "[0.300, 0.300] (zero width: every resample gave the same value)"
    assert fmt.num(None) == "–" and fmt.num(True) == "yes" and fmt.num(False) == "no"
    assert fmt.num(7) == "7" and fmt.num(0.123456) == "0.123" and fmt.num(0.123456, 1) == "0.1"
    assert fmt.num("bfloat16") == "bfloat16"


@pytest.mark.parametrize("p, text", [(None, "–"), (0.0009999, "< 0.001"), (0.001, "0.001"), (0.04951, "0.050"),
                                     (1.0, "1.000")])
def test_a_p_value_below_a_thousandth_reads_so(p, text):
    assert fmt.p_value(p) == text


def test_a_difference_is_signed():
    assert fmt.signed(None) == "–"
    assert fmt.signed(0.0123) == "+0.012" and fmt.signed(-0.0123, 2) == "-0.01"
    assert fmt.signed(0.0123, 1, percent=True) == "+1.2 pp" and fmt.signed(-0.05, percent=True) == "-5.000 pp"
    assert fmt.signed(0.0) == "+0.000"


def test_a_stages_extra_flag_reads_plainly():
    assert fmt.value([True, 3, 0.123456]) == "yes, 3, 0.1235" and fmt.value(()) == "–" and fmt.value([]) == "–"
    assert fmt.value(0.123456) == "0.1235", "a float extra: four decimals"
    assert fmt.value(5) == "5" and fmt.value(None) == "–" and fmt.value("x") == "x" and fmt.value(False) == "no"


def test_the_in_page_sort_compares_numbers_as_numbers():
    assert fmt.sort_key(None) == ""
    assert fmt.sort_key(True) == 1 and type(fmt.sort_key(True)) is int and fmt.sort_key(False) == 0
    assert fmt.sort_key(3) == 3 and fmt.sort_key(0.25) == 0.25
    assert fmt.sort_key(["a", 2]) == "a, 2" and fmt.sort_key(("b",)) == "b"
    assert fmt.sort_key("rm-a") == "rm-a" and fmt.sort_key(fmt) == str(fmt)
