"""What every benchmark importer shares: finding its files (a local copy of the published layout:
Parquet, JSON arrays, JSONL) or loading its hub id, reading rows with their location, and field
checks that fail in one line naming file, row and field (tasks.core.errors.DataError, as ingest does).

An importer turns rows into tasks.models.listwise.Item: a prompt, m >= 1 correct and n >= 1 incorrect
answers, a subset, and the user's history or stated preferences as `profile` where the benchmark has
one (then both `none` and `raw_profile` are scored; otherwise `none` only)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from tasks.core.errors import ConfigError, DataError, suggestion
from tasks.models.listwise import Item
from tasks.stages.sources import RawRow, data_files, read_file


class Benchmark:
    name = ""
    hub_id = ""               # the published dataset on the HF hub (ids are case-sensitive)
    hub_configs: tuple = (None,)   # every config its authors score (None: the repo's only one)
    hub_split = "test"
    subsets: tuple = ()       # the publisher's subsets (its dataset card): another name is refused before any
                              # work (tasks/ops/params_data.py); () = not known, checked against the data it reads
    has_profile = False       # the layout carries user history / stated preferences
    doc = ""
    rule = ""                 # the publisher's scoring rule, as `published` numbers are labelled

    def strategies(self) -> list[str]:
        return ["none", "raw_profile"] if self.has_profile else ["none"]

    # --- reading ------------------------------------------------------------------------------
    def files(self, path: str) -> list[Path]:
        root = Path(path)
        if not root.exists():
            raise ConfigError(f"benchmarks ({self.name}): path '{root}' does not exist")
        found = data_files(root)
        if not found:
            raise ConfigError(f"benchmarks ({self.name}): no .parquet/.json/.jsonl files under '{root}'")
        return found

    def raw_rows(self, path: str | None, hub_id: str | None) -> Iterator[RawRow]:
        if path:
            for f in self.files(path):
                yield from read_file(f)
            return
        for config in self.hub_configs:
            yield from self.hub_rows(hub_id or self.hub_id, config)

    def hub_rows(self, hub_id: str, config: str | None = None, split: str | None = None) -> Iterator[RawRow]:
        """One config / split at the revision this load resolved (the first call resolves it to a sha)."""
        from tasks.stages import hub

        split, where = split or self.hub_split, f"benchmarks ({self.name})"
        if self.revision is None:
            self.revision = hub.resolve(where, hub_id, self.asked_revision, config, split)
        label = hub.label(hub_id, self.revision, config, split)
        for index, row in enumerate(hub.rows(where, hub_id, config, split, self.revision)):
            yield RawRow(label, index, row, config=config)

    asked_revision: str | None = None   # benchmarks.<name>.revision (null = main)
    revision: str | None = None         # the commit sha read (None: a local copy)

    def load(self, path: str | None = None, hub_id: str | None = None, subset: str | None = None,
             limit: int | None = None, subset_key: str = "subset", revision: str | None = None) -> list[Item]:
        """The benchmark's items (of `subset` only, if given; the first `limit`), every row checked; a hub
        copy is read at `revision` (null = main), and `self.revision` is then the sha it was read at. A subset
        the data does not hold is one line naming `subset_key`, with "did you mean" among those it holds."""
        self.asked_revision, self.revision = revision, None
        every = self.items(self.raw_rows(path, hub_id))
        items = [it for it in every if subset in (None, it.subset)]
        if subset is not None and not items:
            held = sorted({str(it.subset) for it in every})
            raise ConfigError(f"{subset_key}: no subset '{subset}' in {self.name}{suggestion(subset, held)}; "
                              f"valid: {', '.join(held)}")
        return items[:limit] if limit is not None else items

    @staticmethod
    def checked(rows: Iterator[RawRow]) -> Iterator[RawRow]:
        """Rows that read as objects; the first that does not is the error (file, row)."""
        for raw in rows:
            if raw.error is not None:
                raise raw.error
            if not isinstance(raw.row, dict):
                raise DataError(raw.file, f"expected an object per row, got {type(raw.row).__name__}", row=raw.index)
            yield raw

    def items(self, rows: Iterator[RawRow]) -> list[Item]:
        out = []
        for raw in self.checked(rows):
            item = self.item(Row(raw))
            if item is not None:
                out.append(item)
        return out

    def item(self, row: "Row") -> Item | None:
        """One row -> one Item (None: a row the published rule leaves out, e.g. a tie in PPE)."""
        raise NotImplementedError

    def metrics(self, rows: list[dict], policy: str) -> dict:
        """The benchmark's own headline numbers beyond accuracy (RewardBench 2's Ties rule, ...)."""
        return {}


class Row:
    """One raw row with checked field access: every problem is one DataError naming file, row, field."""

    def __init__(self, raw: RawRow, id_field: str = "id"):
        self.raw, self.data, self.id_field = raw, raw.row, id_field
        rid = self.data.get(id_field)
        self.id = None if rid is None else str(rid)

    def required_id(self) -> str:
        """The row's id; a row without one fails naming its id field."""
        if self.id is None:
            self.fail(self.id_field, "missing")
        return self.id

    def fail(self, field: str, message: str):
        raise DataError(self.raw.file, message, row=self.raw.index, row_id=self.id, field=field)

    def get(self, field: str, default=None):
        return self.data.get(field, default)

    def text(self, field: str, *, required: bool = True) -> str | None:
        v = self.data.get(field)
        if v is None:
            if required:
                self.fail(field, "missing")
            return None
        if not isinstance(v, str):
            self.fail(field, f"expected a string, got {type(v).__name__}")
        if not v.strip():
            self.fail(field, "empty")
        return v

    def texts(self, field: str, *, n: int | None = None) -> tuple[str, ...]:
        v = self.data.get(field)
        if v is None:
            self.fail(field, "missing")
        if isinstance(v, str) or not hasattr(v, "__len__"):
            self.fail(field, f"expected a list of strings, got {type(v).__name__}")
        v = list(v)
        if not v:
            self.fail(field, "empty list")
        for i, x in enumerate(v):
            if not isinstance(x, str) or not x.strip():
                self.fail(f"{field}[{i}]", "expected a non-empty string" if isinstance(x, str)
                          else f"expected a string, got {type(x).__name__}")
        if n is not None and len(v) != n:
            self.fail(field, f"expected {n} answers, got {len(v)}")
        return tuple(v)

    def integer(self, field: str) -> int:
        v = self.data.get(field)
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(field, "missing" if v is None else f"expected an integer, got {type(v).__name__}")
        return v

    def message_text(self, field: str) -> str:
        """A response given as a string, a {role, content} message, or a list of messages (the last one's)."""
        v = self.data.get(field)
        if isinstance(v, (list, tuple)) and v:
            v = v[-1]
        if isinstance(v, dict):
            v = v.get("content")
        if v is None:
            self.fail(field, "missing")
        if not isinstance(v, str) or not v.strip():
            self.fail(field, "expected a non-empty string or message" if isinstance(v, str)
                      else f"expected a string or message, got {type(v).__name__}")
        return v


def format_profile(posts) -> str:
    """A profile as the RMs see it: one numbered entry per line, best / most recent first, so a
    seq-cls RM's truncation drops the last whole entries first (tasks/models/rms/encode.py)."""
    return "\n".join(f"[{i}] {p}" for i, p in enumerate(posts, start=1))


def published_accuracy(rule: str, rows: list[dict]) -> dict:
    """Strict accuracy (a tie wrong) over the pointwise-scored items, overall and per subset: the
    headline of a pairwise benchmark whose authors count a tie as wrong."""
    from tasks.models.listwise import credit

    by: dict[str, list[float]] = {}
    for r in rows:
        c = credit(r, "strict")
        if c is not None:
            by.setdefault(r["subset"], []).append(float(c))
    every = [c for v in by.values() for c in v]
    mean = lambda v: round(sum(v) / len(v), 4) if v else None  # noqa: E731
    return {"rule": rule, "score": mean(every), "subsets": {k: mean(v) for k, v in sorted(by.items())}}
