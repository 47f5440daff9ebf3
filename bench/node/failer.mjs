// Spaced-out failures on one queue, for bench/live_latency.py.
//
//   node failer.mjs --redis redis://127.0.0.1:PORT/0 --queue latency [--count 220]
//                   [--interval-min 100] [--interval-max 200] [--warmup 25]
//
// First adds and fails <warmup> jobs (so the failed list already has a full first page and
// the dashboard is warm), prints {"ready": true} and waits for a line on stdin ("go"). Then adds one
// job every <interval-min>..<interval-max> ms (uniformly random); a Worker (concurrency 1)
// throws for each. Right before throwing it records Date.now() (the same machine clock the
// Python client uses), printed as {"thrown": {"id": ..., "ms": ...}} lines on stdout.
// Ends with {"summary": {...}} once every job has failed.

import readline from 'node:readline';
import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, emit, log, parseArgs, sleep } from './common.mjs';

const opts = parseArgs(process.argv.slice(2), {
  redis: '', queue: 'latency', count: 220, intervalMin: 100, intervalMax: 200, warmup: 25,
});
const connection = connectionFromUrl(opts.redis);
const queue = new Queue(opts.queue, { connection });
let failed = 0;
let warmFailed = 0;
const thrown = [];

const worker = new Worker(
  opts.queue,
  async job => {
    const ms = Date.now();
    if (job.data.measured) {
      thrown.push({ id: job.id, ms });
      emit({ thrown: { id: job.id, ms } });
    }
    throw new Error(`latency probe ${job.data.seq}`);
  },
  { connection, concurrency: 1 },
);
worker.on('failed', job => (job.data.measured ? failed++ : warmFailed++));
worker.on('error', err => log('failer', `worker error: ${err.message}`));

async function waitFor(cond, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the worker');
    await sleep(20);
  }
}

await queue.addBulk(
  Array.from({ length: opts.warmup }, (_, i) => ({ name: 'warm', data: { seq: -i, measured: false }, opts: { attempts: 1 } })),
);
await waitFor(() => warmFailed >= opts.warmup, 30_000);
emit({ ready: true });

const rl = readline.createInterface({ input: process.stdin });
await new Promise(resolve => rl.once('line', resolve));
const t0 = Date.now();
for (let seq = 0; seq < opts.count; seq++) {
  await queue.add('probe', { seq, measured: true }, { attempts: 1 });
  await sleep(opts.intervalMin + Math.random() * (opts.intervalMax - opts.intervalMin));
}
await waitFor(() => failed >= opts.count, 30_000);
emit({ summary: { count: opts.count, failed, seconds: (Date.now() - t0) / 1000 } });
rl.close();
await worker.close();
await queue.close();
process.exit(0);
