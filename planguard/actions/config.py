"""Configuration of canonical-action classification: user mapping rules, work-directory roots, scaffold."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..tools.paths import DEFAULT_ROOTS
from ..tools.vocabulary import KINDS, SURFACES, ActionVocabulary, MappingRule
from .classify import ActionClassifier
from .types import ActionType

__all__ = ["ActionRuleSpec", "ActionsConfig", "build_classifier"]


class ActionRuleSpec(BaseModel):
    """Map a tool of any framework onto a canonical action.

    Example (YAML)::

        - {tool: "repo_search*", type: SEARCH, target: [query], scope: [folder]}
        - {tool: "run_tests", type: COMMAND, validation: true}
        - {tool: "sandbox_exec", kind: shell, target: [script]}   # classify its argument as a shell line
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(
        description="fnmatch glob on the tool name (case-sensitive), 're:REGEX' (fullmatch), or "
        "'words:a|b_c' (whole words of the name, any case: read_file, readFile, file.read)."
    )
    type: ActionType | None = Field(None, description="Canonical action type of the tool's calls.")
    kind: str | None = Field(
        None, description="How to read the call instead of the type's default: " + ", ".join(KINDS) + "."
    )
    target: list[str] = Field(
        default_factory=list, description="Argument keys tried in order for the target."
    )
    scope: list[str] = Field(default_factory=list, description="Argument keys of a search's path scope.")
    text: list[str] = Field(
        default_factory=list, description="Argument keys holding free text (message, plan)."
    )
    validation: bool = Field(False, description="Calls of this tool are validation (test) runs.")
    completion: bool = Field(False, description="Calls of this tool declare the task done.")
    scaffold: str | None = Field(None, description="Scaffold this tool identifies (for tool surfaces).")
    structured: bool = Field(True, description="A dedicated tool (not a shell); shell-over-tool uses this.")

    @field_validator("tool")
    @classmethod
    def _pattern(cls, v: str) -> str:
        if v.startswith("re:"):
            try:
                re.compile(v[3:])
            except re.error as exc:
                raise ValueError(
                    f"expected a valid regular expression after 're:', got {v[3:]!r} ({exc})"
                ) from None
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        if v is not None and v not in KINDS:
            raise ValueError(f"expected one of {', '.join(KINDS)}, got {v!r}")
        return v

    def rule(self) -> MappingRule:
        """The mapping rule (which raises ValueError when neither ``type`` nor ``kind`` is given)."""
        return MappingRule(
            tool=self.tool,
            type=self.type,
            kind=self.kind,
            target=tuple(self.target),
            text=tuple(self.text),
            scope=tuple(self.scope),
            validation=self.validation,
            completion=self.completion,
            scaffold=self.scaffold,
            structured=self.structured,
        )


class ActionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scaffold: str | None = Field(
        None,
        description="The agent's scaffold (" + ", ".join(sorted(SURFACES)) + "); decides which tool-gated "
        "detectors apply. null: learned from the tool names each run uses.",
    )
    rules: list[ActionRuleSpec] = Field(
        default_factory=list, description="Mapping rules for your own tools; tried before the built-in ones."
    )
    roots: list[str] | None = Field(
        None,
        description="Work-directory roots stripped from paths (regular expressions); null: the defaults "
        "(/testbed, /workspace[/owner__repo], /repo, /owner__repo).",
    )
    extra_roots: list[str] = Field(default_factory=list, description="Roots tried before the defaults.")
    swe_agent_commands: bool = Field(
        True,
        description="Recognise SWE-agent tool commands (str_replace_editor, open, edit, ...) in shell lines.",
    )

    @field_validator("scaffold")
    @classmethod
    def _scaffold(cls, v: str | None) -> str | None:
        if v is not None and v not in SURFACES:
            raise ValueError(f"expected one of {', '.join(sorted(SURFACES))} (or null), got {v!r}")
        return v

    @field_validator("roots", "extra_roots")
    @classmethod
    def _roots(cls, v: list[str] | None) -> list[str] | None:
        for r in v or ():
            try:
                re.compile(r)
            except re.error as exc:
                raise ValueError(f"expected a regular expression, got {r!r} ({exc})") from None
        return v

    def vocabulary(self) -> ActionVocabulary:
        roots = (*self.extra_roots, *(DEFAULT_ROOTS if self.roots is None else self.roots))
        base = ActionVocabulary(
            name=self.scaffold or "default",
            roots=roots,
            swe_agent_commands=self.swe_agent_commands,
            scaffold=self.scaffold,
        )
        return base.extend(r.rule() for r in self.rules) if self.rules else base


def build_classifier(config: ActionsConfig | None = None) -> ActionClassifier:
    """The classifier a config describes (the default one for ``None`` or a default config)."""
    from .classify import DEFAULT_CLASSIFIER

    if config is None or config == ActionsConfig():
        return DEFAULT_CLASSIFIER
    return ActionClassifier(config.vocabulary())
