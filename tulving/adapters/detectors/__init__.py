"""The rule sets behind redaction, from maintained libraries: betterleaks' 460+ rules (a
scanner of the gitleaks lineage) and detect-secrets' plugins for credential formats (with
a few plugins of Tulving's own, written to detect-secrets' plugin interface, for formats
both lack), python-stdnum's validators for national identifiers, cards and IBANs, and
phonenumbers' metadata for phone numbers. The domain receives them as data:
:func:`load_default` is the registry's ``detectors`` adapter, a loader the composition
installs with :func:`tulving.domain.rule_sets.install`
(``tulving.application.plumbing.rule_set_source``)."""

from __future__ import annotations

from tulving.domain.rule_sets import RuleSets


def load_default() -> RuleSets:
    """Build the rule sets (imports detect-secrets and python-stdnum: call lazily)."""
    import logging
    import warnings
    from importlib.metadata import version

    shown = warnings.showwarning

    from tulving.adapters.detectors import betterleaks_rules
    from tulving.adapters.detectors.accounts import account_rules
    from tulving.adapters.detectors.contacts import contact_rules
    from tulving.adapters.detectors.detect_secrets_rules import secret_rules
    from tulving.adapters.detectors.national_ids import identifier_rules
    from tulving.adapters.detectors.vendor_prefixes import prefixed_rules

    if warnings.showwarning is not shown:
        # detect-secrets' import calls logging.captureWarnings(True) for the whole
        # process: every warning went to the "py.warnings" logger, which drops it when
        # the application configured no handler (a TulvingWarning said to nobody). The
        # application's own choice is kept: this undoes only what the import did.
        logging.captureWarnings(False)

    return RuleSets(secrets=(*secret_rules(), *prefixed_rules(),
                             *betterleaks_rules.secret_rules()),
                    identifiers=(*identifier_rules(), *account_rules()),
                    contacts=contact_rules(),
                    source=f"detect-secrets {version('detect-secrets')}, "
                           f"{betterleaks_rules.engine_version()}, "
                           f"python-stdnum {version('python-stdnum')}, "
                           f"phonenumbers {version('phonenumbers')}")
