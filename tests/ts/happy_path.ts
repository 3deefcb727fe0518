// A TypeScript Temporal client drives an AgentRun by the public contract alone (plain JSON):
// start it, read its pending call, approve it through the validated update, read the result.
// Usage: node build/happy_path.js <address> <task queue> <workflow id>
import { Client, Connection } from "@temporalio/client";

interface Pending {
  call_id: string;
  name: string;
  arguments_digest: string;
}

async function main(): Promise<void> {
  const [address, taskQueue, workflowId] = process.argv.slice(2);
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const handle = await client.workflow.start("AgentRun", {
      taskQueue,
      workflowId,
      args: [{ agent: "default", prompt: "say hello" }],
    });
    let pending: Pending[] = [];
    for (let tries = 0; pending.length === 0 && tries < 200; tries++) {
      pending = await handle.query<Pending[]>("pending_approvals");
      if (pending.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const [call] = pending;
    const ack = await handle.executeUpdate("submit_tool_approval", {
      args: [{ call_id: call.call_id, approved: true, approver: "ts-client", arguments_digest: call.arguments_digest }],
    });
    const result = await handle.result();
    console.log(JSON.stringify({ pending, ack, result }));
  } finally {
    await connection.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
