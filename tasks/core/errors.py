"""Errors a user can fix: bad data, a bad params value, a flag, an environment variable, a port in use. Each is
printed as its lines (one per problem, naming the file, key, flag or variable), never as a traceback: every
entry point catches UserError at its one boundary (flows/boundary.py). Anything else is a bug and keeps its
traceback."""
from __future__ import annotations


class UserError(Exception):
    """What the user can fix; str() is one line per problem."""

    def lines(self) -> list[str]:
        return [line for line in str(self).splitlines() if line.strip()] or [type(self).__name__]


class DataError(UserError):
    """One problem in one place of one input file."""

    def __init__(self, file: str, message: str, *, row: int | None = None,
                 row_id: str | None = None, field: str | None = None):
        self.file, self.row, self.row_id, self.field, self.message = file, row, row_id, field, message
        super().__init__(self.line())

    def line(self) -> str:
        where = [str(self.file)]
        if self.row is not None:
            where.append(f"row {self.row}" + (f" (id={self.row_id})" if self.row_id else ""))
        if self.field:
            where.append(f"field '{self.field}'")
        return ": ".join(where) + f": {self.message}"


class DataErrors(UserError):
    """Every problem found in a run, so the user can fix them all at once."""

    def __init__(self, errors: list[DataError]):
        self.errors = errors
        super().__init__("\n".join(e.line() for e in errors))


class ConfigError(UserError):
    """A params entry that cannot work (unknown name, bad value); names the key."""


def suggestion(name: str, valid) -> str:
    """' (did you mean 'X'?)' for the closest valid name, or ''."""
    import difflib

    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    close = close or [v for v in valid if v.lower().startswith(name.lower())][:1]
    return f" (did you mean '{close[0]}'?)" if close else ""


def typo_of(name: str, keys, known=()) -> str | None:
    """The key of `keys` that looks like a misspelt `name` (`kidn`, `SOURCE` for `kind`, `source`), among those
    that are no `known` option; None."""
    unknown = [k for k in keys if isinstance(k, str) and k not in known]
    same = [k for k in unknown if k.lower() == name.lower()]
    hint = suggestion(name, unknown)
    return same[0] if same else hint.split("'")[1] if hint else None


def did_you_mean(name: str, valid) -> str:
    return f"unknown name '{name}'{suggestion(name, valid)}; valid: {', '.join(sorted(valid))}"
