"""Public faces that load their names on first use.

Every ``ax-<tool>`` invocation imports its package, ``--help`` included; a
package root that imported its core modules (and pydantic with them) would make
every start pay for them. A tool's ``__init__`` lists its public names and the
module each lives in, and sets ``__getattr__ = lazy_getattr(__name__, table)``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing ``name`` from ``module_of[name]`` when first asked.

    Module names may be absolute (``ax_log.writer``) or relative to ``package``
    (``.writer``). A public name must not also be a submodule's name: importing
    that submodule would put the module where the name should be.
    """

    def load(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        # Kept on the package, so the next lookup is a plain attribute read.
        setattr(sys.modules[package], name, value)
        return value

    return load
