// The official AG-UI client (@ag-ui/client) drives a signoff session through the inbox's POST /ag-ui:
// text streams, a tool call parks as an interrupt, a second client of the thread sees it too, a resume
// approves it, and the second client's resume finds it settled.
// Usage: node build/ag_ui.js <inbox url> <thread id>
import { HttpAgent } from "@ag-ui/client";
import type { BaseEvent, Message } from "@ag-ui/core";

interface Seen {
  events: string[];
  deltas: string[];
  outcome: string;
  interrupts: { id: string; toolCallId?: string; metadata?: Record<string, unknown> }[];
  errors: string[];
  text: string;
}

async function run(agent: HttpAgent, params: Parameters<HttpAgent["runAgent"]>[0] = {}): Promise<Seen> {
  const seen: Seen = { events: [], deltas: [], outcome: "", interrupts: [], errors: [], text: "" };
  await agent.runAgent(params, {
    onEvent({ event }: { event: BaseEvent }) {
      seen.events.push(event.type);
    },
    onTextMessageContentEvent({ event }) {
      seen.deltas.push(event.delta);
    },
    onRunFinishedEvent(params) {
      seen.outcome = params.outcome;
      if (params.outcome === "interrupt") seen.interrupts = params.interrupts;
    },
    onRunErrorEvent({ event }) {
      seen.errors.push(event.message);
    },
  });
  const last = [...agent.messages].reverse().find((m: Message) => m.role === "assistant");
  seen.text = typeof last?.content === "string" ? last.content : "";
  return seen;
}

async function main(): Promise<void> {
  const [url, threadId] = process.argv.slice(2);
  const a = new HttpAgent({ url, threadId });
  a.addMessage({ id: "u1", role: "user", content: "hello" });
  const hello = await run(a);
  a.addMessage({ id: "u2", role: "user", content: "run: echo hi" });
  const parked = await run(a);
  const b = new HttpAgent({ url, threadId, initialMessages: [...a.messages] });
  const reconnected = await run(b);
  const [interrupt] = parked.interrupts;
  const decision = { interruptId: interrupt.id, status: "resolved" as const, payload: { approved: true } };
  const resumed = await run(a, { resume: [decision] });
  const second = await run(b, { resume: [decision] });
  const unknown = await run(b, { resume: [{ ...decision, interruptId: "call_nope" }] });
  console.log(JSON.stringify({ hello, parked, reconnected, resumed, second, unknown }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
