// fork.mjs — code_fork_sandbox judged through the official MCP SDK (npm @modelcontextprotocol/sdk), over
// streamable HTTP to airlock serve: the session's own sandbox is forked (the SDK checks the answer against
// the tool's outputSchema); the child has the session's file, a write in the child is not seen by the session.
// Usage: node fork.mjs URL TOKEN   (the server's rules must let code run unasked)
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
const client = new Client({ name: "airlock-sdk-fork", version: "1" }, { capabilities: {} });
await client.connect(transport);
const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });

const tools = (await client.listTools()).tools.map((t) => t.name);
check(tools.includes("code_fork_sandbox"), "code_fork_sandbox is listed");
const wrote = await call("code_write_file", { path: "plan.txt", content: "step 1\n" });
check(!wrote.isError, "a file written in the session's own sandbox");
const forked = await call("code_fork_sandbox", {});
const kid = forked.structuredContent?.sandboxes?.[0]?.sandbox_id;
check(!forked.isError && typeof kid === "string" && kid !== forked.structuredContent?.sandbox_id,
  `the session's sandbox forked (${JSON.stringify(forked.structuredContent)})`);
const read = await call("code_execute", { sandbox_id: kid, language: "shell", code: "cat plan.txt; echo step 2 >>plan.txt", fresh: true });
check(read.structuredContent?.stdout === "step 1\n", `the child has the file (${JSON.stringify(read.structuredContent?.stdout)})`);
const own = await call("code_read_file", { path: "plan.txt" });
check(own.structuredContent?.content === "step 1\n", `the session's own file is unchanged (${JSON.stringify(own.structuredContent?.content)})`);
const gone = await call("code_destroy_sandbox", { sandbox_id: kid });
check(!gone.isError, "the child destroyed");

await client.close();
if (fails.length) {
  console.log(`${fails.length} check(s) failed`);
  process.exit(1);
}
