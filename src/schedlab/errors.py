"""Errors a user can act on.

Every problem with user input becomes an :class:`InputError` that names where it is (file, row,
column, or a field) and echoes the offending value, so the CLI can print one line and exit non-zero
instead of a traceback.
"""

from __future__ import annotations


class SchedlabError(Exception):
    """Base class for errors that the CLI reports as one line and exit code 2."""


class InputError(SchedlabError):
    """Bad input: a file, a row, a column, or a command-line value that cannot be used.

    ``row`` is the 1-based line number in the file as a text editor shows it (the header is line 1),
    so a user can jump straight to it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.row = row
        self.column = column
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path) if self.row is None else f"{self.path}:{self.row}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        return f"{self.message} at {', '.join(where)}" if where else self.message


class PolicyError(SchedlabError):
    """A policy (often a plugin) returned something no engine can apply, or raised: a bug in
    the policy, reported like bad input (one line naming the policy, the method and what it
    returned; exit 2), since the policy is the user's input to the run."""
