"""The ``project-pool`` profile: project-scoped memory shared by the sessions of a project
(``schemas/project-pool.md``, from NexusAI's design)."""

from __future__ import annotations

from kbconform.profiles import Profile

PROFILE = Profile(
    name="project-pool",
    rule="project-pool.md#scope-the-rules",
    guide="the-project-pool-profile",
    rules={
        "iso-01": "project-pool.md#p4",
        "iso-02": "project-pool.md#p11",
        "iso-03": "project-pool.md#p12",
    },
    capabilities=("fault-injection",),
    operations=(
        "createProject",
        "startSession",
        "assignSession",
        "removeSession",
        "writeEpisode",
        "extractEntities",
        "searchEpisodes",
        "searchEntities",
    ),
    implementation="kbconform.profiles.project_pool.implementation:IMPLEMENTATION",
    contract="project-pool",
    skeleton={
        "isolationProfile": "project-pool",
        "isolationModel": "metadata-filter",
        "readFacades": ["search-episodes", "search-entities"],
        "features": {
            "fault-injection": "not offered yet: the store cannot be switched off by the suites",
        },
    },
    levels={
        "L0": "contract (malformed calls refused)",
        "L1": "identity (unknown sessions, no identity, exact searches in scope)",
        "L2": "membership isolation (moves, immutable tags, internal ids, fail closed)",
        "L3": "lifecycle (programs of moves and writes, failed writes change nothing)",
        "L4": "robustness (state machine)",
    },
)
