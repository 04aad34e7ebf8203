// The official TypeScript MCP client against a running toolq, as an agent's client would use
// it: over Streamable HTTP with a Bearer header, and over stdio through `dashboard mcp`. Its
// callTool checks every structured answer against the output schema tools/list declared. The
// Go test (mcp_clients_test.go) starts the demo and sets the environment:
//   TOOLQ_MCP_URL             the dashboard's /mcp
//   TOOLQ_OPERATOR_TOKEN      an operator's token; TOOLQ_VIEWER_TOKEN a viewer's
//   TOOLQ_BRIDGE              JSON {command, args, env}: `dashboard mcp` without a token
//   TOOLQ_HOSTILE_QUEUE       a DLQ holding TOOLQ_HOSTILE_BODY, sampled
//   TOOLQ_REDRIVE_QUEUE       a DLQ to redrive, to TOOLQ_REDRIVE_DESTINATION
// It prints one line a check and closes with "N passed, M failed".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const env = process.env;
let passed = 0, failed = 0;
function check(name, ok, detail = "") {
  if (ok) passed++; else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : ": " + detail}`);
}

const reads = ["get_summary", "list_queues", "get_queue", "list_dlq_messages", "get_message", "get_advice", "get_status", "list_redrives", "list_archived"];
const acts = ["start_redrive", "cancel_redrive", "discard_messages", "restore_archived"];

function overHTTP(token) {
  return new StreamableHTTPClientTransport(new URL(env.TOOLQ_MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

function overStdio(token) {
  const bridge = JSON.parse(env.TOOLQ_BRIDGE);
  return new StdioClientTransport({
    command: bridge.command, args: bridge.args, stderr: "inherit",
    env: { ...bridge.env, TOOLQ_TOKEN: token },
  });
}

async function connect(how, transport) {
  const client = new Client({ name: "toolq-ts-test", version: "1.0.0" });
  await client.connect(transport);
  check(`${how}: initialize names toolq`, client.getServerVersion()?.name === "toolq", JSON.stringify(client.getServerVersion()));
  check(`${how}: the server gives instructions`, (client.getInstructions() ?? "").includes("untrusted data"));
  return client;
}

// call calls a tool that must answer, and returns its structured content.
async function call(how, client, name, args) {
  try {
    const res = await client.callTool({ name, arguments: args });
    const first = res.content?.[0]?.text ?? "";
    check(`${how}: ${name} answers with structured content and a short text`, !res.isError && res.structuredContent && first.length > 0,
      JSON.stringify(res).slice(0, 300));
    return res;
  } catch (err) {
    check(`${how}: ${name}`, false, String(err));
    return { structuredContent: {}, content: [] };
  }
}

// refused calls a tool that must refuse, and returns the error code.
async function refused(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  if (!res.isError) return "(answered)";
  try { return JSON.parse(res.content[0].text).error.code; } catch { return res.content?.[0]?.text; }
}

async function readEverything(how, client) {
  const { tools } = await client.listTools();
  const names = tools.map(t => t.name).sort();
  check(`${how}: an operator lists every tool`, JSON.stringify(names) === JSON.stringify([...reads, ...acts].sort()), names.join(","));
  for (const t of tools) {
    const a = t.annotations ?? {};
    check(`${how}: ${t.name} has an output schema and honest annotations`,
      t.outputSchema && a.readOnlyHint === !acts.includes(t.name) && a.openWorldHint === false);
  }
  const start = tools.find(t => t.name === "start_redrive");
  check(`${how}: start_redrive is destructive`, start?.annotations?.destructiveHint === true);

  await call(how, client, "get_summary", {});
  const all = (await call(how, client, "list_queues", {})).structuredContent;
  check(`${how}: list_queues lists the demo's queues`, all.queues?.some(q => q.name === env.TOOLQ_REDRIVE_QUEUE), JSON.stringify(all).slice(0, 200));
  await call(how, client, "list_queues", { health: ["warning", "critical"], dlq: true, limit: 5 });
  await call(how, client, "get_queue", { queue: env.TOOLQ_HOSTILE_QUEUE });
  const page = (await call(how, client, "list_dlq_messages", { queue: env.TOOLQ_HOSTILE_QUEUE, search: "ignore previous instructions", groupBy: "toolName" })).structuredContent;
  const hit = page.messages?.[0];
  check(`${how}: the search finds the hostile message`, page.matched >= 1 && hit, JSON.stringify(page).slice(0, 300));
  if (hit) {
    const res = await call(how, client, "get_message", { queue: env.TOOLQ_HOSTILE_QUEUE, messageId: hit.messageId });
    check(`${how}: the hostile body comes back intact, as data`, res.structuredContent.body === env.TOOLQ_HOSTILE_BODY, res.structuredContent.body);
    check(`${how}: the short text quotes nothing of it`, !res.content[0].text.includes("ignore previous") && !res.content[0].text.includes("<script>"), res.content[0].text);
  }
  await call(how, client, "get_advice", {});
  await call(how, client, "get_status", {});
  await call(how, client, "list_redrives", { queue: env.TOOLQ_REDRIVE_QUEUE });
}

async function viewer(how, client) {
  const { tools } = await client.listTools();
  check(`${how}: a viewer sees no operator tool`, !tools.some(t => acts.includes(t.name)), tools.map(t => t.name).join(","));
  check(`${how}: a viewer calling start_redrive is refused`, await refused(client, "start_redrive", { queue: env.TOOLQ_REDRIVE_QUEUE }) === "forbidden");
  await call(how, client, "get_summary", {});
}

async function redrive(how, client) {
  const args = { queue: env.TOOLQ_REDRIVE_QUEUE, destination: env.TOOLQ_REDRIVE_DESTINATION };
  const preview = (await call(how, client, "start_redrive", args)).structuredContent;
  check(`${how}: the first step is a preview with a token`, preview.step === "preview" && preview.preview?.confirmationToken &&
    preview.preview?.irreversible === true && preview.preview?.destination.endsWith(":" + env.TOOLQ_REDRIVE_DESTINATION),
    JSON.stringify(preview));
  const token = preview.preview?.confirmationToken;
  const started = (await call(how, client, "start_redrive", { ...args, confirmationToken: token })).structuredContent;
  check(`${how}: the second step starts the move task`, started.step === "started" && started.redrive?.status, JSON.stringify(started));
  check(`${how}: the token starts once`, await refused(client, "start_redrive", { ...args, confirmationToken: token }) === "confirmation_used");
  check(`${how}: a forged token is refused`, await refused(client, "start_redrive", { ...args, confirmationToken: token.slice(0, -4) + "AAAA" }) === "invalid_confirmation");
}

async function main() {
  const op = await connect("http", overHTTP(env.TOOLQ_OPERATOR_TOKEN));
  await readEverything("http", op);
  await redrive("http", op);
  await op.close();

  const v = await connect("http viewer", overHTTP(env.TOOLQ_VIEWER_TOKEN));
  await viewer("http viewer", v);
  await v.close();

  const bridged = await connect("stdio", overStdio(env.TOOLQ_OPERATOR_TOKEN));
  await readEverything("stdio", bridged);
  await bridged.close();

  const bridgedViewer = await connect("stdio viewer", overStdio(env.TOOLQ_VIEWER_TOKEN));
  await viewer("stdio viewer", bridgedViewer);
  await bridgedViewer.close();
}

try {
  await main();
} catch (err) {
  check("the run", false, err?.stack ?? String(err));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
