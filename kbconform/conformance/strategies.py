"""Adversarial identifiers and values, as Hypothesis strategies and the pools they draw from.

Real isolation bugs live where names collide under a common mistake: a tenant id that is a prefix
of another (``acme``, ``acme-eu``), parts that join alike (tenant ``acme-x`` with repo ``y``, and
``acme`` with ``x-y``), paths that differ only by case, normalization, a suffix or a directory,
the same path in several repositories and tenants, paths full of quote, SQL, regex, JSON-path and
operator characters, and agent identities that differ only by case, normalization, a trailing
space or a suffix. Every value here is valid under the contract's schemas: a backend must keep
them apart exactly. A revision resolver's output is not a stored path, and may spell one as a
file system would resolve it (``./a.md``): such a spelling names nothing stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

#: Families of source paths that collide under a common mistake: case, prefixes (of a name and
#: of a directory), NFC and NFD forms of one name, suffixes.
PATH_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("docs/a.md", "docs/A.md"),
    ("docs/a", "docs/a.md", "docs/ab.md"),
    ("docs/caf\u00e9.md", "docs/cafe\u0301.md"),
    ("docs", "docs/a.md", "docs/a/b.md"),
    ("a.md", "old/a.md"),
)
#: Paths with characters that mean something to SQL, regular expressions, globs, JSON paths and
#: filter languages.
METACHARACTER_PATHS: tuple[str, ...] = (
    'docs/it\'s "quoted".md',
    "docs/x' OR '1'='1.md",
    "docs/a.*$[0].md",
    "docs/$ne/%_?.md",
)
#: Pairs of paths where the first, read as a SQL ``LIKE`` pattern (``_`` any one character,
#: ``%`` any run of them) or a glob, matches the second: a store that matches a path it was
#: given as a pattern (a tombstone, a protected file) reaches the other. Between them they hold
#: the characters a store's filter text treats specially (``_ % ' " :``; a path holds no ``\``),
#: and each an ``é`` in NFC, so that its NFD form is another path.
PATTERN_PAIRS: tuple[tuple[str, str], ...] = (
    ("docs/r\u00e9sum\u00e9_b.md", "docs/r\u00e9sum\u00e9-b.md"),
    ("docs/50%\u00e9t\u00e9.md", "docs/50-\u00e9t\u00e9.md"),
    ("docs/it's_%\u00e9.md", 'docs/it\'s-"x":1\u00e9.md'),
)
#: Every adversarial path.
PATHS: tuple[str, ...] = tuple(
    dict.fromkeys(p for family in (*PATH_FAMILIES, METACHARACTER_PATHS) for p in family)
)


def unclean_spellings(path: str) -> tuple[str, ...]:
    """Spellings of ``path`` that a file system would resolve to it and no stored chunk can
    have (a chunk's path has no empty, ``.`` or ``..`` segment and no leading or trailing
    ``/``): a revision resolver may list them, and each names nothing stored, since paths match
    code point for code point (``schemas/deletion-signaling.md``)."""
    doubled = path.replace("/", "//", 1) if "/" in path else f"{path}/"
    return (f"./{path}", f"/{path}", f"x/../{path}", doubled)


#: Pairs of agent identities that collide under a common mistake: a suffix, case, a trailing
#: space, the NFC and NFD forms of one name, a separator a key format splits on. Agent identities
#: are any single line of text (``identity-tuple-v1``), compared exactly (``read-filter.md``).
AGENT_FAMILIES: tuple[tuple[str, str], ...] = (
    ("agent", "agent-2"),
    ("agent", "Agent"),
    ("agent", "agent "),
    ("caf\u00e9", "cafe\u0301"),
    ("agent:a", "agent"),
)
#: An agent identity holding the characters a filter built as text treats specially (``\\``,
#: ``"``, ``:``), then one that closes a quoted literal and ORs a tautology onto the filter
#: (``= 'ops ... ' OR 'a'='a'`` holds for every row).
SPLICED_AGENT = "ops \\\" : ' OR 'a'='a"

#: Query texts that name things outside the corpus: files a deployment holds (configuration,
#: environment, credentials, its own sources and docs), system paths and a phrase of the seeded
#: canaries. A backend that answers from anything but its stored chunks (files on its disk,
#: caches, other indexes) shows it when asked about them (leak-15, and the state machine).
OUTSIDE: tuple[str, ...] = (
    "package.json",
    ".env",
    "config.mjs",
    "config.yaml",
    "credentials.json",
    "id_rsa",
    "README.md",
    "/etc/passwd",
    "src/index.js",
    "docker-compose.yml",
    "deploy the billing service",
)


def names_of(families: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    """Every name of ``families``, each once, in order."""
    return tuple(dict.fromkeys(name for family in families for name in family))


@st.composite
def with_twins(
    draw: st.DrawFn, families: tuple[tuple[str, ...], ...], min_size: int, max_size: int
) -> list[str]:
    """Distinct names of ``families``, between ``min_size`` (at least 2) and ``max_size``: the
    first two are one family's pair, so two names that collide under a common mistake meet in
    every example; the rest are drawn from every family."""
    pair = list(draw(st.sampled_from(families))[:2])
    others = [name for name in names_of(families) if name not in pair]
    rest = draw(st.lists(st.sampled_from(others), min_size=min_size - 2, max_size=max_size - 2, unique=True))
    return [*pair, *rest]


@dataclass(frozen=True, slots=True)
class World:
    """The names one state-machine run uses: tenants and repositories that collide under joins
    and prefixes, the adversarial paths, and the agents of every tenant."""

    tenants: tuple[str, ...]
    repos: tuple[str, ...]
    paths: tuple[str, ...] = PATHS
    agents: tuple[str, ...] = AGENT_FAMILIES[0]
    patterns: tuple[str, str] = PATTERN_PAIRS[0]


def _valid_tenant(name: str) -> bool:
    return 0 < len(name) <= 64 and name[0] != "-" and name[-1] != "-" and "--" not in name


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Three tenants and three repositories where ``tenant + '-' + repo`` collides across pairs
    and one tenant id is a prefix of another: ``b``, ``b-p``, ``bp`` (or ``p-b``), with repos
    ``app``, ``p-app`` and ``app/docs``; paths from two collision families and a metacharacter
    path or two, so that colliding paths meet often; two agents of one family; a pair of paths
    the first of which, read as a ``LIKE`` pattern, matches the second."""
    base = draw(st.from_regex(r"[a-z][a-z0-9]{1,5}", fullmatch=True))
    part = draw(st.from_regex(r"[a-z0-9]{1,3}", fullmatch=True))
    third = draw(st.sampled_from([f"{base}{part}", f"{part}-{base}", f"{base}-{part}-{part}"]))
    tenants = (base, f"{base}-{part}", third)
    assert all(_valid_tenant(t) for t in tenants)
    assert len(set(tenants)) == 3
    families = draw(st.lists(st.sampled_from(PATH_FAMILIES), min_size=2, max_size=2, unique=True))
    odd = draw(st.lists(st.sampled_from(METACHARACTER_PATHS), min_size=1, max_size=2, unique=True))
    paths = tuple(dict.fromkeys(p for family in (*families, odd) for p in family))
    agents = draw(st.sampled_from(AGENT_FAMILIES))
    patterns = draw(st.sampled_from(PATTERN_PAIRS))
    return World(tenants, ("app", f"{part}-app", "app/docs"), paths, agents, patterns)
