// A flow whose children end every way BullMQ 6 records on the parent, for the job page's flow
// section: one child completes (its return value lands in the parent's `:processed`), one fails
// with ignoreDependencyOnFailure (its reason lands in `:failed`, "ignored"), one fails with
// failParentOnFailure (it lands in `:unsuccessful`, and the parent gets a deferred failure), one
// waits in a queue no worker serves (still in `:dependencies`).
//
// Usage: node flow_outcomes.mjs [--prefix=<prefix>] <redisUrl>
// Prints one JSON line: {dependencies: parent.getDependencies(), parentState, childStates}.

import { FlowProducer, Job, Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [redisUrl]] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);

const flows = new FlowProducer({ connection, prefix });
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

const kids = new Queue('kids', { connection, prefix });
const worker = new Worker('kids', async job => {
  if (job.name === 'ok') return { rows: 3 };
  throw new Error(`${job.name} boom`);
}, { connection, prefix, concurrency: 1 });
worker.on('error', err => log(`worker error: ${err.message}`));
while ((await kids.getJobCounts('completed', 'failed')).completed + (await kids.getJobCounts('failed')).failed < 3) {
  await sleep(20);
}
await worker.close();

const parents = new Queue('parents', { connection, prefix });
const parent = await Job.fromId(parents, 'parent-1');
const later = new Queue('kids-later', { connection, prefix });
const childStates = {};
for (const id of ['c-ok', 'c-ignored', 'c-fatal']) childStates[id] = await kids.getJobState(id);
childStates['c-later'] = await later.getJobState('c-later');
console.log(JSON.stringify({
  dependencies: await parent.getDependencies(),
  parentState: await parent.getState(),
  parentDeferredFailure: parent.deferredFailure ?? null,
  childStates,
}));
await Promise.all([flows.close(), kids.close(), parents.close(), later.close()]);
