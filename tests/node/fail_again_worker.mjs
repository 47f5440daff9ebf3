// A worker that fails every run of every job, and says so: for "retry, it fails again, retry
// again" tests, which need to know that each retry really ran the job.
//
// Usage: node fail_again_worker.mjs <redisUrl> <queue> [prefix]   (prefix: bull)
//
// Once its worker is up it adds one job (attempts: 1) and prints `ADDED <jobId>`. Then, on
// stdout, `RUN <jobId> <n>` each time it takes a job (its n-th run of that job here: a retry
// may reset BullMQ's own attempt counters) and `FAILED <jobId>` once BullMQ has moved it to
// failed. The first run fails at once; a later run stays active until a `GO` line arrives on
// stdin, so a test can see the job running before it fails again. Runs until SIGTERM.

import { createInterface } from 'node:readline';
import { Queue, Worker } from 'bullmq';
import { connectionFromUrl } from './connection.mjs';

const [redisUrl, queueName, prefix = 'bull'] = process.argv.slice(2);
if (!redisUrl || !queueName) {
  process.stderr.write('usage: node fail_again_worker.mjs <redisUrl> <queue> [prefix]\n');
  process.exit(64);
}

// Each GO line releases one held run (the one waiting, or the next one to come).
let released = 0;
const waiting = [];
createInterface({ input: process.stdin }).on('line', line => {
  if (line.trim() !== 'GO') return;
  if (waiting.length) waiting.shift()();
  else released += 1;
});
function go() {
  if (released > 0) {
    released -= 1;
    return Promise.resolve();
  }
  return new Promise(resolve => waiting.push(resolve));
}

const runs = new Map();
const worker = new Worker(
  queueName,
  async job => {
    const n = (runs.get(job.id) || 0) + 1;
    runs.set(job.id, n);
    process.stdout.write(`RUN ${job.id} ${n}\n`);
    if (n > 1) await go();
    throw new Error(`card service down (run ${n})`);
  },
  { connection: connectionFromUrl(redisUrl), prefix, concurrency: 1, name: 'fail-again' },
);
worker.on('failed', job => process.stdout.write(`FAILED ${job.id}\n`));
worker.on('error', err => process.stderr.write(`[fail_again_worker] ${err.stack}\n`));
await worker.waitUntilReady();
const queue = new Queue(queueName, { connection: connectionFromUrl(redisUrl), prefix });
const job = await queue.add('charge', { order: 7 }, { attempts: 1 });
await queue.close();
process.stdout.write(`ADDED ${job.id}\n`);

process.on('SIGTERM', async () => {
  while (waiting.length) waiting.shift()(); // a held run ends, so close() does not wait on it
  await worker.close();
  process.exit(0);
});
