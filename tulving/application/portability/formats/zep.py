"""Zep / Graphiti graphs into entries, their two time axes into Tulving's.

What is read: a JSON object with ``episodes`` (Graphiti's EpisodicNode: ``uuid``, ``name``,
``content``, ``source``, ``source_description``, ``group_id``, ``created_at``,
``valid_at``), ``entity_edges`` (EntityEdge: ``uuid``, ``name``, ``fact``,
``source_node_uuid``, ``target_node_uuid``, ``episodes``, ``created_at``, ``valid_at``,
``invalid_at``, ``expired_at``, ``attributes``) and ``entity_nodes`` (EntityNode: ``uuid``,
``name``, ``summary``, ``labels``, ``attributes``), as ``model_dump(mode="json")`` of
graphiti-core writes them (Zep's API names ``edges``/``facts`` and ``nodes`` are accepted
too).

Why this mapping: Graphiti is bitemporal as Tulving is. A fact's ``valid_at``/``invalid_at``
are event time (when it held in the world): Tulving's ``valid_from``/``valid_until``; its
``created_at``/``expired_at`` are transaction time (when the graph held it as current):
``created_at``/``expired_at``, and an expired fact is an archived, invalidated version. Each
fact becomes a FACT with (entity, attribute, value) = (source entity, relation, target
entity) and links to the episodes it was read from; each episode an EPISODE at its
``valid_at``; an entity's summary a FACT about that entity. Embeddings are left behind
(another model's vectors; this store embeds the text itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tulving.application.portability.formats.translation import (
    Notes,
    Placement,
    Translation,
    archived,
    foreign_text,
    foreign_time,
    records,
    source_id,
    strings,
)
from tulving.domain.errors import ForeignFormatError
from tulving.domain.types import ArchiveReason, MemoryType

_NAMES = {"episodes": ("episodes", "episodic_nodes"),
          "edges": ("entity_edges", "edges", "facts"),
          "nodes": ("entity_nodes", "nodes", "entities")}
_DROPPED = {"community_nodes": "communities are summaries Graphiti derives from the graph; "
                               "the facts and episodes they summarise are imported",
            "community_edges": "links between communities, derived from the graph",
            "episodic_edges": "episode-to-entity mentions, derived (the facts keep their "
                              "episodes)"}


def _section(document: Mapping[str, Any], what: str, notes: Notes
             ) -> list[Mapping[str, Any]]:
    for name in _NAMES[what]:
        if name in document:
            return records(document, name, "", notes)
    return []


def read_zep(document: object, place: Placement) -> Translation:
    notes = Notes("zep")
    known = {n for names in _NAMES.values() for n in names}
    if not isinstance(document, Mapping) or not known & set(document):
        raise ForeignFormatError(
            "zep: not a Zep/Graphiti export: expected an object with episodes, "
            "entity_edges and/or entity_nodes")
    episodes = _section(document, "episodes", notes)
    edges = _section(document, "edges", notes)
    nodes = _section(document, "nodes", notes)
    names = {str(n.get("uuid")): n.get("name") for n in nodes if isinstance(n.get("name"), str)}
    episode_ids: dict[str, str] = {}
    for i, episode in enumerate(episodes):
        _episode(place, notes, episode, f"episodes[{i}]", episode_ids)
    for i, edge in enumerate(edges):
        _edge(place, notes, edge, f"edges[{i}]", names, episode_ids)
    for i, node in enumerate(nodes):
        _node(place, notes, node, f"entity_nodes[{i}]")
    for name, why in _DROPPED.items():
        value = document.get(name)
        if isinstance(value, list) and value:
            notes.drop(name.replace("_", " "), why, len(value))
    for name in sorted(set(document) - known - set(_DROPPED)):
        notes.drop(f"top-level {name!r}", "not part of a Graphiti graph")
    return notes.finish()


def _zep_meta(item: Mapping[str, Any], *names: str) -> dict[str, Any]:
    meta = {name: item[name] for name in ("uuid", "group_id", *names)
            if item.get(name) not in (None, "", [], {})}
    return {"zep": meta}


def _episode(place: Placement, notes: Notes, episode: Mapping[str, Any], at: str,
             episode_ids: dict[str, str]) -> None:
    uid = source_id(episode.get("uuid"), f"{at}.uuid", notes)
    text = foreign_text(episode.get("content"), f"{at}.content", notes)
    created = foreign_time(episode.get("created_at"), f"{at}.created_at", notes)
    valid = foreign_time(episode.get("valid_at"), f"{at}.valid_at", notes)
    if uid is None:
        return
    if text is None:
        notes.drop("zep episode", "no content")
        return
    entry = place.entry(f"episode\x1f{uid}", text, MemoryType.EPISODE, at, notes,
                        created=created, valid_from=valid,
                        metadata=_zep_meta(episode, "name", "source", "source_description",
                                           "labels"))
    if entry is not None:
        episode_ids[uid] = entry.id
        notes.add("zep episode", "EPISODE entries at their valid_at", entry,
                  timed=created is not None)


def _edge(place: Placement, notes: Notes, edge: Mapping[str, Any], at: str,
          names: Mapping[str, Any], episode_ids: Mapping[str, str]) -> None:
    uid = source_id(edge.get("uuid"), f"{at}.uuid", notes)
    text = foreign_text(edge.get("fact"), f"{at}.fact", notes)
    times = {name: foreign_time(edge.get(name), f"{at}.{name}", notes)
             for name in ("created_at", "valid_at", "invalid_at", "expired_at")}
    episodes = strings(edge.get("episodes"), f"{at}.episodes", notes)
    if uid is None or episodes is None:
        return
    if text is None:
        notes.drop("zep fact", "no fact text")
        return
    subject = names.get(str(edge.get("source_node_uuid")))
    relation = edge.get("name")
    structured: dict[str, Any] = {}
    if isinstance(subject, str) and isinstance(relation, str) and subject and relation:
        target = names.get(str(edge.get("target_node_uuid")))
        structured = {"entity": subject[:200], "attribute": relation[:200],
                      "value": target[:2000] if isinstance(target, str) else None}
    meta = _zep_meta(edge, "name", "source_node_uuid", "target_node_uuid", "episodes",
                     "attributes")
    entry = place.entry(
        f"edge\x1f{uid}", text, MemoryType.FACT, at, notes, created=times["created_at"],
        valid_from=times["valid_at"], valid_until=times["invalid_at"], metadata=meta,
        source_entry_ids=tuple(episode_ids[e] for e in episodes if e in episode_ids),
        **structured)
    if entry is None:
        return
    if times["expired_at"] is not None:
        notes.add("zep fact (expired)", "archived FACT versions (invalidated at expired_at)",
                  archived(entry, times["expired_at"], ArchiveReason.INVALIDATED))
    else:
        notes.add("zep fact", "FACT entries (entity, relation, target), valid_at..invalid_at "
                  "as valid_from..valid_until", entry, timed=times["created_at"] is not None)
    if edge.get("fact_embedding") is not None:
        notes.drop("zep fact embedding", "another model's vector: this store embeds the text")


def _node(place: Placement, notes: Notes, node: Mapping[str, Any], at: str) -> None:
    uid = source_id(node.get("uuid"), f"{at}.uuid", notes)
    summary = foreign_text(node.get("summary"), f"{at}.summary", notes)
    name = node.get("name")
    created = foreign_time(node.get("created_at"), f"{at}.created_at", notes)
    if uid is None:
        return
    if summary is None or not isinstance(name, str) or not name.strip():
        notes.drop("zep entity", "no summary (its name lives on in the facts about it)")
        return
    entry = place.entry(f"node\x1f{uid}", summary, MemoryType.FACT, at, notes,
                        created=created, entity=name.strip()[:200], attribute="summary",
                        metadata=_zep_meta(node, "name", "labels", "attributes"))
    if entry is not None:
        notes.add("zep entity", "FACT entries about the entity (attribute 'summary')", entry,
                  timed=created is not None)
