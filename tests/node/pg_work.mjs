// Real Node BullMQ 6.7 workers processing jobs on PostgreSQL while a test's monitor watches.
//
// Usage: node pg_work.mjs <postgresUrl> <queue> <count>
// Prints STARTED once its worker is ready, then adds <count> jobs in bursts of 10 (every 4th
// job, named "boom", fails; one attempt each) while a concurrency-2 worker takes about 20 ms
// per job. Once every job has finished it prints one JSON line, `{"counts": getJobCounts()}`,
// and exits.
import { Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';

const [url, name, count] = process.argv.slice(2);
const total = Number(count);
const connection = { connectionString: url, migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const watchdog = setTimeout(() => {
  process.stderr.write('pg_work: timed out\n');
  process.exit(70);
}, 90_000);

const queue = new Queue(name, { connection }, createPostgresBackend);
let finished = 0;
const worker = new Worker(
  name,
  async (job) => {
    await sleep(20);
    if (job.name === 'boom') throw new Error('boom');
    return { n: job.data.n };
  },
  { connection, concurrency: 2 },
  createPostgresBackend,
);
worker.on('completed', () => finished++);
worker.on('failed', () => finished++);
worker.on('error', (err) => process.stderr.write(`worker: ${err.message}\n`));
await worker.waitUntilReady();
process.stdout.write('STARTED\n');

for (let n = 0; n < total; n++) {
  await queue.add(n % 4 === 3 ? 'boom' : 'ok', { n }, { attempts: 1 });
  if (n % 10 === 9) await sleep(150);
}
while (finished < total) await sleep(20);
await worker.close();
clearTimeout(watchdog);
process.stdout.write(JSON.stringify({ counts: await queue.getJobCounts() }) + '\n');
await queue.close();
process.exit(0);
