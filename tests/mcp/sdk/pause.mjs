// pause.mjs — pause and resume judged through the official MCP SDK (npm @modelcontextprotocol/sdk), over
// streamable HTTP to airlock serve: code_pause_sandbox and code_resume_sandbox are listed; a sandbox made with
// code_create_sandbox is paused (the SDK checks each answer against the tool's outputSchema), a code_execute in
// it resumes it first and says resumed, code_resume_sandbox of a running one changes nothing, and a pause of a
// sandbox that is not the session's principal's is a tool error.
// Usage: node pause.mjs URL TOKEN   (the server's rules must let code run unasked)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const fails = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok" : "FAIL"}: ${what}`);
  if (!ok) fails.push(what);
};
const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "airlock-sdk-pause", version: "1" }, { capabilities: {} });
await client.connect(transport);
const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });

const tools = (await client.listTools()).tools.map((t) => t.name);
check(tools.includes("code_pause_sandbox") && tools.includes("code_resume_sandbox"), "pause and resume are listed");

const id = (await call("code_create_sandbox", {})).structuredContent?.sandbox_id;
check(typeof id === "string", `a sandbox (${id})`);
const paused = await call("code_pause_sandbox", { sandbox_id: id });
check(!paused.isError && paused.structuredContent?.state === "paused", `paused (${JSON.stringify(paused.structuredContent)})`);
const ran = await call("code_execute", { sandbox_id: id, language: "shell", code: "echo awake", fresh: true });
check(ran.structuredContent?.stdout === "awake\n" && ran.structuredContent?.resumed === true, "an exec in it resumed it first, and says so");
const again = await call("code_resume_sandbox", { sandbox_id: id });
check(!again.isError && again.structuredContent?.state === "running" && again.structuredContent?.changed === false, "a resume of a running sandbox changes nothing");
const none = await call("code_pause_sandbox", { sandbox_id: "sb-0000000000000000" });
check(none.isError === true, "an unknown sandbox is a tool error");
await call("code_destroy_sandbox", { sandbox_id: id });

await client.close();
if (fails.length) {
  console.log(`${fails.length} check(s) failed`);
  process.exit(1);
}
