// Seed queues for the action tests, through real BullMQ 6 (so the jobs are exactly what a
// Node application leaves behind).
//
// Usage: node seed_actions.mjs [--prefix=<prefix>] <redisUrl> <queue> <failed> <delayed> <dlq> [name] [reason]
//   <failed>  jobs that a worker fails (attempts: 2, so failed jobs have used their budget),
//             named [name] (default "work") with failure reason "[reason] <i>"
//   <delayed> jobs delayed by an hour
//   <dlq>     jobs added (waiting, no worker) to "<queue>-dlq", whose source is <queue>
// Prints one JSON line: {"failed": [...ids], "delayed": [...], "dlq": [...]}.

import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [redisUrl, queueName, failedArg, delayedArg, dlqArg, nameArg, reasonArg]] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);
const name = nameArg || 'work';
const reason = reasonArg || 'boom';

async function main() {
  const queue = new Queue(queueName, { connection, prefix });
  const out = { failed: [], delayed: [], dlq: [] };
  const failedCount = Number(failedArg);
  if (failedCount) {
    const before = (await queue.getJobCounts('failed')).failed;
    const jobs = await queue.addBulk(Array.from({ length: failedCount }, (_, i) => ({
      name, data: { i }, opts: { attempts: 2 },
    })));
    out.failed = jobs.map(j => j.id);
    const worker = new Worker(queueName, async job => { throw new Error(`${reason} ${job.data.i}`); },
      { connection, prefix, concurrency: 10 });
    worker.on('error', err => log(`worker error: ${err.message}`));
    for (;;) {
      const { failed } = await queue.getJobCounts('failed');
      if (failed - before >= failedCount) break;
      await sleep(20);
    }
    await worker.close();
  }
  const delayed = await queue.addBulk(Array.from({ length: Number(delayedArg) }, (_, i) => ({
    name: 'later', data: { i }, opts: { delay: 3600_000 },
  })));
  out.delayed = delayed.map(j => j.id);
  const dlq = new Queue(`${queueName}-dlq`, { connection, prefix });
  const dead = await dlq.addBulk(Array.from({ length: Number(dlqArg) }, (_, i) => ({
    name: 'dead', data: { i, why: 'dead letter' }, opts: { attempts: 3 },
  })));
  out.dlq = dead.map(j => j.id);
  await dlq.close();
  await queue.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
