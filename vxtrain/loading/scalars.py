"""YAML scalars typed as PyYAML's SafeLoader types them (timestamps stay text).

A plain scalar is typed by SafeLoader's implicit resolvers (int, float, bool,
null, str); a scalar with an explicit standard tag (``!!int '12'``) by
SafeConstructor. Which tags are allowed is the event builder's rule
(``events.py``).
"""
from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

TAG = "tag:yaml.org,2002:"
_RESOLVERS = yaml.SafeLoader.yaml_implicit_resolvers
_CONSTRUCTOR = SafeConstructor()
_TYPED_TAGS = {TAG + name for name in ("int", "float", "bool", "null")}
#: Plain scalar text → its value; the builder reads it directly (hot path).
PLAIN_CACHE: dict[str, Any] = {}
_PLAIN_CACHE_MAX = 8192


def construct(tag: str, text: str) -> Any:
    """PyYAML's SafeConstructor for one standard scalar tag (raises on bad text)."""
    if tag == TAG + "str":
        return text
    method = _CONSTRUCTOR.yaml_constructors[tag]
    return method(_CONSTRUCTOR, ScalarNode(tag, text))


def _resolve(text: str) -> Any:
    """Type a plain scalar by SafeLoader's implicit resolvers (timestamps stay text)."""
    for tag, regexp in _RESOLVERS.get(text[:1], ()):
        if regexp.match(text):
            if tag not in _TYPED_TAGS:
                return text
            try:
                return construct(tag, text)
            except ValueError:  # e.g. an int longer than Python's digit limit
                return text
    return text


def plain(text: str) -> Any:
    """The value of a plain (unquoted, untagged) scalar, with a bounded cache:
    specs repeat the same plain values."""
    try:
        return PLAIN_CACHE[text]
    except KeyError:
        value = _resolve(text)
        if len(PLAIN_CACHE) < _PLAIN_CACHE_MAX:
            PLAIN_CACHE[text] = value
        return value
