// snapshot.mjs — the snapshot tools judged through the official MCP SDK (npm @modelcontextprotocol/sdk), over
// streamable HTTP to airlock serve: an agent snapshots its session's own sandbox (the SDK checks each answer
// against the tool's outputSchema), writes on, makes a sandbox from the snapshot and finds the old file there,
// lists its snapshots and deletes the one it made.
// Usage: node snapshot.mjs URL TOKEN   (the server's rules must let code run unasked)
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
const client = new Client({ name: "airlock-sdk-snapshot", version: "1" }, { capabilities: {} });
await client.connect(transport);
const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });

const tools = (await client.listTools()).tools.map((t) => t.name);
for (const t of ["code_snapshot_sandbox", "code_list_snapshots", "code_delete_snapshot"])
  check(tools.includes(t), `${t} is listed`);
const wrote = await call("code_write_file", { path: "plan.txt", content: "step 1\n" });
check(!wrote.isError, "a file written in the session's own sandbox");
const snap = await call("code_snapshot_sandbox", { name: "before step 2" });
const id = snap.structuredContent?.snapshot_id;
check(!snap.isError && typeof id === "string" && snap.structuredContent?.name === "before step 2",
  `the session's sandbox snapshotted (${JSON.stringify(snap.structuredContent)})`);
await call("code_write_file", { path: "plan.txt", content: "step 2\n" });
const made = await call("code_create_sandbox", { snapshot: id });
const sb = made.structuredContent?.sandbox_id;
check(!made.isError && typeof sb === "string", `a sandbox made from the snapshot (${JSON.stringify(made.structuredContent)})`);
const read = await call("code_execute", { sandbox_id: sb, language: "shell", code: "cat plan.txt", fresh: true });
check(read.structuredContent?.stdout === "step 1\n", `it has the file as it was (${JSON.stringify(read.structuredContent?.stdout)})`);
const own = await call("code_read_file", { path: "plan.txt" });
check(own.structuredContent?.content === "step 2\n", `the session's own file is as written since (${JSON.stringify(own.structuredContent?.content)})`);
const listed = await call("code_list_snapshots", {});
check((listed.structuredContent?.snapshots ?? []).some((s) => s.snapshot_id === id), "the snapshot is listed");
const del = await call("code_delete_snapshot", { snapshot_id: id });
check(!del.isError && del.structuredContent?.deleted === true, "the snapshot deleted");
const again = await call("code_list_snapshots", { snapshot_id: id });
check(again.isError === true, "a deleted snapshot is unknown");
await call("code_destroy_sandbox", { sandbox_id: sb });

await client.close();
if (fails.length) {
  console.log(`${fails.length} check(s) failed`);
  process.exit(1);
}
