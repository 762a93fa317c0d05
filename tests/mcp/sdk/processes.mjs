// processes.mjs — background processes judged through the official MCP SDK (npm @modelcontextprotocol/sdk),
// over streamable HTTP to airlock serve: code_execute with background starts a process in the session's own
// sandbox and answers at once (the SDK checks the answer against the tool's outputSchema), code_process lists
// it, reads its output, sends it stdin and kills it; a later plain exec of the session sees what it wrote.
// Usage: node processes.mjs URL TOKEN   (the server's rules must let code run unasked)
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
const client = new Client({ name: "airlock-sdk-processes", version: "1" }, { capabilities: {} });
await client.connect(transport);
const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });

const tools = (await client.listTools()).tools.map((t) => t.name);
check(tools.includes("code_process"), "code_process is listed");

const started = await call("code_execute", {
  language: "shell",
  code: 'while read -r l; do echo "seen:$l" | tee -a seen.txt; done; echo done',
  background: true,
  keep_stdin: true,
});
const proc = started.structuredContent?.process;
check(started.structuredContent?.status === "started" && !started.isError, "a background start answers at once");
check(Number.isInteger(proc?.pid) && proc.pid > 0, `... with a pid (${proc?.pid})`);

const listed = await call("code_process", { action: "list" });
check(
  listed.structuredContent?.processes?.some((p) => p.pid === proc.pid && p.running),
  "code_process list shows it running",
);

const sent = await call("code_process", { action: "stdin", pid: proc.pid, data: "hello\n" });
check(!sent.isError, "stdin sent");
const closed = await call("code_process", { action: "close_stdin", pid: proc.pid });
check(!closed.isError, "stdin closed");
const out = await call("code_process", { action: "output", pid: proc.pid, wait: 10 });
check(out.structuredContent?.output === "seen:hello\ndone\n", `output read to its end (${JSON.stringify(out.structuredContent?.output)})`);
check(out.structuredContent?.running === false && out.structuredContent?.exit_code === 0, "... it exited 0");

const after = await call("code_execute", { language: "shell", code: "cat seen.txt", fresh: true });
check(after.structuredContent?.stdout === "seen:hello\n", "the session's sandbox kept what it wrote");

const sleeper = (await call("code_execute", { language: "shell", code: "exec sleep 300", background: true }))
  .structuredContent?.process?.pid;
const killed = await call("code_process", { action: "kill", pid: sleeper });
check(!killed.isError, "kill");
let got = null;
for (let i = 0; i < 50; i++) {
  got = (await call("code_process", { action: "get", pid: sleeper })).structuredContent;
  if (!got?.running) break;
  await new Promise((r) => setTimeout(r, 100));
}
check(got?.running === false && got?.status === "killed", `... it ended killed (${got?.status})`);
const unknown = await call("code_process", { action: "get", pid: 4000000 });
check(unknown.isError === true, "an unknown pid is a tool error");

await client.close();
if (fails.length) {
  console.log(`${fails.length} check(s) failed`);
  process.exit(1);
}
