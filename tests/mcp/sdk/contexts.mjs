// contexts.mjs — interpreter contexts judged through the official MCP SDK (npm @modelcontextprotocol/sdk),
// over streamable HTTP to airlock serve: state persists across cells, a figure arrives as a valid PNG
// of the figure's size, a DataFrame as a table, a timed-out cell keeps its state, restart clears
// it, an OOM cell is reported as oom, a fresh exec sees no context state, and two MCP sessions'
// contexts never see each other.
// Usage: node contexts.mjs URL TOKEN   (the server's rules must let code run unasked)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const fails = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok" : "FAIL"}: ${what}`);
  if (!ok) fails.push(what);
};
const [url, token] = process.argv.slice(2);

async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "1" }, { capabilities: {} });
  await client.connect(transport);
  const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 120000 });
  return { client, call };
}

// A PNG's width and height from its signature and IHDR chunk, or null.
function pngSize(buf) {
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (buf.length < 24 || !buf.subarray(0, 8).equals(sig) || buf.toString("latin1", 12, 16) !== "IHDR") return null;
  return [buf.readUInt32BE(16), buf.readUInt32BE(20)];
}

const cellOf = (r) => r.structuredContent?.cell ?? {};
const valueOf = (r) => cellOf(r).value?.text;

const a = await connect("airlock-sdk-contexts-a");
const b = await connect("airlock-sdk-contexts-b");
const sb = (await a.call("code_create_sandbox", { limits: { memory_mb: 256 } })).structuredContent?.sandbox_id;
check(typeof sb === "string", `a sandbox (${sb})`);
const py = (code, extra = {}) => a.call("code_execute", { sandbox_id: sb, language: "python", code, ...extra });

let r = await py("x = 41");
r = await py("x + 1");
check(!r.isError && valueOf(r) === "42" && cellOf(r).state === "kept", `state persists across cells (${valueOf(r)})`);

r = await py("print(x)", { fresh: true });
check(r.structuredContent?.stderr?.includes("NameError") && !r.structuredContent?.cell,
  "a fresh exec sees no context state");

r = await py("import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\nplt.show()");
const images = (r.content || []).filter((c) => c.type === "image");
const sizes = images.map((c) => pngSize(Buffer.from(c.data, "base64")));
check(images.length === 1 && images[0].mimeType === "image/png" && JSON.stringify(sizes) === "[[400,300]]",
  `a figure arrives as one valid 400x300 PNG (${JSON.stringify(sizes)})`);

r = await py("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})");
const v = cellOf(r).value ?? {};
check(v.type === "DataFrame" && /a\s+b/.test(v.text ?? "") && (v.html ?? "").includes("<table"),
  `a DataFrame arrives as a table (${JSON.stringify(v).slice(0, 120)})`);

r = await py("import time\ntime.sleep(300)", { timeout: 2 });
check(r.structuredContent?.status === "timeout" && cellOf(r).state === "kept" && cellOf(r).interrupted === true,
  `a timed-out cell is interrupted, its state kept (${r.structuredContent?.status}, ${cellOf(r).state})`);
r = await py("x");
check(valueOf(r) === "41", `... and x is still there (${valueOf(r)})`);

r = await a.call("code_context", { sandbox_id: sb, action: "restart", context_id: "python" });
check(!r.isError && r.structuredContent?.running === true, "restart answers");
r = await py("x");
check(cellOf(r).error?.ename === "NameError", "restart clears the state");

await py("w = 5");
r = await py("big = bytearray(700 * 1024 * 1024)");
check(r.structuredContent?.status === "oom" && r.structuredContent?.oom_killed === true && cellOf(r).state === "lost",
  `an OOM cell is reported as oom (${r.structuredContent?.status}, ${cellOf(r).state})`);
r = await py("'w' in globals()");
check(valueOf(r) === "False", `after OOM the context starts clean (${valueOf(r)})`);

// Two sessions, each on the sandbox of its own session (no sandbox_id): a variable of one is not
// in the other.
r = await a.call("code_execute", { language: "python", code: "secret = 'a-only'" });
const sbA = r.structuredContent?.sandbox_id;
r = await a.call("code_execute", { language: "python", code: "secret" });
check(valueOf(r) === "'a-only'", `session A's context keeps its state (${valueOf(r)})`);
r = await b.call("code_execute", { language: "python", code: "'secret' in globals()" });
check(valueOf(r) === "False" && r.structuredContent?.sandbox_id !== sbA,
  `session B's context does not see session A's (${valueOf(r)}, ${r.structuredContent?.sandbox_id} vs ${sbA})`);
await a.call("code_destroy_sandbox", { sandbox_id: sb });
await a.client.close();
await b.client.close();
process.exit(fails.length ? 1 : 0);
