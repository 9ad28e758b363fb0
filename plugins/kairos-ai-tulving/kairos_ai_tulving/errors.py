"""The plugin's one error type.

A misconfigured memory step is both a Kairos configuration error (what a Kairos author
catches around ``Workflow(...)``) and a Tulving error (what a Tulving user catches), so
it derives from both rather than making either audience learn a third hierarchy.
"""

from __future__ import annotations

import kairos

import tulving


class PluginConfigError(kairos.ConfigError, tulving.ConfigError):
    """Bad arguments to a factory of this plugin, or a step with no memory bound."""
