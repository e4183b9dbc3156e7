"""The outputs of ``kbconform run``, one writer per format behind one small interface.

A :class:`Writer` names the ``run`` option that asks for it and writes its file from the
finished run (:class:`Finished`: the report as a typed :class:`~kbconform.report.Report`, and
the harness's log). :data:`WRITERS` lists them in the order ``run`` offers and writes them; a
new format is one module here and one entry there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kbconform.cli.writers._badge import Badge
from kbconform.cli.writers._html import Html
from kbconform.cli.writers._json import JsonReport
from kbconform.cli.writers._junit import JUnit
from kbconform.cli.writers._markdown import Summary
from kbconform.cli.writers._sarif import Sarif

if TYPE_CHECKING:
    from kbconform.report import Report


@dataclass(frozen=True, slots=True)
class Finished:
    """What a run leaves for its writers: its report, and what its harness wrote to stderr."""

    report: Report
    harness_log: str = ""


class Writer(Protocol):
    """One output format of ``kbconform run``."""

    #: The option naming the file (``--html``); its value is the path written.
    option: str
    #: The option's help.
    help: str

    def pytest_arguments(self, path: str) -> list[str]:
        """Arguments for the suites' pytest process (a format pytest writes itself), or none."""
        ...

    def write(self, path: str, finished: Finished) -> None:
        """Write the format to ``path`` (whole or not at all), from the finished run."""
        ...


#: Every writer, in the order ``kbconform run`` lists their options and writes their files.
WRITERS: tuple[Writer, ...] = (JsonReport(), JUnit(), Summary(), Badge(), Html(), Sarif())


def dest(writer: Writer) -> str:
    """The attribute of the parsed arguments that holds ``writer``'s path."""
    return writer.option.removeprefix("--").replace("-", "_")


__all__ = ["WRITERS", "Finished", "Writer", "dest"]
