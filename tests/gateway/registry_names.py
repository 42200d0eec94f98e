"""Holds text written for agents (guides, prompts) to the live registry: every tool it names is
registered, every argument written in a call `eco_tool(arg=...)` is that tool's input, and every
snake_case word in backticks is a tool, an input, an input's allowed value, a result field or a
stable error code."""

from __future__ import annotations

import re
from typing import Any

from eco_core.errors import CODES
from mcp_gateway.registry import Registry

TOOL = re.compile(r"\beco_[a-z_]+\b")
CALL = re.compile(r"\b(eco_[a-z_]+)\(([^()]*)\)")
KWARG = re.compile(r"(?:^|,)\s*([a-z_][a-z0-9_]*)\s*=")
SPAN = re.compile(r"`([^`\n]+)`")
WORD = re.compile(r"^[a-z][a-z0-9_]*$")
# Prompt and resource names share the eco_ prefix with tools but are not tools.
NOT_TOOLS = {"eco_find_data", "eco_cite_dataset", "eco_plan_download"}
# Words the spec defines outside any tool schema: the error result's keys (built by the call
# pipeline, not declared per tool) and the release word every release input accepts.
SPEC_WORDS = {"error", "code", "message", "details", "hint", "latest"}


def _schema_words(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                into.update(value)
            if key == "enum" and isinstance(value, list):
                into.update(v for v in value if isinstance(v, str))
            _schema_words(value, into)
    elif isinstance(node, list):
        for item in node:
            _schema_words(item, into)


def known_words(registry: Registry) -> set[str]:
    words: set[str] = set(CODES) | SPEC_WORDS
    for name in registry.names():
        spec = registry.get(name)
        assert spec is not None
        words.add(name)
        words.update(spec.argument_names)
        _schema_words(spec.tool.input_schema, words)
        _schema_words(spec.tool.output_schema, words)
    return words


def unknown_names(text: str, registry: Registry) -> list[str]:
    """What the text names that the registry lacks (empty when the text is accurate)."""
    tools = set(registry.names())
    problems = [f"tool {t}" for t in sorted(set(TOOL.findall(text)) - tools - NOT_TOOLS)]
    for tool, inner in CALL.findall(text):
        spec = registry.get(tool)
        if spec is None:
            continue
        problems += [f"{tool}({arg}=)" for arg in KWARG.findall(inner) if arg not in spec.argument_names]
    words = known_words(registry)
    problems += [f"`{w}`" for w in SPAN.findall(text) if WORD.match(w) and w not in words and not w.startswith("eco_")]
    return problems
