"""Every attribute key, span name, event name and metric name planguard emits, in one place.

The GenAI keys follow the OpenTelemetry GenAI semantic conventions (agent spans and tool execution). They
are spelled out here rather than imported from ``opentelemetry.semconv._incubating``: those constants are
incubating and marked as moved, and a rename there must not silently change what planguard emits.
``planguard.*`` keys are planguard's own.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------- GenAI semantic conventions
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
#: Opt-in content attributes (only with content capture on; redacted before export).
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"

#: ``gen_ai.operation.name`` values.
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_EXECUTE_TOOL: Final = "execute_tool"

#: Span names: ``"{operation} {name}"`` as the conventions ask, the bare operation when the name is unknown.
SPAN_INVOKE_AGENT: Final = "invoke_agent"
SPAN_EXECUTE_TOOL: Final = "execute_tool"

#: ``error.type`` values planguard sets on ``execute_tool`` spans.
ERROR_TOOL: Final = "tool_error"  # the tool reported an error
ERROR_EXIT_CODE: Final = "nonzero_exit"  # a shell command exited non-zero
ERROR_BLOCKED: Final = "planguard_blocked"  # a policy denied or stopped the call; it never ran

# --------------------------------------------------------------------------- planguard, per tool call
STEP_INDEX: Final = "planguard.step.index"
#: Plan letters of the step's phase roles (``"R"``, ``"NP"``; ``""`` for a general step). Letters map
#: one-to-one to classifier roles (``planguard.phases.ROLE_OF_LETTER``), so roles are not repeated.
PHASE: Final = "planguard.phase"
ACTION_TYPE: Final = "planguard.action.type"
#: What the call achieved as far as known when it ends: the effect tracker's label (``SURVIVED``, ``FAILED``,
#: ``REVERTED``, …) when the pipeline has one, else ``FAILED`` / ``SUCCEEDED`` from the call's outcome.
EFFECT: Final = "planguard.effect"
EXIT_CODE: Final = "planguard.tool.exit_code"
BLOCKED: Final = "planguard.blocked"
#: Compliance so far against the followed plan.
PPC: Final = "planguard.compliance.ppc"
POC: Final = "planguard.compliance.poc"
PPF: Final = "planguard.compliance.ppf"
PC: Final = "planguard.compliance.pc"
#: The last few Langutory runs, e.g. ``"N3 R1 P2"``.
LANGUTORY_TAIL: Final = "planguard.langutory.tail"
FINDINGS_COUNT: Final = "planguard.findings.count"

# --------------------------------------------------------------------------- planguard, per session
PLAN: Final = "planguard.plan"
RULES: Final = "planguard.rules"
SESSION_STEPS: Final = "planguard.session.steps"
SESSION_MODEL_CALLS: Final = "planguard.session.model_calls"
#: The whole run's plan letters (``"NNRPPV"``), truncated to :data:`MAX_LETTERS` from the end.
LANGUTORY: Final = "planguard.langutory"
SESSION_FINDINGS: Final = "planguard.session.findings"
SESSION_DECISIONS: Final = "planguard.session.decisions"
SESSION_MISSING: Final = "planguard.compliance.missing"
#: Calls of tools no mapping rule knows (their phases are unobserved), and those tools' names.
SESSION_UNCLASSIFIED: Final = "planguard.session.unclassified_calls"
SESSION_UNKNOWN_TOOLS: Final = "planguard.session.unknown_tools"
SESSION_EVICTED: Final = "planguard.session.evicted"
MAX_LETTERS: Final = 4096

# --------------------------------------------------------------------------- span events
EVENT_FINDING: Final = "planguard.finding"
EVENT_DECISION: Final = "planguard.decision"
#: Tool-call content as an event (capture modes EVENT_ONLY / SPAN_AND_EVENT).
EVENT_TOOL_CONTENT: Final = "planguard.tool.content"

FINDING_DETECTOR: Final = "planguard.finding.detector"
FINDING_FIRST_STEP: Final = "planguard.finding.first_step"
FINDING_LAST_STEP: Final = "planguard.finding.last_step"
FINDING_AT_END: Final = "planguard.finding.at_end"
FINDING_EVIDENCE: Final = "planguard.finding.evidence"  # content: only with capture on
DECISION_KIND: Final = "planguard.decision.kind"
DECISION_POLICY: Final = "planguard.decision.policy"
DECISION_FINDING: Final = "planguard.decision.finding"  # detector of the finding that triggered it
DECISION_MESSAGE: Final = "planguard.decision.message"  # content: only with capture on

#: Decision kinds that are reported as events (allow is not news).
REPORTED_DECISIONS: Final = frozenset({"deny", "remind", "nudge", "stop", "notify", "log"})

# --------------------------------------------------------------------------- metrics
METER_NAME: Final = "planguard"
TRACER_NAME: Final = "planguard"
METRIC_TOOL_CALLS: Final = "planguard.tool.calls"
METRIC_FINDINGS: Final = "planguard.findings"
METRIC_DECISIONS: Final = "planguard.decisions"
METRIC_REMINDERS: Final = "planguard.reminders"
METRIC_BLOCKS: Final = "planguard.blocks"
METRIC_INTERNAL_ERRORS: Final = "planguard.internal_errors"
METRIC_DROPPED: Final = "planguard.telemetry.dropped"
METRIC_SESSION_PC: Final = "planguard.session.pc"
#: Metric attribute keys (low cardinality by construction).
M_PHASE: Final = "planguard.phase"
M_ACTION: Final = "planguard.action.type"
M_DETECTOR: Final = "planguard.finding.detector"
M_DECISION: Final = "planguard.decision.kind"
M_REASON: Final = "planguard.drop.reason"
M_PLAN: Final = "planguard.plan"
#: Histogram boundaries for PC (a score in [0, 1]).
PC_BUCKETS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
