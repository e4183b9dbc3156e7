"""The ``project-pool`` profile: project-scoped memory shared by the sessions of a project
(``schemas/project-pool.md``, from NexusAI's design)."""

from __future__ import annotations

from kbconform.profiles._registry import Profile, feature_declined

PROFILE = Profile(
    name="project-pool",
    capabilities=("fault-injection",),
    declines=feature_declined,
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
    facades="kbconform.profiles.project_pool._checks:facades",
    check_manifest="kbconform.adapter._manifest:check_schema",
    isolation="kbconform.conformance._profiles:PoolIsolation",
    wire="kbconform.profiles.project_pool._wire:WIRE",
    contract="project-pool",
)
