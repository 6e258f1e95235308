"""Builds .dvc/plots/offline.html, the page template `dvc plots show` uses (.dvc/config
`plots.html_template`): vega, vega-lite and vega-embed inlined from the files beside this script, so
the charts render with no network (DVC's default template loads them from a CDN).

The three files are the `build/*.min.js` of the npm packages vega 6.4.0, vega-lite 6.5.0 and
vega-embed 7.3.0 (`npm pack <name>@<version>`), BSD-3-Clause, their LICENSE files kept as
LICENSE.<name>. To update: replace the files, then `python vendor/vega/build.py` and commit both.
tests/test_plots_offline.py checks the template is what this script builds."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent.parent / ".dvc" / "plots" / "offline.html"
LIBS = ("vega", "vega-lite", "vega-embed")   # load order: each needs the ones before it
PAGE = """<!DOCTYPE html>
<html>
<head>
{refresh_tag}
<meta charset="utf-8">
<title>DVC plots (prbench, offline)</title>
<!-- vega, vega-lite, vega-embed inlined from vendor/vega/ (BSD-3-Clause; see vendor/vega/LICENSE.*) -->
%s
<style>table { border-spacing: 15px; }</style>
</head>
<body>
{plot_divs}
</body>
</html>
"""


def render() -> str:
    scripts = "\n".join(f'<script type="text/javascript">/* {name} */\n'
                        f'{(HERE / f"{name}.min.js").read_text(encoding="utf-8")}\n</script>' for name in LIBS)
    # DVC's plot divs call vegaEmbed(el, spec): render as SVG (crisp, and a test can find the charts in the DOM)
    svg = ('<script type="text/javascript">(function () { var embed = window.vegaEmbed; window.vegaEmbed = '
           'function (el, spec, opt) { return embed(el, spec, Object.assign({renderer: "svg"}, opt || {})); }; })();'
           '</script>')
    return PAGE % (scripts + "\n" + svg)


def main() -> None:
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(render(), encoding="utf-8")
    print(f"{TARGET}: written")


if __name__ == "__main__":
    main()
