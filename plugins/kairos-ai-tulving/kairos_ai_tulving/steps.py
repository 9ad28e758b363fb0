"""The memory steps: ``recall``, ``orient`` and ``remember``.

Each comes three ways: a factory of the step action bound to a memory
(``make_recall(memory, ...)``), a builder of the whole ``kairos.Step`` with its output
contract and least-privilege state scope (``recall_step(memory, ...)``), and a
ready-made action in the manifest that uses the memory bound with
:func:`kairos_ai_tulving.bind` (``MANIFEST.build_step("recall")``).

What they read from run state is data only (the query, the values of a key template's
placeholders); budgets, types, tags, key templates and prefixes are fixed when the step
is built, so a step that writes state (an LLM, say) cannot redirect them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kairos import SKIP, Step, StepContext, sanitize_exception
from kairos.plugins import step_plugin

import tulving
from kairos_ai_tulving.binding import DEFAULT, bound, check_memory, check_name
from kairos_ai_tulving.contracts import REMEMBER_OUTPUT, context_output
from kairos_ai_tulving.errors import PluginConfigError
from kairos_ai_tulving.keys import KeyTemplate
from kairos_ai_tulving.rendering import MAX_CHARS, redacted, render_value
from kairos_ai_tulving.validators import check_budget

DEFAULT_BUDGET = 1_500
MAX_QUERY_CHARS = 2_000
_MAX_DEPTH = 4
Action = Callable[[StepContext], object]


# -- shared checks ----------------------------------------------------------------------
def _memory_or_binding(memory: Any, binding: str) -> Callable[[], Any]:
    check_name(binding)
    if memory is not None:
        check_memory(memory)
        return lambda: memory
    return lambda: bound(binding)


def _names(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, Iterable):
        raise PluginConfigError(f"{what} must be a list of names")
    names = tuple(value)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise PluginConfigError(f"{what} must be a non-empty list of non-empty names")
    return names


def _types(types: Sequence[Any] | None) -> list[tulving.MemoryType] | None:
    if types is None:
        return None
    try:
        return [tulving.MemoryType.parse(t) for t in _names_or_types(types)]
    except tulving.TulvingError as exc:
        raise PluginConfigError(str(exc)) from exc


def _names_or_types(types: Any) -> list[Any]:
    if isinstance(types, str | tulving.MemoryType):
        return [types]
    return list(types)


def _tags(tags: Iterable[str] | None) -> list[str] | None:
    if tags is None:
        return None
    if isinstance(tags, str):
        tags = [tags]
    out = list(tags)
    if not all(isinstance(t, str) for t in out):
        raise PluginConfigError("tags must be strings")
    return out


def _mark(action: Action, kind: str) -> Action:
    action.__tulving_step__ = kind  # type: ignore[attr-defined]  # TulvingHooks skips these
    return action


def is_memory_step(step: Step) -> bool:
    return getattr(step.action, "__tulving_step__", None) is not None


# -- recall and orient ------------------------------------------------------------------
def query_text(ctx: StepContext, names: Sequence[str], limit: int = MAX_QUERY_CHARS) -> str:
    """The query, from the named dependency outputs (``ctx.inputs``) or state keys:
    strings as they are, the string leaves of mappings and lists (sensitive keys left
    out), at most ``limit`` characters."""
    parts: list[str] = []
    for name in names:
        value = ctx.inputs[name] if name in ctx.inputs else ctx.state.get(name, None)
        _collect(redacted(value), parts, 0)
    return " ".join(p.strip() for p in parts if p.strip())[:limit].strip()


def _collect(value: Any, parts: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH or sum(len(p) for p in parts) > MAX_QUERY_CHARS:
        return
    if isinstance(value, str):
        if value != "[REDACTED]":  # what redacted() put in place of a sensitive field
            parts.append(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        parts.append(str(value))
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect(item, parts, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, parts, depth + 1)


def _context(curated: Any, budget: int) -> dict[str, object]:
    return {
        "context": curated.content, "used": int(curated.token_count), "budget": budget,
        "ids": [c.entry.id for c in curated.entries], "omitted": int(curated.omitted),
        "mode": curated.mode, "degraded": None,
    }


def _degraded_context(budget: int, mode: str, exc: Exception) -> dict[str, object]:
    kind, _ = sanitize_exception(exc)
    return {"context": "", "used": 0, "budget": budget, "ids": [], "omitted": 0,
            "mode": mode, "degraded": kind}


def make_recall(
    memory: Any = None, *, budget: int = DEFAULT_BUDGET,
    query_from: Sequence[str] | str = ("query",), types: Sequence[Any] | None = None,
    tags: Iterable[str] | None = None, required: bool = False, binding: str = DEFAULT,
) -> Action:
    """A step action: ``memory.curate(query, token_budget=budget)`` with the query taken
    from ``query_from`` (dependency outputs or state keys); an empty query gives the
    cold-start briefing (orient mode). Returns ``{"context", "used", "budget", "ids",
    "omitted", "mode", "degraded"}``. When the memory fails, the step still returns, with
    an empty context and ``degraded`` set to the error's class, unless ``required``."""
    get_memory = _memory_or_binding(memory, binding)
    check_budget(budget)
    names = _names(query_from, "query_from")
    parsed_types, parsed_tags = _types(types), _tags(tags)
    if not isinstance(required, bool):
        raise PluginConfigError("required must be True or False")

    def recall(ctx: StepContext) -> dict[str, object]:
        mem = get_memory()
        query = query_text(ctx, names)
        mode = "query" if query else "orient"
        try:
            curated = mem.curate(query or None, token_budget=budget, mode=mode,
                                 types=parsed_types, tags=parsed_tags)
        except Exception as exc:
            if required:
                raise
            return _degraded_context(budget, mode, exc)
        return _context(curated, budget)

    return _mark(recall, "recall")


def make_orient(memory: Any = None, *, budget: int = DEFAULT_BUDGET, required: bool = False,
                binding: str = DEFAULT) -> Action:
    """A step action: the memory's cold-start briefing (``curate(mode="orient")``:
    pinned memories, decisions, active plans, recent observations, summaries, keys) for
    the start of a run. Same output and failure rule as :func:`make_recall`."""
    get_memory = _memory_or_binding(memory, binding)
    check_budget(budget)
    if not isinstance(required, bool):
        raise PluginConfigError("required must be True or False")

    def orient(ctx: StepContext) -> dict[str, object]:
        mem = get_memory()
        try:
            curated = mem.curate(None, token_budget=budget, mode="orient")
        except Exception as exc:
            if required:
                raise
            return _degraded_context(budget, "orient", exc)
        return _context(curated, budget)

    return _mark(orient, "orient")


# -- remember ---------------------------------------------------------------------------
def make_remember(
    memory: Any = None, *, key: str, source: str | None = None, field: str | None = None,
    type: Any = "FACT", tags: Iterable[str] = ("kairos",), importance: float = 0.5,
    prefix: str | None = "kairos", required: bool = True, binding: str = DEFAULT,
    max_chars: int = MAX_CHARS,
) -> Action:
    """A step action: store the output of dependency ``source`` (or its ``field``) under
    ``prefix/key``, superseding what that key held (the old entry is archived and linked,
    never lost). ``key`` is a template whose ``{placeholders}`` are read from state.
    The text is bounded and has sensitive fields and credentials masked. A missing or
    empty output makes the step SKIPPED (nothing to remember). Returns ``{"id", "key",
    "type", "superseded", "degraded"}``; a memory failure fails the step unless
    ``required=False``."""
    get_memory = _memory_or_binding(memory, binding)
    template = KeyTemplate(key, prefix)
    try:
        memory_type = tulving.MemoryType.parse(type)
    except tulving.TulvingError as exc:
        raise PluginConfigError(str(exc)) from exc
    tag_list = _tags(tags) or []
    if isinstance(importance, bool) or not isinstance(importance, int | float) \
            or not 0 <= importance <= 1:
        raise PluginConfigError("importance must be a number in [0, 1]")
    if source is not None:
        _names(source, "source")
    if field is not None:
        _names(field, "field")
    if not isinstance(required, bool):
        raise PluginConfigError("required must be True or False")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) \
            or not 1 <= max_chars <= 100_000:
        raise PluginConfigError("max_chars must be an integer in 1..100000")

    def remember(ctx: StepContext) -> object:
        mem = get_memory()
        name = source or _sole_input(ctx)
        value = ctx.inputs.get(name)
        if field is not None and isinstance(value, Mapping):
            value = value.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            return SKIP
        memory_key = template.fill(lambda f: ctx.state.get(f))
        content = render_value(value, max_chars)
        try:
            entry = mem.store(
                content, type=memory_type, key=memory_key, tags=tag_list,
                importance=float(importance), source_type="agent_run",
                metadata={"kairos": {"step": ctx.step_id, "source": name}},
            )
        except Exception as exc:
            if required:
                raise
            kind, _ = sanitize_exception(exc)
            return {"id": None, "key": memory_key, "type": None, "superseded": None,
                    "degraded": kind}
        return {"id": entry.id, "key": entry.key, "type": entry.type.value,
                "superseded": entry.supersedes, "degraded": None}

    remember.__tulving_key_fields__ = list(template.fields)  # type: ignore[attr-defined]
    return _mark(remember, "remember")


def _sole_input(ctx: StepContext) -> str:
    if len(ctx.inputs) != 1:
        raise PluginConfigError(
            f"step {ctx.step_id!r} remembers a dependency's output: give source= when it "
            f"has {len(ctx.inputs)} dependencies with outputs")
    name: str = next(iter(ctx.inputs))
    return name


# -- whole steps ------------------------------------------------------------------------
def recall_step(memory: Any = None, *, name: str = "recall", depends_on: list[str] | None = None,
                budget: int = DEFAULT_BUDGET, query_from: Sequence[str] | str = ("query",),
                types: Sequence[Any] | None = None, tags: Iterable[str] | None = None,
                required: bool = False, binding: str = DEFAULT, **config: Any) -> Step:
    """A ``kairos.Step`` running :func:`make_recall`, with its output contract (shape and
    :func:`fits_budget`) and a state scope that reads only the ``query_from`` keys that
    are not dependencies and writes nothing but its own output."""
    action = make_recall(memory, budget=budget, query_from=query_from, types=types, tags=tags,
                         required=required, binding=binding)
    deps = list(depends_on or [])
    reads = [n for n in _names(query_from, "query_from") if n not in deps]
    return Step(name, action, depends_on=deps, read_keys=reads, write_keys=[],
                output_contract=context_output(budget, memory, binding), **config)


def orient_step(memory: Any = None, *, name: str = "orient", depends_on: list[str] | None = None,
                budget: int = DEFAULT_BUDGET, required: bool = False, binding: str = DEFAULT,
                **config: Any) -> Step:
    """A ``kairos.Step`` running :func:`make_orient`, with its output contract."""
    action = make_orient(memory, budget=budget, required=required, binding=binding)
    return Step(name, action, depends_on=list(depends_on or []), read_keys=[], write_keys=[],
                output_contract=context_output(budget, memory, binding), **config)


def remember_step(memory: Any = None, *, key: str, source: str | None = None,
                  name: str = "remember", depends_on: list[str] | None = None,
                  field: str | None = None, type: Any = "FACT",
                  tags: Iterable[str] = ("kairos",), importance: float = 0.5,
                  prefix: str | None = "kairos", required: bool = True,
                  binding: str = DEFAULT, **config: Any) -> Step:
    """A ``kairos.Step`` running :func:`make_remember`. ``source`` defaults to the one
    dependency; ``depends_on`` defaults to ``[source]``. It reads only the key
    template's placeholders from state."""
    deps = list(depends_on) if depends_on is not None else ([source] if source else [])
    if source is None and len(deps) == 1:
        source = deps[0]
    if source is None:
        raise PluginConfigError("remember_step needs source= (the step whose output to store)")
    if source not in deps:
        deps.append(source)
    action = make_remember(memory, key=key, source=source, field=field, type=type, tags=tags,
                           importance=importance, prefix=prefix, required=required,
                           binding=binding)
    reads = list(getattr(action, "__tulving_key_fields__", []))
    return Step(name, action, depends_on=deps, read_keys=reads, write_keys=[],
                output_contract=REMEMBER_OUTPUT, **config)


# -- the manifest's ready-made steps (memory from bind()) -------------------------------
_default_recall = make_recall()
_default_orient = make_orient()
_default_remember = make_remember(key="{memory_key}")


@step_plugin(name="recall", output_contract=context_output(DEFAULT_BUDGET),
             description="Curate the bound Tulving memory into 1,500 tokens for state 'query'.")
def recall(ctx: StepContext) -> object:
    return _default_recall(ctx)


@step_plugin(name="orient", output_contract=context_output(DEFAULT_BUDGET),
             description="Cold-start briefing of the bound Tulving memory in 1,500 tokens.")
def orient(ctx: StepContext) -> object:
    return _default_orient(ctx)


@step_plugin(name="remember", output_contract=REMEMBER_OUTPUT,
             description="Store the sole dependency's output under kairos/<state memory_key>.")
def remember(ctx: StepContext) -> object:
    return _default_remember(ctx)


for _action, _kind in ((recall, "recall"), (orient, "orient"), (remember, "remember")):
    _mark(_action, _kind)
