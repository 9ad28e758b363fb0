"""Schemathesis hooks of the contract run (``SCHEMATHESIS_HOOKS=tests.http.openapi_hooks``).

Two bodies are bytes no schema can describe the inside of: a bundle (``POST /v1/import``,
``application/zip``) and a sync delta (``POST /v1/sync/deltas``, a bundle too, sent as
``application/octet-stream``). A fuzzer left to make them up sends random bytes, which
the server rightly refuses (422): to test that a valid one is accepted it must be
given valid ones. These are real bundles of the tenant the run's token is bound to
(``CONTRACT_USER``), exported by the library; invalid ones come from the fuzzer's
negative mode as for any body. A file of another system (``POST
/v1/import/{source_format}``) is likewise one of the fixtures in ``tests/fixtures/foreign``
in the format the path names, whatever body the fuzzer drew.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import schemathesis
from hypothesis import strategies as st
from schemathesis.generation.meta import REQUEST_SHAPE_PROBES, CoverageScenario

#: The user the contract run's token is bound to (tests/http/test_openapi_contract.py).
CONTRACT_USER = "u1"


def bundles(count: int = 4) -> list[bytes]:
    """``count`` small bundles of ``CONTRACT_USER``'s memories, each with its own ids."""
    from tulving import Memory

    made = []
    with tempfile.TemporaryDirectory() as folder:
        for n in range(count):
            path = Path(folder) / f"bundle-{n}.db"
            with Memory(path, agent_id="default", user_id=CONTRACT_USER, embedder="hashing",
                        vectors="exact") as memory:
                for i in range(n + 1):
                    memory.store(f"bundled fact {n}.{i}", type="FACT",
                                 key=f"bundled/{n}" if i == 0 else None)
                out = io.BytesIO()
                memory.export(out)
                made.append(out.getvalue())
    return made


#: A real file of each format ``/v1/import/{source_format}`` reads (zep's is a Graphiti
#: graph).
FOREIGN = {"mem0": "mem0_export.json", "zep": "graphiti_graph.json",
           "letta": "letta_agent.af", "otel": "otel_traces.json"}
_FIXTURES = Path(__file__).parents[1] / "fixtures" / "foreign"


#: The coverage phase's scenarios that make a request the schema forbids (a case of one of
#: them keeps the body the fuzzer made, whatever its mode says).
NEGATIVE_SCENARIOS = frozenset(
    m for m in CoverageScenario
    if m.name.startswith(("VALUE_", "STRING_", "ARRAY_", "OBJECT_ABOVE", "OBJECT_BELOW",
                          "OBJECT_UNEXPECTED", "OBJECT_MISSING", "OBJECT_INVALID",
                          "INCORRECT", "INVALID", "NOT_", "NON_", "MISSING", "DUPLICATE",
                          "UNSUPPORTED", "MALFORMED", "UNSPECIFIED", "NULL_VALUE")))


@schemathesis.hook
def map_case(context: schemathesis.HookContext, case: schemathesis.Case) -> schemathesis.Case:
    """A positive body of ``/v1/import/{source_format}`` is a real file of that format (a
    negative one is left as the fuzzer made it, to be refused)."""
    name = FOREIGN.get(str(case.path_parameters.get("source_format", "")))
    if case.operation.path != "/v1/import/{source_format}" or name is None:
        return case
    meta = case.meta  # only a case meant to be valid: a negative one stays as it was made
    scenario = getattr(meta.phase.data, "scenario", None) if meta is not None else None
    probe = scenario in REQUEST_SHAPE_PROBES or scenario in NEGATIVE_SCENARIOS
    valid = meta is not None and meta.generation.mode.value == "positive" and all(
        part.mode.value == "positive" for part in meta.components.values())
    if meta is None or (valid and not probe):
        case.body = (_FIXTURES / name).read_bytes()
    return case


_BUNDLES = st.sampled_from(bundles())
schemathesis.openapi.media_type("application/zip", _BUNDLES)
schemathesis.openapi.media_type("application/octet-stream", _BUNDLES)
