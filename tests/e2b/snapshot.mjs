// snapshot.mjs — E2B's snapshot calls through the official E2B JavaScript SDK (npm "e2b", unchanged) against
// airlock serve's E2B front end, on a server with a state directory: createSnapshot, listSnapshots,
// Sandbox.create(snapshotId) and deleteSnapshot. airlock's snapshot keeps the files only (E2B's keeps memory too).
// Configured as an E2B user would: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY. Prints "ok: ..." per check; the
// first check that fails throws (exit 1).
import { Sandbox } from 'e2b'

function check(cond, what, detail) {
  if (!cond) throw new Error(`FAILED: ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`)
  console.log(`ok: ${what}`)
}

const sbx = await Sandbox.create({ timeoutMs: 300_000 })
await sbx.commands.run('echo one >/home/user/s.txt')
const snap = await sbx.createSnapshot({ name: 'e2b-snap' })
check(/^snap-[0-9a-f]+$/.test(snap.snapshotId) && snap.names.includes('e2b-snap'), 'createSnapshot', snap)
await sbx.commands.run('echo two >/home/user/s.txt')
const listed = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems()
check(listed.length === 1 && listed[0].snapshotId === snap.snapshotId, 'listSnapshots of the sandbox', listed)
const none = await Sandbox.listSnapshots({ sandboxId: 'sb-0000000000000000' }).nextItems()
check(none.length === 0, 'listSnapshots of another sandbox', none)
const from = await Sandbox.create(snap.snapshotId, { timeoutMs: 300_000 })
const r = await from.commands.run('cat /home/user/s.txt')
check(r.stdout === 'one\n', 'Sandbox.create(snapshotId) has the files as they were', r.stdout)
await from.kill()
check((await Sandbox.deleteSnapshot(snap.snapshotId)) === true, 'deleteSnapshot')
check((await Sandbox.deleteSnapshot(snap.snapshotId)) === false, 'deleteSnapshot of a deleted one is false')
await sbx.kill()
console.log('ok: all')
