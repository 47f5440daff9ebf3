// Produce live activity on a queue for Queuewatch's live tests and benchmarks.
//
// Usage (every mode takes an optional key prefix last, default 'bull'; pass '' as
// maxLenEvents to keep the default stream length):
//   node produce.mjs fail <redisUrl> <queue> <count> [maxLenEvents] [prefix]
//       add <count> jobs that a worker fails (attempts: 1), wait until all failed, exit
//   node produce.mjs complete <redisUrl> <queue> <count> [maxLenEvents]
//       add <count> jobs that a worker completes, wait until all done, exit
//   node produce.mjs add <redisUrl> <queue> <count>
//       add <count> jobs (attempts: 3) and exit, without processing them
//   node produce.mjs recover <redisUrl> <queue> <seconds>
//       run a healthy worker (short stalledInterval) for <seconds>, so stalled jobs are
//       recovered and completed, then exit
// Prints one JSON line on stdout at the end: {"counts": getJobCounts(), "ids": [...]}.

import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [mode, redisUrl, queueName, arg, maxLen, prefix = 'bull'] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queueOpts = { connection, prefix };
if (maxLen) queueOpts.streams = { events: { maxLen: Number(maxLen) } };
const queue = new Queue(queueName, queueOpts);

async function runWorker(processor, until) {
  const worker = new Worker(queueName, processor, { connection, prefix, concurrency: 5, stalledInterval: 500, lockDuration: 2000 });
  worker.on('error', err => log(`worker error: ${err.message}`));
  await until();
  await worker.close();
}

async function main() {
  const ids = [];
  if (mode === 'fail' || mode === 'complete') {
    const count = Number(arg);
    const jobs = await queue.addBulk(
      Array.from({ length: count }, (_, i) => ({ name: `${mode}-job`, data: { i }, opts: { attempts: 1 } })),
    );
    ids.push(...jobs.map(j => j.id));
    const target = mode === 'fail' ? 'failed' : 'completed';
    const before = (await queue.getJobCounts(target))[target];
    await runWorker(
      async job => {
        if (mode === 'fail') throw new Error(`live failure ${job.data.i}`);
        return { ok: job.data.i };
      },
      async () => {
        for (;;) {
          const n = (await queue.getJobCounts(target))[target];
          if (n - before >= count) return;
          await sleep(20);
        }
      },
    );
  } else if (mode === 'add') {
    const jobs = await queue.addBulk(
      Array.from({ length: Number(arg) }, (_, i) => ({ name: 'added-job', data: { i }, opts: { attempts: 3 } })),
    );
    ids.push(...jobs.map(j => j.id));
  } else if (mode === 'recover') {
    await runWorker(async () => ({ recovered: true }), () => sleep(Number(arg) * 1000));
  } else {
    process.stderr.write('usage: node produce.mjs fail|complete|add|recover <redisUrl> <queue> <arg> [maxLenEvents] [prefix]\n');
    process.exit(64);
  }
  const counts = await queue.getJobCounts();
  await queue.close();
  process.stdout.write(JSON.stringify({ counts, ids }) + '\n');
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
