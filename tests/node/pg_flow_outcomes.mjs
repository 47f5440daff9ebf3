// flow_outcomes.mjs on BullMQ's PostgreSQL backend: a flow whose children end every way BullMQ 6.7
// records on the parent — one completes (its return value), one fails with
// ignoreDependencyOnFailure ("ignored", with the reason), one fails with failParentOnFailure (the
// parent's failed children, with the reason), one waits in a queue no worker serves (pending).
//
// Usage: node pg_flow_outcomes.mjs <postgresUrl>
// Prints one JSON line: {dependencies: parent.getDependencies(), parentState, childStates}.

import { FlowProducer, Job, Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: node pg_flow_outcomes.mjs <postgresUrl>\n');
  process.exit(64);
}
const connection = { connectionString: url, schema: 'bullmq', migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const watchdog = setTimeout(() => {
  process.stderr.write('pg_flow_outcomes: timed out\n');
  process.exit(70);
}, 60_000);

const flows = new FlowProducer({ connection }, createPostgresBackend);
await flows.add({
  name: 'report',
  queueName: 'parents',
  opts: { jobId: 'parent-1' },
  children: [
    { name: 'ok', queueName: 'kids', data: { step: 1 }, opts: { jobId: 'c-ok' } },
    { name: 'ignored', queueName: 'kids', data: { step: 2 }, opts: { jobId: 'c-ignored', ignoreDependencyOnFailure: true } },
    { name: 'fatal', queueName: 'kids', data: { step: 3 }, opts: { jobId: 'c-fatal', failParentOnFailure: true } },
    { name: 'later', queueName: 'kids-later', data: { step: 4 }, opts: { jobId: 'c-later' } },
  ],
});

const kids = new Queue('kids', { connection }, createPostgresBackend);
const worker = new Worker('kids', async (job) => {
  if (job.name === 'ok') return { rows: 3 };
  throw new Error(`${job.name} boom`);
}, { connection, concurrency: 1 }, createPostgresBackend);
worker.on('error', (err) => process.stderr.write(`worker error: ${err.message}\n`));
for (;;) {
  const counts = await kids.getJobCounts('completed', 'failed');
  if (counts.completed + counts.failed >= 3) break;
  await sleep(20);
}
await worker.close();

const parents = new Queue('parents', { connection }, createPostgresBackend);
const later = new Queue('kids-later', { connection }, createPostgresBackend);
const parent = await Job.fromId(parents, 'parent-1');
const childStates = {};
for (const id of ['c-ok', 'c-ignored', 'c-fatal']) childStates[id] = await kids.getJobState(id);
childStates['c-later'] = await later.getJobState('c-later');
console.log(JSON.stringify({
  dependencies: await parent.getDependencies(),
  parentState: await parent.getState(),
  childStates,
}));
await Promise.all([flows.close(), kids.close(), parents.close(), later.close()]);
clearTimeout(watchdog);
