"""Text that is not valid Unicode is refused at the facade, whatever the argument.

A Python ``str`` may hold a lone surrogate (``"a\\ud800b"``: what a broken decoder or a
JSON ``"\\ud800"`` escape produces) that no UTF-8 store, index, tokenizer or wire can
carry. Left alone it surfaces deep inside as a bare ``UnicodeEncodeError`` or
``TypeError`` (or a 500 over HTTP). Every text-taking method of the Memory is wrapped
here once, so each of its arguments (nested lists and dicts, keys included) is checked
before anything runs, and the caller gets a ``ValidationError`` that names the argument.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from tulving.domain.validation import check_unicode

F = TypeVar("F", bound=Callable[..., Any])


def refuses_invalid_text(method: F) -> F:
    """``method`` with every argument checked by ``check_unicode`` first."""
    signature = inspect.signature(method)
    spread = {name for name, p in signature.parameters.items()
              if p.kind is inspect.Parameter.VAR_KEYWORD}

    @functools.wraps(method)
    def checked(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(*args, **kwargs)
        for name, value in bound.arguments.items():
            if name in spread:
                for key, item in value.items():
                    check_unicode(key, item)
            elif name != "self":
                check_unicode(name, value)
        return method(*args, **kwargs)

    checked.__tulving_text_guard__ = True  # type: ignore[attr-defined]
    return checked  # type: ignore[return-value]


def guard_methods(cls: type, names: Iterable[str]) -> None:
    """Wrap ``cls``'s methods ``names`` with ``refuses_invalid_text`` (in place)."""
    for name in names:
        setattr(cls, name, refuses_invalid_text(getattr(cls, name)))


def public_methods(cls: type) -> list[str]:
    """The public methods ``cls`` defines itself (functions, not properties), in order."""
    return [name for name, value in vars(cls).items()
            if not name.startswith("_") and inspect.isfunction(value)]


def guarded(method: object) -> bool:
    """Whether ``method`` went through ``refuses_invalid_text``."""
    return getattr(method, "__tulving_text_guard__", False) is True
