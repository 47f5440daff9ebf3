// Steady BullMQ 6 workload over many queues, for bench/redis_load.py.
//
//   node workload.mjs --redis redis://127.0.0.1:PORT/0 [--queues 50] [--rate 100] [--fail-every 5]
//                     [--keep 100] [--prefill 250] [--delayed 10] [--name bench]
//
// * Queues <name>-00 .. <name>-NN, one Worker each (concurrency 1).
// * Prefill: <prefill> jobs per queue, every other one failing, processed at once, so the
//   completed and failed sets already sit at their retention cap (removeOnComplete/removeOnFail
//   {count: keep}) when measuring starts: from then on the workload's own Redis traffic is
//   stationary (every finish also trims one old job), which keeps the baseline subtraction honest.
//   Plus <delayed> jobs per queue delayed by an hour, so the delayed counts are not zero.
// * Steady phase: <rate> jobs/s in total, added one by one (Queue.add) round-robin over the
//   queues on a 50 ms clock that catches up exactly (added = floor(elapsed * rate)); every
//   <fail-every>-th job throws in the worker (attempts: 1), the others complete. The failures
//   are spread so that every queue has them at the same rate (job r of queue i fails when
//   (r + i) % <fail-every> is <fail-every> - 1): a plain "seq % 5" over 50 queues would make 10
//   queues fail every job and 40 none.
// * stdout: {"ready": true, ...} once the prefill is done and the steady phase starts, then on
//   SIGTERM/SIGINT (or when stdin closes) {"summary": {...}} with what was added and finished.
// * stderr: progress every 10 s.

import IORedis from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, emit, log, onStop, parseArgs, sleep } from './common.mjs';

const opts = parseArgs(process.argv.slice(2), {
  redis: '', queues: 50, rate: 100, failEvery: 5, keep: 100, prefill: 250, delayed: 10, name: 'bench',
});
const TAG = 'workload';
const connOpts = connectionFromUrl(opts.redis);
// One shared connection for the producers' Queue objects and the workers' non-blocking
// commands; each Worker duplicates it for its blocking connection.
const shared = new IORedis(connOpts);
const names = Array.from({ length: opts.queues }, (_, i) => `${opts.name}-${String(i).padStart(2, '0')}`);
const jobOpts = { attempts: 1, removeOnComplete: { count: opts.keep }, removeOnFail: { count: opts.keep } };
const queues = names.map(n => new Queue(n, { connection: shared }));
const stats = { added: 0, completed: 0, failed: 0, errors: 0, prefilled: 0 };
let steady = false;

const workers = names.map(
  n =>
    new Worker(
      n,
      async job => {
        if (job.data.fail) throw new Error(`bench failure ${job.data.seq} on ${n}`);
        return { ok: job.data.seq };
      },
      { connection: shared, concurrency: 1 },
    ),
);
for (const w of workers) {
  w.on('completed', () => steady && stats.completed++);
  w.on('failed', () => steady && stats.failed++);
  w.on('error', err => {
    stats.errors++;
    log(TAG, `worker error: ${err.message}`);
  });
}

async function prefill() {
  const t0 = Date.now();
  await Promise.all(
    queues.map(async q => {
      await q.addBulk(
        Array.from({ length: opts.prefill }, (_, i) => ({
          name: 'prefill', data: { seq: -i, fail: i % 2 === 0 }, opts: jobOpts,
        })),
      );
      await q.addBulk(
        Array.from({ length: opts.delayed }, (_, i) => ({
          name: 'later', data: { seq: -i }, opts: { ...jobOpts, delay: 3600_000 },
        })),
      );
    }),
  );
  stats.prefilled = opts.prefill * queues.length;
  for (;;) {
    const counts = await Promise.all(queues.map(q => q.getJobCounts('wait', 'active')));
    const left = counts.reduce((s, c) => s + c.wait + c.active, 0);
    if (left === 0) break;
    await sleep(200);
  }
  log(TAG, `prefill of ${stats.prefilled} jobs processed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function produce() {
  const t0 = Date.now();
  let seq = 0;
  let lastLog = t0;
  while (steady) {
    const due = Math.floor(((Date.now() - t0) / 1000) * opts.rate);
    while (seq < due && steady) {
      const q = queues[seq % queues.length];
      const round = Math.floor(seq / queues.length);
      const fail = opts.failEvery > 0 && (round + (seq % queues.length)) % opts.failEvery === opts.failEvery - 1;
      try {
        await q.add('steady', { seq, fail }, jobOpts);
        stats.added++;
      } catch (err) {
        stats.errors++;
        log(TAG, `add failed: ${err.message}`);
      }
      seq++;
    }
    if (Date.now() - lastLog >= 10_000) {
      lastLog = Date.now();
      log(TAG, `added ${stats.added}, completed ${stats.completed}, failed ${stats.failed}, errors ${stats.errors}`);
    }
    await sleep(50);
  }
}

onStop(async why => {
  steady = false;
  log(TAG, `stopping (${why})`);
  emit({ summary: { ...stats, queues: names.length, rate: opts.rate, fail_every: opts.failEvery } });
  await Promise.race([Promise.all([...workers.map(w => w.close(true)), ...queues.map(q => q.close())]), sleep(3000)]);
  shared.disconnect();
});

await prefill();
steady = true;
emit({ ready: true, queues: names, rate: opts.rate });
log(TAG, `steady: ${opts.rate} jobs/s over ${names.length} queues, every ${opts.failEvery}th fails`);
produce();
