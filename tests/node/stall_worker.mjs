// A worker that takes one job and then stalls, for live stalled-job tests.
//
// Usage: node stall_worker.mjs <redisUrl> <queue> [prefix]   (prefix: bull)
//
// It prints `ACTIVE <jobId>` on stdout once it holds a job, then freezes its
// own event loop with a busy loop. A frozen event loop means the lock-renewal
// timer never fires, so the job's `<id>:lock` expires after lockDuration
// (2 s) while the job id stays in `active`: exactly what a crashed or hung
// worker leaves behind. The process never exits by itself; the test kills
// it with SIGKILL (SIGTERM is not handled while the loop spins).

import { Worker } from 'bullmq';
import { connectionFromUrl } from './connection.mjs';

const [redisUrl, queueName, prefix = 'bull'] = process.argv.slice(2);
if (!redisUrl || !queueName) {
  process.stderr.write('usage: node stall_worker.mjs <redisUrl> <queue> [prefix]\n');
  process.exit(64);
}

const worker = new Worker(
  queueName,
  job => {
    // Pipes and files get synchronous writes from node on Linux, so the line
    // is out before we freeze; the short delay is a second safety margin.
    process.stdout.write(`ACTIVE ${job.id}\n`);
    setTimeout(() => {
      // eslint-disable-next-line no-constant-condition
      while (true) {
        // Spin forever: no timers (so no lock renewal), no I/O.
      }
    }, 50);
    return new Promise(() => {}); // never settles
  },
  {
    connection: connectionFromUrl(redisUrl),
    prefix,
    concurrency: 1, // take exactly one job
    lockDuration: 2000, // lock expires 2 s after the freeze
    stalledInterval: 1000,
    name: 'stall-worker', // stored as the job's `pb` field
  },
);
worker.on('error', err => process.stderr.write(`[stall_worker] ${err.stack}\n`));
process.stderr.write(`[stall_worker] waiting for a job on ${prefix}:${queueName}\n`);
