"""`prbench power [--params FILE]`: the power of the pre-registered primary test at the design in the params,
by seeded simulation (tasks/downstream/correlation/power.py), before any run; and the one warning line
`prbench run` prints when that power is below 80% (read from the same cache, so it costs a file read
after the first time)."""
from __future__ import annotations

import sys


def report(params: dict) -> tuple[list[str], dict]:
    """(the lines `prbench power` prints, the simulation's result)."""
    from tasks.downstream.correlation.primary import design, power_of, primary_rms

    c = params["correlation"]
    pr, pw = c["primary"], c["power"]
    rms = primary_rms(params, None)
    d = design(params, rms)
    res = power_of(params, d)
    kinds = {params["scoring"]["rms"][rm].get("kind") for rm in rms}
    label = " (the positive-control ladder: it tests that the pipeline can see a real relation, not the " \
            "benchmark's value)" if kinds == {"mixture"} else ""
    lines = [f"primary test: {pr['statistic']} of {pr['benchmark']} accuracy ({pr['strategy']}) with {pr['method']}, "
             f"{pr['alternative']}, alpha {pr['alpha']}; label-flip randomization test",
             f"design: {len(rms)} RMs{label}; {d.pairs} benchmark pairs per RM, {d.questions} downstream questions, "
             f"BoN n={d.n}, k={d.k}",
             f"assumed effect: {pw['effect']} = {res.get('effect_meaning', 'the good signal alone picks chosen')}"]
    if res.get("power") is None:
        lines.append(f"power: not simulated ({res.get('why')})")
        return lines, res
    mde = res["min_detectable_effect"]
    bound = f" at least (simulated at {power_cap()} pairs and questions: power only rises with more)" \
        if res.get("capped") else ""
    lines += [f"power: {res['power']:.3f}{bound} (+-{res['mc_error']:.3f}, {res['simulations']} simulated runs, seed "
              f"{res['seed']}); rejection rate with no effect: {res['size']:.3f}",
              "smallest effect detectable at 80% power: " + (f"{mde}" if mde else "none up to 0.99")]
    return lines, res


def power_cap() -> int:
    from tasks.downstream.correlation.power import CAP

    return CAP


def warning(params: dict) -> str | None:
    """One line when the design's power is below 80%, else None."""
    try:
        lines, res = report(params)
    except (KeyError, ValueError) as exc:   # a params file without the group: nothing to warn about
        return f"prbench: warning: the primary test's power could not be simulated ({exc})"
    if res.get("power") is not None and res["power"] < 0.8:
        return (f"prbench: warning: the primary test has power {res['power']:.2f} < 0.80 at the assumed effect "
                f"{params['correlation']['power']['effect']} (`prbench power`): a null result says little")
    return None


def cmd_power(args) -> int:
    from tasks.ops.params import load_params

    params = load_params(args.params)
    lines, res = report(params)
    print("\n".join(lines))
    if res.get("power") is not None and res["power"] < 0.8:
        print("below 80%: more benchmark pairs, more RMs in the test or more BoN questions raise it", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    pw = sub.add_parser("power", help="the primary test's power at the design in the params (simulation, <= 60 s)")
    from tasks.core.flags import path_arg

    pw.add_argument("--params", default=None, type=path_arg("file", "--params"), help="params file (default params.yaml)")
    pw.set_defaults(func=cmd_power)
