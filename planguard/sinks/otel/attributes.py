"""Every attribute key, span name, event name and metric name planguard emits, in one place.

The GenAI keys follow the OpenTelemetry GenAI semantic conventions (agent spans and tool execution). They
are spelled out here rather than imported from ``opentelemetry.semconv._incubating``: those constants are
incubating and marked as moved, and a rename there must not silently change what planguard emits.
``planguard.*`` keys are planguard's own.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------- GenAI semantic conventions
#: `invoke_agent` on session spans, `execute_tool` on tool spans
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"  # telemetry.agent_name, or the session's agent_name metadata
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"  # the session's agent_id metadata
#: the session id (e.g. the LangGraph thread_id), on every span
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
#: on invoke_agent: telemetry.provider_name, the provider metadata, the model metadata's provider, or unknown
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"  # the session's model metadata
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"  # the tool called
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"  # the model's id for the call, when it has one
#: ``function`` for every call planguard sees: tools the agent's own code runs (the conventions' values are
#: ``function``, ``extension``, ``datastore``).
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
#: the value planguard sets
TOOL_TYPE_FUNCTION: Final = "function"
#: ``gen_ai.provider.name`` when neither the config nor the session's metadata names the provider (nor its
#: model, see :func:`provider_for_model`).
PROVIDER_UNKNOWN: Final = "unknown"
#: Routing prefixes of model ids (``anthropic/claude-...``, LiteLLM's and OpenCode's ``provider/model``) and
#: the GenAI conventions' ``gen_ai.provider.name`` values they name.
_PROVIDER_PREFIXES: Final = {
    "openai": "openai",
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "google": "gcp.gemini",
    "mistral": "mistral_ai",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "cohere": "cohere",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
}
#: A bare model id's family and the provider it is served by when nothing else is named (the maker's own
#: API, as LiteLLM routes a bare id).
_PROVIDER_FAMILIES: Final = (
    (("gpt-", "o1", "o3", "o4", "chatgpt-", "codex-"), "openai"),
    (("claude",), "anthropic"),
    (("gemini",), "gcp.gemini"),
    (("mistral", "codestral", "devstral", "magistral"), "mistral_ai"),
    (("deepseek",), "deepseek"),
    (("grok",), "x_ai"),
    (("command",), "cohere"),
)


def provider_for_model(model: str) -> str | None:
    """The ``gen_ai.provider.name`` a recorded model id names: its routing prefix (``bedrock/...``), else its
    family (``claude-...``: ``anthropic``); ``None`` when neither is known."""
    name = model.strip().lower()
    prefix, _, rest = name.partition("/")
    if rest:
        if prefix in _PROVIDER_PREFIXES:
            return _PROVIDER_PREFIXES[prefix]
        name = name.rsplit("/", 1)[1]
    return next((provider for starts, provider in _PROVIDER_FAMILIES if name.startswith(starts)), None)


#: Opt-in content attributes (only with content capture on; redacted before export).
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"  # content: only with capture on
ERROR_TYPE: Final = "error.type"  # why a tool span has status ERROR

#: ``gen_ai.operation.name`` values.
OP_INVOKE_AGENT: Final = "invoke_agent"
#: on tool spans
OP_EXECUTE_TOOL: Final = "execute_tool"

#: Span names: ``"{operation} {name}"`` as the conventions ask, the bare operation when the name is unknown.
SPAN_INVOKE_AGENT: Final = "invoke_agent"
#: ``execute_tool {gen_ai.tool.name}``
SPAN_EXECUTE_TOOL: Final = "execute_tool"

#: ``error.type`` values planguard sets on ``execute_tool`` spans.
ERROR_TOOL: Final = "tool_error"  # the tool reported an error
ERROR_EXIT_CODE: Final = "nonzero_exit"  # a shell command exited non-zero
ERROR_BLOCKED: Final = "planguard_blocked"  # a policy denied or stopped the call; it never ran

# --------------------------------------------------------------------------- planguard, per tool call
STEP_INDEX: Final = "planguard.step.index"  # 0-based position of the call among the session's accepted calls
#: Plan letters of the step's phase roles (``"R"``, ``"NP"``; ``""`` for a general step). Letters map
#: one-to-one to classifier roles (``planguard.phases.ROLE_OF_LETTER``), so roles are not repeated.
PHASE: Final = "planguard.phase"
ACTION_TYPE: Final = "planguard.action.type"  # canonical action (read, search, edit, run_tests, ...)
#: What the call achieved as far as known when it ends: the effect tracker's label (``SURVIVED``, ``FAILED``,
#: ``REVERTED``, …) when the pipeline has one, else ``FAILED`` / ``SUCCEEDED`` from the call's outcome.
EFFECT: Final = "planguard.effect"
#: a shell command's exit code, when non-zero
EXIT_CODE: Final = "planguard.tool.exit_code"
#: true on the short span of a call a policy denied or stopped
BLOCKED: Final = "planguard.blocked"
#: Compliance so far against the followed plan.
PPC: Final = "planguard.compliance.ppc"
#: plan order compliance so far (and at session end on invoke_agent)
POC: Final = "planguard.compliance.poc"
#: plan phase fidelity so far
PPF: Final = "planguard.compliance.ppf"
#: plan compliance so far
PC: Final = "planguard.compliance.pc"
#: The last few Langutory runs, e.g. ``"N3 R1 P2"``.
LANGUTORY_TAIL: Final = "planguard.langutory.tail"
#: findings the call completed
FINDINGS_COUNT: Final = "planguard.findings.count"

# --------------------------------------------------------------------------- planguard, per session
#: the followed plan's name
PLAN: Final = "planguard.plan"
#: the phase rules' version
RULES: Final = "planguard.rules"
#: tool calls in the session
SESSION_STEPS: Final = "planguard.session.steps"
#: model calls in the session
SESSION_MODEL_CALLS: Final = "planguard.session.model_calls"
#: The whole run's plan letters (``"NNRPPV"``), truncated to :data:`MAX_LETTERS` from the end.
LANGUTORY: Final = "planguard.langutory"
#: detectors that fired in the session
SESSION_FINDINGS: Final = "planguard.session.findings"
#: decision kinds made in the session
SESSION_DECISIONS: Final = "planguard.session.decisions"
#: expected plan phases that never occurred
SESSION_MISSING: Final = "planguard.compliance.missing"
#: Calls of tools no mapping rule knows (their phases are unobserved), and those tools' names.
SESSION_UNCLASSIFIED: Final = "planguard.session.unclassified_calls"
SESSION_UNKNOWN_TOOLS: Final = "planguard.session.unknown_tools"
#: true when planguard ended the session itself (idle, capacity, shutdown)
SESSION_EVICTED: Final = "planguard.session.evicted"
#: ``planguard.langutory`` keeps at most this many letters
MAX_LETTERS: Final = 4096

# --------------------------------------------------------------------------- planguard, the agent's todo list
# On a todo tool call's span (the list it wrote) and on the session span (the list at the end).
TODO_DONE: Final = "planguard.todo.done"
TODO_TOTAL: Final = "planguard.todo.total"
TODO_UPDATES: Final = "planguard.todo.updates"
#: Tool calls since the list was last written (session span).
TODO_CALLS_SINCE_UPDATE: Final = "planguard.todo.calls_since_update"
#: The item in progress, as the agent wrote it: content, so only with content capture (redacted).
TODO_ACTIVE: Final = "planguard.todo.active"

# --------------------------------------------------------------------------- evaluation results
#: A ``gen_ai.evaluation.result`` event (GenAI conventions, events.yaml), parented to the span evaluated:
#: on ``invoke_agent`` one per compliance score (PC, PPC, POC, PPF) at session end, and one per finding on
#: the span of the call that completed it (the session span for findings at the end).
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
#: PC, PPC, POC, PPF, or planguard.finding.<detector>
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
#: the score in [0, 1] (0 for a finding)
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
#: complete / partial / none, or detected
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
#: what the score measures, the plan, the missing phases (no content)
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
#: ``gen_ai.evaluation.name`` of the compliance scores, and what each one measures (the explanation).
EVALUATIONS: Final = {
    "PC": "plan compliance: (PPF·PPC·POC)^(1/3), 0 if any factor is 0",
    "PPC": "plan phase compliance: share of the plan's expected phases that occur",
    "POC": "plan order compliance: longest increasing run of the expected phases' first occurrences, ÷ m",
    "PPF": "plan phase fidelity: m / (m + |phases matching no expected phase|)",
}
#: ``gen_ai.evaluation.score.label`` of a compliance score: ``complete`` (1), ``partial`` (between),
#: ``none`` (0). A finding's evaluation is named for its detector, scored 0 and labelled ``detected``.
LABEL_COMPLETE: Final = "complete"
#: a score strictly between 0 and 1
LABEL_PARTIAL: Final = "partial"
#: a score of 0
LABEL_NONE: Final = "none"
#: a finding
LABEL_DETECTED: Final = "detected"
#: Prefix of a finding's ``gen_ai.evaluation.name`` (``planguard.finding.<detector>``).
FINDING_EVALUATION_PREFIX: Final = "planguard.finding."

# --------------------------------------------------------------------------- span events
#: a detector finding, on the span of the call that completed it (session span: at the end)
EVENT_FINDING: Final = "planguard.finding"
#: a policy decision other than allow
EVENT_DECISION: Final = "planguard.decision"
#: Tool-call content as an event (capture modes EVENT_ONLY / SPAN_AND_EVENT).
EVENT_TOOL_CONTENT: Final = "planguard.tool.content"
#: On the session span: the outcome of a call whose tool span (a framework's, enriched) had ended first.
EVENT_TOOL_OUTCOME: Final = "planguard.tool.outcome"

#: the detector's name
FINDING_DETECTOR: Final = "planguard.finding.detector"
#: first step index the finding covers
FINDING_FIRST_STEP: Final = "planguard.finding.first_step"
#: last step index the finding covers
FINDING_LAST_STEP: Final = "planguard.finding.last_step"
#: true when found at the end of the run
FINDING_AT_END: Final = "planguard.finding.at_end"
FINDING_EVIDENCE: Final = "planguard.finding.evidence"  # content: only with capture on
#: deny, remind, nudge, stop, notify, log
DECISION_KIND: Final = "planguard.decision.kind"
#: the policy that decided
DECISION_POLICY: Final = "planguard.decision.policy"
DECISION_FINDING: Final = "planguard.decision.finding"  # detector of the finding that triggered it
DECISION_MESSAGE: Final = "planguard.decision.message"  # content: only with capture on

#: Decision kinds that are reported as events (allow is not news).
REPORTED_DECISIONS: Final = frozenset({"deny", "remind", "nudge", "stop", "notify", "log"})

# --------------------------------------------------------------------------- metrics
#: instrumentation scope of planguard's instruments
METER_NAME: Final = "planguard"
#: instrumentation scope of planguard's spans
TRACER_NAME: Final = "planguard"
METRIC_TOOL_CALLS: Final = "planguard.tool.calls"
METRIC_FINDINGS: Final = "planguard.findings"
METRIC_DECISIONS: Final = "planguard.decisions"
METRIC_REMINDERS: Final = "planguard.reminders"
METRIC_BLOCKS: Final = "planguard.blocks"
METRIC_INTERNAL_ERRORS: Final = "planguard.internal_errors"
METRIC_DROPPED: Final = "planguard.telemetry.dropped"
METRIC_SESSION_PC: Final = "planguard.session.pc"
#: Wall-clock seconds of each tool call (start to result), by action type and outcome.
METRIC_TOOL_DURATION: Final = "planguard.tool.duration"
#: Metric attribute keys (low cardinality by construction).
M_PHASE: Final = "planguard.phase"
M_ACTION: Final = "planguard.action.type"
M_DETECTOR: Final = "planguard.finding.detector"
M_DECISION: Final = "planguard.decision.kind"
M_REASON: Final = "planguard.drop.reason"
M_PLAN: Final = "planguard.plan"
M_ERROR: Final = "error.type"
#: Histogram boundaries for PC (a score in [0, 1]).
PC_BUCKETS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: Histogram boundaries for tool latency in seconds (the GenAI conventions' operation-duration buckets).
DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
