// client.mjs — the official MCP SDK (npm @modelcontextprotocol/sdk) as airlock's client, over stdio
// and over streamable HTTP: tools listed, an agent that never heard of sandbox ids still writes,
// runs and reads, state persists across cells of a sandbox, a human approves through elicitation
// (the request it is shown is whole, with its digest), and a declined call never runs.
// Usage: node client.mjs stdio CMD ARG...       (airlock mcp, as the test runs it)
//        node client.mjs http URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const fails = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok" : "FAIL"}: ${what}`);
  if (!ok) fails.push(what);
};
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const [mode, ...rest] = process.argv.slice(2);
const marker = process.env.AL_MARKER || "sdk";
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" });
} else {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), {
    requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } },
  });
}
const client = new Client({ name: "airlock-sdk-test", version: "1" }, { capabilities: { elicitation: {} } });
// The human: approves unless the code says "decline", and checks what it was shown.
const shown = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const msg = req.params.message || "";
  shown.push(msg);
  return { action: "accept", content: { approve: !msg.includes("decline") } };
});
await client.connect(transport);

const tools = (await client.listTools()).tools.map((t) => t.name);
check(["code_execute", "code_write_file", "code_read_file", "code_create_sandbox"].every((n) => tools.includes(n)),
  `the tools (${tools.join(", ")})`);

const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
const sb = (await call("code_create_sandbox", { language: "python" })).structuredContent?.sandbox_id;
check(typeof sb === "string" && sb.length > 0, `a sandbox (${sb})`);
const w = await call("code_write_file", { sandbox_id: sb, path: "data.txt", content: `hello ${marker}` });
check(!w.isError, "write a file");
let r = await call("code_execute", { sandbox_id: sb, language: "python", code: "x = 41\nprint(open('data.txt').read())" });
check(!r.isError && text(r).includes(`hello ${marker}`), `the code reads it (${text(r).slice(0, 200)})`);
check(shown.length >= 1 && shown[shown.length - 1].includes("Request digest: sha256:"),
  "the human was shown the request with its digest");
r = await call("code_execute", { sandbox_id: sb, language: "python", code: "print(x + 1)" });
check(!r.isError && text(r).includes("42"), `state persists across cells (${text(r).slice(0, 200)})`);
r = await call("code_execute", { sandbox_id: sb, language: "python",
  code: `# decline\nopen('declined-${marker}.txt', 'w').write('no')` });
check(r.isError === true, "a declined call is an error");
const ls = await call("code_list_files", { sandbox_id: sb });
check(!JSON.stringify(ls).includes(`declined-${marker}`), "and it never ran");
const rd = await call("code_read_file", { sandbox_id: sb, path: "data.txt" });
check(!rd.isError && JSON.stringify(rd).includes(`hello ${marker}`), "read the file back");
await call("code_destroy_sandbox", { sandbox_id: sb });
await client.close();
process.exit(fails.length ? 1 : 0);
