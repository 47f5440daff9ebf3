// Build BullMQ 6 queues on a Redis Cluster with the real Node library, through
// ioredis' Cluster client, so Queuewatch's Cluster kind reads data written by
// the real thing.
//
// Usage: node cluster_fixture.mjs <host:port,host:port,...>
//        node cluster_fixture.mjs <host:port,...> add <prefix> <queue> <n>
//          (adds n waiting jobs to one queue; prints {"counts": getJobCounts(),
//          "paused": isPaused(), "schedulers": [{id, every}] of its job schedulers})
//        node cluster_fixture.mjs <host:port,...> schedule <prefix> <queue> <id> <every ms>
//          (upserts a job scheduler; prints the same)
//        node cluster_fixture.mjs <host:port,...> work <prefix> <queue> <n>
//          (a worker completes n of its waiting jobs, maybe one more it had already
//          fetched, then closes; prints the same)
//
// Queues are hash-tagged (BullMQ refuses a queue whose keys span slots):
// `{q1}`…`{q5}` under prefix `bull`, and `orders` under prefix `{app}`. Each
// gets completed and failed jobs (run by a worker, then closed), then waiting,
// delayed and prioritized ones. The LAST stdout line is one JSON object:
//   {"queues": [{"prefix", "name", "counts"}, ...]}
// with `getJobCounts()` as Node reports it.

import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const QUEUES = [
  { prefix: 'bull', name: '{q1}', finished: 2 },
  { prefix: 'bull', name: '{q2}', finished: 3 },
  { prefix: 'bull', name: '{q3}', finished: 1 },
  { prefix: 'bull', name: '{q4}', finished: 4 },
  { prefix: 'bull', name: '{q5}', finished: 2 },
  { prefix: '{app}', name: 'orders', finished: 3 },
];

const seeds = (process.argv[2] || '').split(',').filter(Boolean).map((hostPort) => {
  const at = hostPort.lastIndexOf(':');
  return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
});
if (!seeds.length) {
  process.stderr.write('usage: node cluster_fixture.mjs <host:port,host:port,...>\n');
  process.exit(64);
}

const watchdog = setTimeout(() => {
  process.stderr.write('cluster_fixture.mjs: timed out\n');
  process.exit(70);
}, 60_000);

function cluster() {
  return new IORedis.Cluster(seeds, { redisOptions: { maxRetriesPerRequest: null } });
}

if (process.argv[3] === 'add' || process.argv[3] === 'schedule') {
  const [prefix, name, n, every] = process.argv.slice(4);
  const connection = cluster();
  const queue = new Queue(name, { connection, prefix });
  if (process.argv[3] === 'schedule') {
    await queue.upsertJobScheduler(n, { every: Number(every) }, { name: 'tick' });
  } else {
    for (let i = 0; i < Number(n); i++) await queue.add('more', { i });
  }
  const counts = await queue.getJobCounts();
  const paused = await queue.isPaused();
  const schedulers = (await queue.getJobSchedulers()).map((s) => ({ id: s.key, every: Number(s.every) }));
  await queue.close();
  await connection.quit();
  clearTimeout(watchdog);
  console.log(JSON.stringify({ counts, paused, schedulers }));
  process.exit(0);
}

if (process.argv[3] === 'work') {
  const [prefix, name, n] = process.argv.slice(4);
  const connection = cluster();
  const queue = new Queue(name, { connection, prefix });
  let done = 0;
  await new Promise((resolve) => {
    const worker = new Worker(name, async (job) => ({ ok: job.id }), {
      connection: cluster(),
      prefix,
      concurrency: 1,
      autorun: false,
    });
    worker.on('completed', async () => {
      if (++done === Number(n)) {
        await worker.close();
        resolve();
      }
    });
    worker.run();
  });
  const counts = await queue.getJobCounts();
  await queue.close();
  await connection.quit();
  clearTimeout(watchdog);
  console.log(JSON.stringify({ counts }));
  process.exit(0);
}

const out = [];
for (const [index, spec] of QUEUES.entries()) {
  const connection = cluster();
  const queue = new Queue(spec.name, { connection, prefix: spec.prefix });
  // Finished jobs: even ones complete, odd ones fail for good.
  for (let i = 0; i < spec.finished * 2; i++) {
    await queue.add('finish', { i }, { attempts: 1 });
  }
  let done = 0;
  const ended = new Promise((resolve) => {
    const worker = new Worker(
      spec.name,
      async (job) => {
        if (job.data.i % 2) throw new Error(`boom ${job.data.i}`);
        return { ok: job.data.i };
      },
      { connection: cluster(), prefix: spec.prefix, concurrency: 1 },
    );
    const step = async () => {
      if (++done === spec.finished * 2) {
        await worker.close();
        resolve();
      }
    };
    worker.on('completed', step);
    worker.on('failed', step);
  });
  await ended;
  for (let i = 0; i < index + 1; i++) await queue.add('wait', { i });
  for (let i = 0; i < 2; i++) await queue.add('later', { i }, { delay: 3_600_000 });
  for (let i = 0; i < index % 3; i++) await queue.add('urgent', { i }, { priority: 5 });
  out.push({ prefix: spec.prefix, name: spec.name, counts: await queue.getJobCounts() });
  await queue.close();
  await connection.quit();
}
clearTimeout(watchdog);
console.log(JSON.stringify({ queues: out }));
process.exit(0);
