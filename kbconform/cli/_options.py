"""Options several commands share: positive numbers, the run limits, and ``--only`` ids the
shell split at their spaces."""

from __future__ import annotations

import argparse


def _bracketed(argv: list[str]) -> list[str]:
    """``argv`` with each ``--only`` id the shell split at its spaces joined again: a value with
    more ``[`` than ``]`` takes the words after it up to the one that closes it, so
    ``--only closed-01[ingest by None]`` unquoted is the id ``closed-01[ingest by None]``."""
    joined: list[str] = []
    words = iter(argv)
    for word in words:
        joined.append(word)
        if word == "--only" or word.startswith("--only="):
            if word == "--only":
                following = next(words, None)
                if following is None:
                    break
                joined.append(following)
            while joined[-1].count("[") > joined[-1].count("]"):
                more = next(words, None)
                if more is None:
                    break
                joined[-1] += " " + more
    return joined


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds; got {text!r}")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1; got {text!r}")
    return int(text)


def _add_limits(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--call-timeout",
        type=_positive,
        metavar="SECONDS",
        help="deadline of each call into the adapter; a call that overruns fails its test (default 60)",
    )
    command.add_argument(
        "--run-timeout",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="deadline of the whole run; a run that overruns is stopped and fails (default 1800)",
    )
    command.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="run the suites on N pytest-xdist processes (needs kbconform[xdist])",
    )
