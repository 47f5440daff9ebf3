// Build BullMQ 6.7 queues on PostgreSQL in every state, with the real Node
// library and its PostgreSQL backend, so Queuewatch's PostgreSQL reader is
// checked against what BullMQ itself writes and reports.
//
// Usage: node pg_fixture.mjs <postgresUrl>
//        node pg_fixture.mjs add <postgresUrl> <queue> <count>   (adds jobs, prints counts)
//
// Queues (schema "bullmq" unless said):
//   pg-mixed          waiting, prioritized, delayed, completed, failed and one
//                     job held active by a worker that never finishes it
//   pg-paused         waiting and prioritized jobs on a paused queue
//   tenant/a b·ü      a name with '/', a space and non-ASCII (Node refuses ':')
//   other-schema-q    in schema "other": a second BullMQ namespace
//
// On success the LAST line of stdout is one JSON object:
//   {"queues": [{"schema", "name", "counts", "allCounts", "paused",
//                "schedulers", "ids": {state: [ids in BullMQ's order]}}],
//                "newestFirst": {state: [ids, getJobs(state, 0, -1, false)]}}],
//    "jobs": {"<schema>/<queue>/<id>": job.toJSON() plus "state"}}
// "counts" is `getJobCounts()` (BullMQ's default types); "allCounts" also asks
// for 'paused', where this backend reports a paused queue's ready jobs.
//
// The process exits while the held job is still active (its lock is left to
// lapse), so the data stays as printed until somebody else moves it.

import { Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';

const adding = process.argv[2] === 'add';
const url = adding ? process.argv[3] : process.argv[2];
if (!url || process.argv.length !== (adding ? 6 : 3)) {
  process.stderr.write('usage: node pg_fixture.mjs [add] <postgresUrl> [<queue> <count>]\n');
  process.exit(64);
}
const connection = (schema) => ({ connectionString: url, schema, migrate: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const HOUR = 60 * 60 * 1000;
const STATES = ['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed', 'waiting-children'];
const ALL_COUNTS = ['active', 'completed', 'delayed', 'failed', 'paused', 'prioritized', 'waiting', 'waiting-children'];
const watchdog = setTimeout(() => {
  process.stderr.write('pg_fixture: timed out\n');
  process.exit(70);
}, 60_000);

const closables = [];
function queueOn(schema, name) {
  const q = new Queue(name, { connection: connection(schema) }, createPostgresBackend);
  closables.push(q);
  return q;
}

async function finishSome(queue, jobs) {
  // Jobs named "ok" complete, "boom" fail (one attempt): a concurrency-1
  // worker, closed once they are all done.
  for (const [name, data, opts] of jobs) await queue.add(name, data, opts);
  const done = new Set();
  const worker = new Worker(
    queue.name,
    async (job) => {
      await sleep(3); // distinct finish times: "newest first" has one answer
      if (job.name === 'boom') throw new Error(`boom: ${job.data.why}\nsecond line of the reason`);
      return { doubled: job.data.n * 2, token: 'returned-secret' };
    },
    { connection: connection('bullmq'), concurrency: 1 },
    createPostgresBackend,
  );
  worker.on('completed', (job) => done.add(job.id));
  worker.on('failed', (job) => done.add(job.id));
  while (done.size < jobs.length) await sleep(20);
  await worker.close();
}

async function holdOneActive(queue) {
  // A worker that takes "hold" and never finishes it: the job stays active.
  await queue.add('hold', { n: 0 });
  let taken = false;
  const worker = new Worker(
    queue.name,
    async () => {
      taken = true;
      await new Promise(() => {});
    },
    { connection: connection('bullmq'), concurrency: 1, lockDuration: HOUR },
    createPostgresBackend,
  );
  while (!taken) await sleep(20);
  return worker; // never closed: closing would wait for the job
}

async function describe(schema, queue) {
  const ids = {};
  const newestFirst = {};
  for (const state of STATES) {
    ids[state] = (await queue.getJobs([state], 0, -1, true)).filter(Boolean).map((j) => j.id);
    newestFirst[state] = (await queue.getJobs([state], 0, -1, false)).filter(Boolean).map((j) => j.id);
  }
  return {
    schema,
    name: queue.name,
    counts: await queue.getJobCounts(),
    allCounts: await queue.getJobCounts(...ALL_COUNTS),
    paused: await queue.isPaused(),
    schedulers: await queue.getJobSchedulersCount(),
    ids,
    newestFirst,
  };
}

if (adding) {
  const queue = queueOn('bullmq', process.argv[4]);
  for (let i = 0; i < Number(process.argv[5]); i++) await queue.add('added', { i });
  clearTimeout(watchdog);
  process.stdout.write(JSON.stringify({ counts: await queue.getJobCounts() }) + '\n');
  process.exit(0);
}

const mixed = queueOn('bullmq', 'pg-mixed');
await finishSome(mixed, [
  ['ok', { n: 1 }],
  ['boom', { why: 'first', password: 'hunter2' }],
  ['ok', { n: 2 }],
  ['boom', { why: 'second' }],
  ['ok', { n: 3 }],
]);
const holder = await holdOneActive(mixed);
await mixed.add('wait-a', { n: 10, apiKey: 'sk-live-123', big: 'x'.repeat(5000) });
await mixed.add('wait-b', { n: 11 });
await mixed.add('wait-lifo', { n: 12 }, { lifo: true });
await mixed.add('prio-5', { n: 20 }, { priority: 5 });
await mixed.add('prio-1', { n: 21 }, { priority: 1 });
await mixed.add('prio-5b', { n: 22 }, { priority: 5 });
await mixed.add('later-2h', { n: 30 }, { delay: 2 * HOUR });
await mixed.add('later-1h', { n: 31 }, { delay: HOUR, attempts: 4 });
await mixed.add('custom', { n: 40 }, { jobId: 'custom-id/with slash' });

const paused = queueOn('bullmq', 'pg-paused');
await paused.pause();
await paused.add('p1', { n: 1 });
await paused.add('p2', { n: 2 });
await paused.add('p-prio', { n: 3 }, { priority: 2 });
await paused.add('p-later', { n: 4 }, { delay: HOUR });

const odd = queueOn('bullmq', 'tenant/a b·ü');
await odd.add('odd', { n: 1 });

const other = queueOn('other', 'other-schema-q');
await other.add('elsewhere', { n: 1 });
await other.add('elsewhere', { n: 2 }, { delay: HOUR });

const described = [];
for (const [schema, q] of [['bullmq', mixed], ['bullmq', paused], ['bullmq', odd], ['other', other]]) {
  described.push(await describe(schema, q));
}
const jobs = {};
for (const d of described) {
  const q = closables.find((c) => c.name === d.name);
  for (const state of STATES) {
    for (const id of d.ids[state]) {
      const job = await q.getJob(id);
      jobs[`${d.schema}/${d.name}/${id}`] = { ...job.toJSON(), state: await job.getState() };
    }
  }
}

clearTimeout(watchdog);
process.stdout.write(JSON.stringify({ queues: described, jobs }) + '\n');
// The held job stays active: leave without closing its worker (or the queues,
// whose close would wait on nothing but costs time).
void holder;
process.exit(0);
