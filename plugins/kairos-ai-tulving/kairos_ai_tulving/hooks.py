"""``TulvingHooks``: a Kairos lifecycle hook that remembers what each run learns.

Per run (``on_workflow_start`` .. ``on_workflow_complete``):

- one Tulving session (goal ``Kairos workflow <name>``), ended at the end of the run so
  Tulving writes its summary; when the caller already holds an explicit session, the
  run writes into it and leaves it open;
- a DECISION per step whose output passed its output contract (key
  ``<prefix>/<workflow>/<step>/decision``, superseding the previous run's), written as
  the step completes so a later step of the same run can recall it;
- an OBSERVATION per step that failed for good, naming the failing contract fields or
  error classes of each attempt, built with ``kairos.sanitize_retry_context`` (never
  an exception message or a failing output), key ``<prefix>/<workflow>/<step>/failure``;
- success/failure counts (``Memory.record_outcome``) on the workflow as a PROCEDURE
  (``<prefix>/<workflow>/procedure``) and on any procedure a step is declared to follow;
- an EPISODE narrating the run (step by step), which the session summary digests.

A memory that is closed, full or raising never breaks a run: every operation is guarded
on its own (one failed write does not stop the next, and the session is still ended),
and what failed is kept in :attr:`TulvingHooks.errors` by event and error class (Kairos
would swallow a hook's exception too, but then the rest of the hook's work would be lost).

Kairos calls hooks under one executor-wide lock; the hook keeps its own lock as well.
It follows one run at a time: give each workflow that runs concurrently its own
``TulvingHooks``. A run that never reaches ``on_workflow_complete`` (the LLM-call circuit
breaker raises out of ``Workflow.run``) is closed as ``interrupted`` when the next run
starts, or by :meth:`TulvingHooks.close`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kairos import ExecutorHooks, sanitize_exception

import tulving
from kairos_ai_tulving.binding import check_memory
from kairos_ai_tulving.errors import PluginConfigError
from kairos_ai_tulving.keys import KeyTemplate
from kairos_ai_tulving.rendering import (
    MAX_ATTEMPTS_LISTED,
    clean_text,
    describe_failures,
    execution_failure,
    render_value,
    slug,
    validation_failure,
)
from kairos_ai_tulving.steps import is_memory_step

logger = logging.getLogger(__name__)
T = TypeVar("T")

_STEP_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_ERRORS_KEPT = 100
#: Failed attempts kept per step in a run (a retry storm stays bounded).
MAX_FAILURES_KEPT = 20
DECISION_IMPORTANCE = 0.7
FAILURE_IMPORTANCE = 0.7


@dataclass
class _StepLog:
    attempts: int = 0
    failures: list[dict[str, object]] = field(default_factory=list)
    validated: bool = False
    completed: bool = False
    skipped: str | None = None


@dataclass
class _Run:
    workflow: str
    order: list[str]
    depends: dict[str, list[str]]
    started: float
    session_id: str | None = None
    owns_session: bool = False
    steps: dict[str, _StepLog] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    def log(self, step: str) -> _StepLog:
        return self.steps.setdefault(step, _StepLog())


@dataclass(frozen=True)
class RunReport:
    """What the hook did for one run (``TulvingHooks.last_run``)."""

    workflow: str
    status: str
    session_id: str | None
    summary_id: str | None
    #: Ids of the entries the hook wrote (decisions, failures, procedure, run episode).
    written: tuple[str, ...]
    #: ``(operation, error class)`` for each memory operation that failed.
    errors: tuple[tuple[str, str], ...]


class TulvingHooks(ExecutorHooks):
    """Record a Kairos run in a ``tulving.Memory``; never let the memory break the run.

    ``decisions``: ``True`` (steps whose output passed an output contract), ``False``, or
    the step names to record. ``procedures``: ``{step name: PROCEDURE key}`` to count that
    step's final outcome on a procedure it follows. ``track_workflow``: count each run's
    outcome on the workflow as a procedure. ``session``: one session per run.
    ``workflow``: the name used in keys (default: the workflow's own, as a key segment).
    """

    def __init__(
        self, memory: Any, *, workflow: str | None = None,
        decisions: bool | Iterable[str] = True, procedures: Mapping[str, str] | None = None,
        track_workflow: bool = True, session: bool = True,
        tags: Iterable[str] = ("kairos",), prefix: str = "kairos",
    ) -> None:
        self.memory = check_memory(memory)
        if workflow is not None and (not isinstance(workflow, str) or not slug(workflow)
                                     or slug(workflow) != workflow):
            raise PluginConfigError(
                "workflow must be a key segment: letters, digits and . _ : - (at most 64)")
        self._workflow = workflow
        if isinstance(decisions, bool):
            self._decisions: bool | frozenset[str] = decisions
        else:
            names = frozenset(_step_names(decisions, "decisions"))
            self._decisions = names
        self._procedures = dict(_procedure_map(procedures))
        for flag, value in (("track_workflow", track_workflow), ("session", session)):
            if not isinstance(value, bool):
                raise PluginConfigError(f"{flag} must be True or False")
        self._track_workflow = track_workflow
        self._session = session
        tag_list = [tags] if isinstance(tags, str) else list(tags)
        if not all(isinstance(t, str) for t in tag_list):
            raise PluginConfigError("tags must be strings")
        self._tags = tag_list
        KeyTemplate("x", prefix)  # the same prefix rule as remember steps
        self._prefix = prefix
        self._lock = threading.RLock()
        self._run: _Run | None = None
        self.last_run: RunReport | None = None
        #: ``(operation, error class)`` of the latest failed memory operations, all runs.
        self.errors: deque[tuple[str, str]] = deque(maxlen=MAX_ERRORS_KEPT)

    # -- Kairos events ------------------------------------------------------------------
    def on_workflow_start(self, graph: Any) -> None:
        self._guard("workflow_start", lambda: self._start(graph))

    def on_step_start(self, step: Any, attempt: int) -> None:
        self._in_run("step_start", lambda run: _raise_attempts(run.log(step.name), attempt))

    def on_step_fail(self, step: Any, error: Exception, attempt: int) -> None:
        self._in_run("step_fail", lambda run: _add_failure(
            run.log(step.name), execution_failure(error, attempt)))

    def on_validation_fail(self, step: Any, phase: str, result: Any, attempt: int) -> None:
        self._in_run("validation_fail", lambda run: _add_failure(
            run.log(step.name), validation_failure(result, phase, attempt)))

    def on_validation_complete(self, step: Any, phase: str, result: Any) -> None:
        if phase == "output":
            self._in_run("validation_complete",
                         lambda run: setattr(run.log(step.name), "validated", True))

    def on_step_skip(self, step: Any, reason: str) -> None:
        self._in_run("step_skip", lambda run: setattr(
            run.log(step.name), "skipped", clean_text(str(reason), 200)))

    def on_step_complete(self, step: Any, result: Any) -> None:
        self._in_run("step_complete", lambda run: self._complete(run, step, result))

    def on_workflow_complete(self, result: Any) -> None:
        self._guard("workflow_complete", lambda: self._finish(result))

    def close(self) -> None:
        """Close a run left open (no ``on_workflow_complete``) as ``interrupted``."""
        self._guard("close", lambda: self._finish(None))

    # -- guards -------------------------------------------------------------------------
    def _guard(self, operation: str, fn: Callable[[], T]) -> T | None:
        """Run ``fn``; on any error, note ``(operation, class)`` and carry on."""
        try:
            with self._lock:
                return fn()
        except Exception as exc:
            kind, _ = sanitize_exception(exc)
            self.errors.append((operation, kind))
            run = self._run
            if run is not None:
                run.errors.append((operation, kind))
            logger.warning("TulvingHooks: %s failed (%s); the run goes on without it",
                           operation, kind)
            return None

    def _in_run(self, operation: str, fn: Callable[[_Run], object]) -> None:
        def call() -> None:
            if self._run is not None:
                fn(self._run)
        self._guard(operation, call)

    # -- a run --------------------------------------------------------------------------
    def _start(self, graph: Any) -> None:
        if self._run is not None:
            self._finish(None)
        try:
            steps = list(graph.topological_sort())
        except Exception:
            steps = list(getattr(graph, "steps", []))
        name = self._workflow or slug(getattr(graph, "name", "")) or "workflow"
        run = _Run(workflow=name, order=[s.name for s in steps],
                   depends={s.name: list(s.depends_on) for s in steps},
                   started=time.monotonic())
        self._run = run
        if self._session:
            record = self._guard("start_session", lambda: self._start_session(name))
            if record is not None:
                run.session_id, run.owns_session = record
            else:
                run.session_id = self._guard("session_id", lambda: self.memory.session_id)

    def _start_session(self, name: str) -> tuple[str | None, bool]:
        try:
            record = self.memory.start_session(goal=f"Kairos workflow {name}")
        except tulving.ValidationError:  # the caller holds an explicit session: join it
            return self.memory.session_id, False
        return record.id, True

    def _complete(self, run: _Run, step: Any, result: Any) -> None:
        log = run.log(step.name)
        log.completed = True
        if not self._wants_decision(step, log) or getattr(result, "output", None) is None:
            return
        text = render_value(result.output)
        content = f"Step '{step.name}' of Kairos workflow '{run.workflow}' decided:\n{text}"
        self._store(run, "store_decision", content, type="DECISION",
                    key=self._key(run, step.name, "decision"), importance=DECISION_IMPORTANCE,
                    tags=[*self._tags, "decision"], step=step.name, attempts=log.attempts)

    def _wants_decision(self, step: Any, log: _StepLog) -> bool:
        if is_memory_step(step):
            return False
        if isinstance(self._decisions, frozenset):
            return step.name in self._decisions
        return self._decisions and log.validated and step.output_contract is not None

    def _finish(self, result: Any) -> None:
        run = self._run
        if run is None:
            return
        try:
            self._close_run(run, result)
        finally:
            self._run = None

    def _close_run(self, run: _Run, result: Any) -> None:
        status = str(getattr(getattr(result, "status", None), "value", "interrupted"))
        statuses = _statuses(run, result)
        for step_name in run.order:
            if statuses.get(step_name) == "failed_final":
                self._record_failure(run, step_name)
        for step_name, key in self._procedures.items():
            if statuses.get(step_name) in ("completed", "failed_final"):
                success = statuses[step_name] == "completed"

                def record(k: str = key, s: bool = success) -> None:
                    self._outcome(run, k, s)

                self._guard("record_outcome", record)
        if self._track_workflow:
            self._guard("workflow_procedure",
                        lambda: self._workflow_outcome(run, status == "complete"))
        self._store(run, "store_run", _narrate(run, status, statuses, result),
                    type="EPISODE", key=None, importance=0.4, tags=[*self._tags, "run"])
        summary_id = None
        if run.owns_session:
            ended = self._guard("end_session", self.memory.end_session)
            summary_id = ended.summary_id if ended is not None else None
        self.last_run = RunReport(run.workflow, status, run.session_id, summary_id,
                                  tuple(run.written), tuple(run.errors))

    def _record_failure(self, run: _Run, step_name: str) -> None:
        log = run.log(step_name)
        detail = describe_failures(log.failures) if log.failures else "no attempt details"
        attempts = max(log.attempts, len(log.failures))
        content = (f"Step '{step_name}' of Kairos workflow '{run.workflow}' failed after "
                   f"{attempts} attempt{'s' if attempts != 1 else ''}: {detail}.")
        self._store(run, "store_failure", content, type="OBSERVATION",
                    key=self._key(run, step_name, "failure"), importance=FAILURE_IMPORTANCE,
                    tags=[*self._tags, "failure"], step=step_name, attempts=attempts,
                    failures=log.failures[:MAX_ATTEMPTS_LISTED])

    def _outcome(self, run: _Run, key: str, success: bool) -> None:
        entry = self.memory.record_outcome(key, success)
        run.written.append(entry.id)

    def _workflow_outcome(self, run: _Run, success: bool) -> None:
        key = f"{self._prefix}/{run.workflow}/procedure" if self._prefix \
            else f"{run.workflow}/procedure"
        content = _describe_workflow(run)
        try:
            current = self.memory.get(key)
        except tulving.NotFoundError:
            current = None
        if current is None or current.content != content:
            self.memory.store(content, type="PROCEDURE", key=key, tags=[*self._tags, "workflow"],
                              importance=0.6, source_type="agent_run", dedup=False,
                              metadata={"kairos": {"workflow": run.workflow}})
        self._outcome(run, key, success)

    def _key(self, run: _Run, step_name: str, what: str) -> str:
        key = f"{run.workflow}/{slug(step_name) or 'step'}/{what}"
        return f"{self._prefix}/{key}" if self._prefix else key

    def _store(self, run: _Run, operation: str, content: str, *, type: str, key: str | None,
               importance: float, tags: list[str], **kairos_meta: object) -> None:
        meta = {"workflow": run.workflow, **kairos_meta}

        def write() -> None:
            entry = self.memory.store(clean_text(content), type=type, key=key, tags=tags,
                                      importance=importance, source_type="agent_run",
                                      metadata={"kairos": meta})
            run.written.append(entry.id)
        self._guard(operation, write)


# -- helpers ----------------------------------------------------------------------------
def _step_names(names: Iterable[str], what: str) -> list[str]:
    if isinstance(names, str):
        names = [names]
    out = list(names)
    if not all(isinstance(n, str) and _STEP_NAME.match(n) for n in out):
        raise PluginConfigError(f"{what} must be Kairos step names ([a-zA-Z0-9_-]+)")
    return out


def _procedure_map(procedures: Mapping[str, str] | None) -> Iterable[tuple[str, str]]:
    if procedures is None:
        return []
    if not isinstance(procedures, Mapping):
        raise PluginConfigError("procedures must map step names to PROCEDURE keys")
    _step_names(list(procedures), "procedures")
    for key in procedures.values():
        if not isinstance(key, str) or not key.strip() or len(key) > 200:
            raise PluginConfigError("a procedure key is a non-empty string of at most 200")
    return list(procedures.items())


def _raise_attempts(log: _StepLog, attempt: int) -> None:
    if isinstance(attempt, int) and attempt > log.attempts:
        log.attempts = attempt


def _add_failure(log: _StepLog, context: dict[str, object]) -> None:
    if len(log.failures) < MAX_FAILURES_KEPT:
        log.failures.append(context)


def _statuses(run: _Run, result: Any) -> dict[str, str]:
    """Each step's final status: from the result, or (interrupted) from what was seen."""
    results = getattr(result, "step_results", None)
    if isinstance(results, Mapping):
        return {str(name): str(getattr(r.status, "value", r.status)) for name, r in results.items()}
    out: dict[str, str] = {}
    for name, log in run.steps.items():
        if log.completed:
            out[name] = "completed"
        elif log.skipped is not None:
            out[name] = "skipped"
        elif log.failures:
            out[name] = "failed_final"
    return out


def _describe_workflow(run: _Run) -> str:
    parts = []
    for name in run.order:
        deps = run.depends.get(name) or []
        parts.append(f"{name} (after {', '.join(deps)})" if deps else name)
    return clean_text(f"Kairos workflow '{run.workflow}': run the steps " + " -> ".join(parts))


def _narrate(run: _Run, status: str, statuses: Mapping[str, str], result: Any) -> str:
    duration = getattr(result, "duration_ms", None)
    took = f" in {duration:.0f} ms" if isinstance(duration, int | float) else ""
    parts = []
    for name in run.order:
        log = run.steps.get(name, _StepLog())
        state = {"completed": "ok", "failed_final": "failed", "skipped": "skipped"}.get(
            statuses.get(name, ""), "not run")
        retries = f" after {log.attempts} attempts" if log.attempts > 1 else ""
        why = f" ({log.skipped})" if state == "skipped" and log.skipped else ""
        parts.append(f"{name} {state}{retries}{why}")
    return f"Kairos run of workflow '{run.workflow}' {status}{took}: " + "; ".join(parts) + "."
