"""The report page: one self-contained HTML file per run (the `report` stage, report/index.html) and
per pair of versions (`prbench report --compare REV [REV2]`). The builders only pick and format
numbers the stages already wrote; the Jinja2 templates under templates/ lay them out."""
