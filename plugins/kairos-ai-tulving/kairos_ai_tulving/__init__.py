"""kairos-ai-tulving: Tulving memory for Kairos workflows.

    from tulving import Memory
    from kairos_ai_tulving import TulvingHooks, recall_step, remember_step

``MANIFEST`` is the ``kairos.plugins`` entry point: the ``recall``, ``orient`` and
``remember`` steps (on the memory given to :func:`bind`), the ``fits_budget`` validator
and the ``reference`` workflow factory.
"""

from __future__ import annotations

from kairos.plugins import build_manifest

from kairos_ai_tulving.binding import Binding, bind, bound, unbind
from kairos_ai_tulving.contracts import REMEMBER_OUTPUT, context_output
from kairos_ai_tulving.errors import PluginConfigError
from kairos_ai_tulving.hooks import RunReport, TulvingHooks
from kairos_ai_tulving.steps import (
    DEFAULT_BUDGET,
    make_orient,
    make_recall,
    make_remember,
    orient,
    orient_step,
    recall,
    recall_step,
    remember,
    remember_step,
)
from kairos_ai_tulving.validators import fits_budget
from kairos_ai_tulving.workflows import ANSWER_OUTPUT, build_reference_workflow

__version__ = "0.1.0"

MANIFEST = build_manifest(
    name="tulving",
    version=__version__,
    description="Tulving memory for Kairos workflows: recall, orient and remember steps, "
                "a token-budget validator, and a recall -> LLM -> remember workflow.",
    requires_kairos=">=0.5,<0.6",
    steps=(recall, orient, remember),
    validators=(fits_budget,),
    workflows={"reference": build_reference_workflow},
)

__all__ = [
    "ANSWER_OUTPUT",
    "DEFAULT_BUDGET",
    "MANIFEST",
    "REMEMBER_OUTPUT",
    "Binding",
    "PluginConfigError",
    "RunReport",
    "TulvingHooks",
    "__version__",
    "bind",
    "bound",
    "build_reference_workflow",
    "context_output",
    "fits_budget",
    "make_orient",
    "make_recall",
    "make_remember",
    "orient_step",
    "recall_step",
    "remember_step",
    "unbind",
]
