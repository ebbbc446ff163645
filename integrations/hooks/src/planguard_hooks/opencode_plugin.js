// planguard plugin for OpenCode (installed by `planguard install opencode`; reinstall to change it).
//
// Forwards every tool call to planguard's hook service (the same stdlib hook client and warm daemon
// Claude Code, Codex CLI and Gemini CLI use): before a tool runs, a denial is thrown, and OpenCode hands
// its message to the model as the tool's error; after it ran, a reminder is appended to the output the
// model reads next. When the session goes idle, planguard's session ends (it resumes if OpenCode's does).
// planguard never breaks the agent: if the hook client cannot run or answers nothing, the call goes on.
import { spawn } from "node:child_process";

const COMMAND = /*PLANGUARD_COMMAND*/ [];
const TIMEOUT_MS = /*PLANGUARD_TIMEOUT_MS*/ 30000;

function ask(payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve({});
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => {
      clearTimeout(timer);
      resolve({});
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(out.trim() ? JSON.parse(out) : {});
      } catch {
        resolve({});
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
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

export const PlanGuard = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = await ask({
      hook_event_name: "PreToolUse",
      session_id: input.sessionID,
      cwd: directory,
      tool_name: input.tool,
      tool_input: output.args ?? {},
      tool_use_id: input.callID,
    });
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
