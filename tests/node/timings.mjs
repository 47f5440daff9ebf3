// A workload with known timings, for the wait/processing time tests.
//
// Usage: node timings.mjs <redisUrl> <queue> <waitMs> <batches>
//   1. adds 10 `fast` (200 ms) and 5 `slow` (1 s) jobs with no worker running, waits <waitMs>,
//      then starts one worker (concurrency 15), so those jobs wait about <waitMs>;
//   2. prints `STARTED`, then adds <batches> more batches of 4 fast + 2 slow jobs, one every 400 ms;
//   3. once every job completed, prints the truth as BullMQ's own job fields tell it:
//      {"jobs": [{"id", "name", "wait_ms": processedOn - timestamp, "processing_ms": finishedOn - processedOn}]}.
import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [redisUrl, queueName, waitMs, batches] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection });
const SLEEP = { fast: 200, slow: 1000 };

function batch(fast, slow) {
  return [...Array.from({ length: fast }, (_, i) => ({ name: 'fast', data: { i } })),
          ...Array.from({ length: slow }, (_, i) => ({ name: 'slow', data: { i } }))];
}

let total = 15;
await queue.addBulk(batch(10, 5));
await sleep(Number(waitMs));
const worker = new Worker(queueName, async job => { await sleep(SLEEP[job.name]); },
  { connection, concurrency: 15 });
worker.on('error', err => log(`worker error: ${err.message}`));
console.log('STARTED');
for (let b = 0; b < Number(batches); b += 1) {
  await sleep(400);
  await queue.addBulk(batch(4, 2));
  total += 6;
}
for (;;) {
  if ((await queue.getJobCounts('completed')).completed >= total) break;
  await sleep(50);
}
await worker.close();
const jobs = (await queue.getJobs(['completed'], 0, -1)).map(j => ({
  id: j.id, name: j.name, wait_ms: j.processedOn - j.timestamp, processing_ms: j.finishedOn - j.processedOn,
}));
await queue.close();
console.log(JSON.stringify({ jobs }));
