// planguard plugin for OpenCode (installed by `planguard install opencode`; reinstall to change it).
//
// Forwards every tool call to planguard's hook service (the same stdlib hook client and warm daemon
// Claude Code, Codex CLI and Gemini CLI use): before a tool runs, a denial is thrown, and OpenCode hands
// its message to the model as the tool's error; after it ran, a reminder is appended to the output the
// model reads next. When the session goes idle, planguard's session ends (it resumes if OpenCode's does).
// planguard never breaks the agent: if the hook client cannot run or answers nothing, the call goes on
// and the user is told in one line -- unless the config has a fail-closed gate (the command carries
// --fail-closed): then a tool call planguard could not answer is denied, as the hook client's exit status 2
// (its reason on standard error) denies it in the other CLIs.
import { spawn } from "node:child_process";

const COMMAND = /*PLANGUARD_COMMAND*/ [];
const TIMEOUT_MS = /*PLANGUARD_TIMEOUT_MS*/ 30000;
const FAIL_CLOSED = COMMAND.includes("--fail-closed");
const BLOCK_STATUS = 2;

// The answer, or {unanswered: why} when the hook client gave none (it could not start, was killed, or
// printed no JSON), or {blocked: reason} when it exited with the blocking status.
function ask(payload) {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let child;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      resolve({ unanswered: `the hook client did not start (${e && e.message})` });
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ unanswered: `the hook client did not start (${e && e.message})` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === BLOCK_STATUS) {
        resolve({ blocked: err.trim() || "blocked by planguard" });
        return;
      }
      if (code !== 0) {
        resolve({ unanswered: `the hook client exited with ${signal || code}` });
        return;
      }
      try {
        resolve(out.trim() ? JSON.parse(out) : {});
      } catch {
        resolve({ unanswered: "the hook client's answer is not JSON" });
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

// One line for the user: a toast in the TUI, and standard error (what `opencode run` shows).
async function warn(client, text) {
  const line = `planguard: ${text}`;
  try {
    process.stderr.write(`${line}\n`);
  } catch {}
  try {
    await client.tui.showToast({ body: { message: line, variant: "warning" } });
  } catch {}
}

async function tell(client, answer) {
  if (answer.unanswered) await warn(client, `could not evaluate this call (${answer.unanswered}); let through`);
  else if (typeof answer.systemMessage === "string" && answer.systemMessage) await warn(client, answer.systemMessage);
}

function context(answer) {
  const specific = answer && answer.hookSpecificOutput;
  return specific && typeof specific.additionalContext === "string" ? specific.additionalContext : "";
}

// Calls planguard let run whose result has not come (by call id). OpenCode fires no tool.execute.after
// for a tool that fails inside itself (sst/opencode#27900): its part turns to state "error" instead
// (message.part.updated; packages/opencode/src/session/message-v2.ts ToolPart), and that is sent as the
// call's failure, so the call is closed before the model is asked again.
const running = new Map();

export const PlanGuard = async ({ client, directory }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = await ask({
      hook_event_name: "PreToolUse",
      session_id: input.sessionID,
      cwd: directory,
      tool_name: input.tool,
      tool_input: output.args ?? {},
      tool_use_id: input.callID,
    });
    if (answer.blocked) throw new Error(answer.blocked);
    if (answer.unanswered && FAIL_CLOSED) {
      throw new Error(
        `PLANGUARD: this call is blocked: planguard could not evaluate it (${answer.unanswered}) and its ` +
          "gates are fail-closed. Fix planguard's installation, then try again.",
      );
    }
    await tell(client, answer);
    const specific = answer.hookSpecificOutput || {};
    if (specific.permissionDecision === "deny") {
      throw new Error(specific.permissionDecisionReason || "blocked by planguard");
    }
    running.set(input.callID, input.sessionID);
  },
  "tool.execute.after": async (input, output) => {
    running.delete(input.callID);
    const answer = await ask({
      hook_event_name: "PostToolUse",
      session_id: input.sessionID,
      cwd: directory,
      tool_name: input.tool,
      tool_input: input.args ?? {},
      tool_use_id: input.callID,
      tool_response: typeof output.output === "string" ? output.output : JSON.stringify(output.output ?? ""),
    });
    await tell(client, answer);
    const extra = context(answer);
    if (extra) output.output = `${output.output ?? ""}\n\n${extra}`;
  },
  event: async ({ event }) => {
    const part = event && event.type === "message.part.updated" && event.properties && event.properties.part;
    if (part && part.type === "tool" && part.state && part.state.status === "error" && running.has(part.callID)) {
      running.delete(part.callID);
      await ask({
        hook_event_name: "PostToolUseFailure",
        session_id: part.sessionID,
        cwd: directory,
        tool_name: part.tool,
        tool_input: part.state.input ?? {},
        tool_use_id: part.callID,
        error: typeof part.state.error === "string" ? part.state.error : "the tool failed",
      });
      return;
    }
    if (event && event.type === "session.idle" && event.properties && event.properties.sessionID) {
      await ask({ hook_event_name: "SessionEnd", session_id: event.properties.sessionID, cwd: directory });
    }
  },
});
