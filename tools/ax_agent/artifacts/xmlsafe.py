"""Size- and depth-bounded XML parsing that refuses DTDs and entity declarations.

OOXML parts never need a DTD, so one is refused outright rather than parsed
carefully: no internal entity can expand, no external one can be fetched.
expat is driven directly so the refusal happens at the declaration, before any
expansion, and nesting is counted as elements open.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NoReturn

from .errors import XML_MAX_BYTES, XML_MAX_DEPTH, Unsupported


def parse(data: bytes, role: str) -> ET.Element:
    """The root element of ``data`` (the part ``role`` names, for the reason), or Unsupported."""
    from xml.parsers import expat

    if len(data) > XML_MAX_BYTES:
        raise Unsupported("too-large", f"the {role} is over {XML_MAX_BYTES} bytes")
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator=" ")
    depth = 0

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal depth
        depth += 1
        if depth > XML_MAX_DEPTH:
            raise Unsupported("unsafe-xml", f"the {role} nests deeper than {XML_MAX_DEPTH}")
        builder.start(_qname(name), {_qname(key): value for key, value in attrs.items()})

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1
        builder.end(_qname(name))

    def refuse(*_args: object) -> NoReturn:
        raise Unsupported("unsafe-xml", f"the {role} declares a DTD or an entity")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except expat.ExpatError:
        # The position and message of an expat error can quote the part; neither is kept.
        raise Unsupported("malformed", f"the {role} is not well-formed XML") from None
    try:
        return builder.close()
    except AssertionError:
        raise Unsupported("malformed", f"the {role} has no root element") from None


def _qname(name: str) -> str:
    uri, sep, local = name.rpartition(" ")
    return f"{{{uri}}}{local}" if sep else local
