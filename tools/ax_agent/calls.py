"""One tool call's input, facts and identity: parsing, fact evaluation, loop keys.

The model's bytes are untrusted. ``parse_input`` validates them against the
tool's pydantic model, decoding once a string that itself is the JSON object
or array the model was meant to send (some models double-encode nested
arguments and cannot recover from the schema error alone). ``declared_facts``
evaluates a tool's fact functions into the plain values a decision request
carries; a fact that throws, or gives a value of the wrong shape, denies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from libcommon import jsonio
from libcommon.cliapp import describe_validation_error

if TYPE_CHECKING:
    from ax_policy import Decision, DeclaredFacts, ToolFacts

# Validation error types that mean "expected an object or array here".
_CONTAINER_ERRORS = frozenset(
    {"dict_type", "list_type", "model_type", "model_attributes_type", "tuple_type", "set_type"}
)
FACT_ERROR_MAX_CHARS = 300


@dataclass(frozen=True)
class Parsed:
    value: BaseModel | None
    # What went wrong, worded for the model to fix its next call.
    problem: str | None = None


def parse_input(model: type[BaseModel], raw: Any) -> Parsed:
    """Validate ``raw``; a string holding the expected JSON is decoded once."""
    candidate = raw
    if isinstance(raw, str):
        candidate = _json_container(raw)
        if candidate is None:
            return Parsed(None, "the input must be a JSON object, and a string was sent")
    try:
        return Parsed(model.model_validate(candidate))
    except ValidationError as first:
        repaired = _decode_nested(candidate, first)
        if repaired is not None:
            try:
                return Parsed(model.model_validate(repaired))
            except ValidationError as second:
                return Parsed(None, describe_validation_error(second, "input"))
        return Parsed(None, describe_validation_error(first, "input"))


def _json_container(text: str) -> Any:
    try:
        value = jsonio.loads(text)
    except jsonio.JSONDecodeError:
        return None
    return value if isinstance(value, dict | list) else None


def _decode_nested(value: Any, error: ValidationError) -> Any:
    """A copy of ``value`` with each string an object or array was expected at decoded."""
    if not isinstance(value, dict):
        return None
    copy = jsonio.loads(jsonio.dumps(value))
    changed = False
    for item in error.errors():
        if item["type"] not in _CONTAINER_ERRORS or not isinstance(item.get("input"), str):
            continue
        loaded = _json_container(item["input"])
        if loaded is None:
            continue
        if _set_at(copy, list(item["loc"]), loaded):
            changed = True
    return copy if changed else None


def _set_at(document: Any, path: list[Any], value: Any) -> bool:
    target = document
    for key in path[:-1]:
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            return False
    try:
        target[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True


def declared_facts(facts: ToolFacts, value: BaseModel) -> DeclaredFacts | Decision:
    """The facts as plain values, or a deny when one cannot be evaluated."""
    from ax_policy import FACT_KINDS, Decision, DeclaredFacts

    plain: dict[str, Any] = {"internal": facts.internal}
    for kind in FACT_KINDS:
        fn = getattr(facts, kind)
        if fn is None:
            continue
        try:
            result = fn(value)
            plain[kind] = result.model_dump() if isinstance(result, BaseModel) else result
        except Exception as exc:  # a fact that throws denies (fail closed)
            return _fact_denied(facts.name, kind, exc)
    try:
        return DeclaredFacts.model_validate(plain)
    except ValidationError as exc:
        problem = describe_validation_error(exc, "fact")
        return Decision(
            verdict="deny",
            decision_class="destructive",
            rule="fact-error",
            reason=f"the facts of {facts.name} are not valid: {problem}"[:FACT_ERROR_MAX_CHARS],
        )


def _fact_denied(tool: str, kind: str, exc: Exception) -> Decision:
    from ax_policy import Decision
    from libcommon.redact import redact

    text = redact(f"{type(exc).__name__}: {exc}")[:FACT_ERROR_MAX_CHARS]
    return Decision(
        verdict="deny",
        decision_class="destructive",
        rule="fact-error",
        reason=f"the {kind} fact of {tool} could not be evaluated: {text}",
    )


def call_key(tool: str, value: Any) -> str:
    """Identity of a call for loop detection: the tool and its input, canonically."""
    plain = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    import orjson

    try:
        canonical = orjson.dumps(plain, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return tool + "\x00" + repr(plain)
    return tool + "\x00" + canonical.decode()
