"""The scenario gallery: named stories of Kafka's exactly-once machinery, and of the designs it is compared with.

The registry: ``names()`` (Kafka's stories, in teaching order), ``comparison_names()`` (stories that run on
another design's lab: RocketMQ's half messages, two-phase commit) and ``load(name)`` for either.  A scenario
is a function of a cluster -- ``load(name)(cluster)`` runs its client code.  The stories import
``gallery.scenario``, never this registry.

    sc = load("zombie-fenced")
    cluster, result = sc.play(seed=0)      # build, set up, run to the end
    sc.verify(cluster, result)             # raises ScenarioCheckFailed if the ending differs
"""
from __future__ import annotations

from .kafka import GALLERY
from .rocketmq import GALLERY as ROCKETMQ
from .scenario import BASE_CONFIG, Pipeline, Scenario, ScenarioCheckFailed, expect
from .twopc import GALLERY as TWOPC


def names() -> list[str]:
    """The gallery's scenario names, in teaching order."""
    return list(GALLERY)


def comparison_gallery() -> dict:
    """The stories of the other designs (RocketMQ's half messages, two-phase commit), by name."""
    return {**ROCKETMQ, **TWOPC}


def comparison_names() -> list[str]:
    """Names of the scenarios that run on another design's lab (each a ``Scenario`` with a ``lab`` recipe)."""
    return list(comparison_gallery())


def load(name: str) -> Scenario:
    """The scenario called ``name`` (callable as ``fn(cluster)``, with description and expected ending):
    a Kafka story of the gallery, or one of the comparison labs' stories."""
    if name in GALLERY:
        return GALLERY[name]
    other = comparison_gallery()
    if name in other:
        return other[name]
    raise KeyError(f"no scenario {name!r}; the gallery has: {', '.join(GALLERY)}; "
                   f"the comparison labs have: {', '.join(other)}")


__all__ = ["Scenario", "Pipeline", "ScenarioCheckFailed", "names", "comparison_names", "load", "expect", "GALLERY",
           "BASE_CONFIG"]
