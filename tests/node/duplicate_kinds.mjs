// The three causes of BullMQ's `duplicated` event, and the two events beside it, each made by
// real Node BullMQ in one queue:
//   1. a custom jobId re-added while its job still exists (the add is dropped);
//   2. a job scheduler whose next iteration already exists when a worker takes the current one
//      (updateJobScheduler finds the next iteration's key: here a job was added under that id);
//   3. a flow added twice with the same custom ids: the second add's parent is a custom id that
//      still exists (dropped, as 1), its child is attached to the parent again (not dropped);
//   4. two adds with one deduplication id (`deduplicated`);
//   5. a job that fails its only attempt (`failed`, then `retries-exhausted`).
//
// Usage: node duplicate_kinds.mjs [--prefix=P] <redisUrl> <queue>
// Prints one JSON line: {"counts": getJobCounts()}.

import { FlowProducer, Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [redisUrl, queueName]] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection, prefix });
const flows = new FlowProducer({ connection, prefix });

async function until(what, test) {
  const deadline = Date.now() + 20000;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function main() {
  await queue.add('invoice', {}, { jobId: 'invoice-1', delay: 60000 });
  await queue.add('invoice', {}, { jobId: 'invoice-1', delay: 60000 }); // 1

  const flow = { name: 'parent', queueName, opts: { jobId: 'flow-parent' },
    children: [{ name: 'child', queueName, data: {}, opts: { jobId: 'flow-child', delay: 60000 } }] };
  await flows.add(flow);
  await flows.add(flow); // 3: parent dropped (custom id), child attached again

  await queue.add('dedup', {}, { deduplication: { id: 'd-1' }, delay: 60000 });
  await queue.add('dedup', {}, { deduplication: { id: 'd-1' }, delay: 60000 }); // 4

  // 2: the first iteration runs at once; its next one (every 60 s) is taken in advance.
  const first = await queue.upsertJobScheduler('tick', { every: 60000 }, { name: 'tick', data: {} });
  const next = Number(first.id.split(':').pop()) + 60000;
  await queue.add('tick', {}, { jobId: `repeat:tick:${next}`, delay: 60000 });

  const worker = new Worker(queueName, async job => {
    if (job.name === 'doomed') throw new Error('no retries');
  }, { connection, prefix, concurrency: 2 });
  worker.on('error', err => log(`worker error: ${err.message}`));
  await queue.add('doomed', {}, { attempts: 1 }); // 5
  await until('the iteration and the doomed job', async () => {
    const counts = await queue.getJobCounts('completed', 'failed');
    return counts.completed >= 1 && counts.failed >= 1;
  });
  await worker.close();

  const counts = await queue.getJobCounts();
  await flows.close();
  await queue.close();
  process.stdout.write(JSON.stringify({ counts }) + '\n');
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
