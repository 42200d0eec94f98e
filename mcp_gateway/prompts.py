"""Prompts, declared as specs (the three eco_* prompts come in a later issue and are appended to
PROMPTS); the protocol handlers live in server.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mcp_types as types


@dataclass(frozen=True)
class PromptSpec:
    name: str
    description: str
    arguments: tuple[types.PromptArgument, ...]
    render: Callable[[dict[str, str]], list[types.PromptMessage]]

    def prompt(self) -> types.Prompt:
        return types.Prompt(name=self.name, description=self.description, arguments=list(self.arguments))


PROMPTS: list[PromptSpec] = []
