// Real Node BullMQ 6.7 on PostgreSQL for bench/postgres_backend.py. The packages are
// tests/node's (bullmq 6.7.0 with `pg`, pinned by its lockfile): bench/node has no `pg`.
//
//   node pg_load.mjs load <postgresUrl> --rate 100 --queues 10 --probe-min 100 --probe-max 200
//     A steady workload: <rate> jobs/s added round-robin to queues load-0..load-<queues-1>, one
//     Worker each (concurrency 5, every 5th job fails, attempts 1, removeOnComplete/Fail
//     {count: 1000}); and queue "latency", whose Worker throws for every job, gets one job
//     every <probe-min>..<probe-max> ms once it reads "go" on stdin. Prints {"ready": true}
//     once the workload runs, {"thrown": {"id", "ms"}} right before each latency job throws
//     (Date.now(), the machine clock), and on "stop" {"summary": {...}}; exits when stdin closes.
//   node pg_load.mjs retry <postgresUrl> <queue>
//     Times BullMQ's own Queue.retryJobs({state: 'failed', count: 1000}) (SQL retry_jobs, in
//     batches of 1000 until none is left; counters reset) and prints {"retry": {"ms", "counts"}}.
//   node pg_load.mjs migrate <postgresUrl>
//     Migrates the schema (migrate: true) and exits: {"migrated": true}.
import { createRequire } from 'node:module';
import readline from 'node:readline';

// Resolved from tests/node, where bullmq and pg are installed.
const require = createRequire(new URL('../../tests/node/package.json', import.meta.url));
const { Queue, Worker } = require('bullmq');
const { createPostgresBackend } = require('bullmq/dist/cjs/postgres/index.js');

const [mode, url, ...rest] = process.argv.slice(2);
const connection = { connectionString: url, migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const arg = (name, dflt) => {
  const i = rest.indexOf(`--${name}`);
  return i >= 0 ? Number(rest[i + 1]) : dflt;
};

if (mode === 'migrate') {
  const q = new Queue('migrate-only', { connection }, createPostgresBackend);
  await q.waitUntilReady();
  emit({ migrated: true });
  process.exit(0);
} else if (mode === 'retry') {
  const q = new Queue(rest[0], { connection }, createPostgresBackend);
  await q.waitUntilReady();
  const before = await q.getJobCounts('failed', 'waiting');
  const t0 = performance.now();
  await q.retryJobs({ state: 'failed', count: 1000, timestamp: Date.now() });
  const ms = performance.now() - t0;
  emit({ retry: { ms, before, after: await q.getJobCounts('failed', 'waiting') } });
  process.exit(0);
} else if (mode === 'load') {
  const rate = arg('rate', 100);
  const nQueues = arg('queues', 10);
  const probeMin = arg('probe-min', 100);
  const probeMax = arg('probe-max', 200);
  const keep = { removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 }, attempts: 1 };
  const queues = [];
  const workers = [];
  for (let i = 0; i < nQueues; i++) {
    const name = `load-${i}`;
    queues.push(new Queue(name, { connection }, createPostgresBackend));
    workers.push(
      new Worker(
        name,
        async (job) => {
          if (job.data.n % 5 === 4) throw new Error(`load failure ${job.data.n}`);
          return job.data.n;
        },
        { connection, concurrency: 5 },
        createPostgresBackend,
      ),
    );
  }
  const latency = new Queue('latency', { connection }, createPostgresBackend);
  const thrown = [];
  let probesFailed = 0;
  const probeWorker = new Worker(
    'latency',
    async (job) => {
      const ms = Date.now();
      if (job.data.measured) {
        thrown.push(job.id);
        emit({ thrown: { id: job.id, ms } });
      }
      throw new Error(`latency probe ${job.data.seq}`);
    },
    { connection, concurrency: 1 },
    createPostgresBackend,
  );
  probeWorker.on('failed', (job) => {
    if (job.data.measured) probesFailed++;
  });
  for (const w of [...workers, probeWorker]) w.on('error', (err) => process.stderr.write(`worker: ${err.message}\n`));
  await latency.add('warm', { seq: -1, measured: false }, { attempts: 1 });

  let n = 0;
  let running = true;
  let lagging = 0;
  (async () => {
    const t0 = performance.now();
    while (running) {
      const due = t0 + (n * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      else lagging++;
      const q = queues[n % nQueues];
      q.add('load', { n }, keep).catch((err) => process.stderr.write(`add: ${err.message}\n`));
      n++;
    }
  })();
  await sleep(1000);
  emit({ ready: true, queues: queues.map((q) => q.name) });

  let probing = false;
  let seq = 0;
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', async (line) => {
    if (line === 'go' && !probing) {
      probing = true;
      while (probing) {
        await latency.add('probe', { seq: seq++, measured: true }, { attempts: 1 });
        await sleep(probeMin + Math.random() * (probeMax - probeMin));
      }
    } else if (line === 'stop') {
      probing = false;
      const deadline = Date.now() + 10_000;
      while (probesFailed < seq && Date.now() < deadline) await sleep(20);
      emit({ summary: { probes: seq, probesFailed, added: n, lagging } });
    }
  });
  rl.on('close', async () => {
    running = false;
    probing = false;
    await Promise.all([...workers, probeWorker].map((w) => w.close()));
    process.exit(0);
  });
} else {
  process.stderr.write('usage: node pg_load.mjs load|retry|migrate <postgresUrl> …\n');
  process.exit(64);
}
