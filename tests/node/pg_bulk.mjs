// Real Node BullMQ 6.7 on PostgreSQL around the dashboard's queue maintenance, redrive and bulk tasks.
//
// Usage: node pg_bulk.mjs <mode> <postgresUrl> <queue> [args…]
//   mix <failed> <completed>  jobs failed (attempts 1) and completed by a worker, then 3 waiting,
//                             2 prioritized and 2 delayed an hour (no worker left); prints
//                             {"counts": getJobCounts(), "failed": [ids]}
//   clean <state> <graceMs> <limit> <twin>   Queue.clean(grace, limit, state); prints {"removed": n,
//                             "counts", "twin": getJobCounts() of the queue <twin>}
//   drain <0|1> <twin>        Queue.drain(delayed); prints {"counts", "twin"}
//   obliterate                Queue.pause() then Queue.obliterate(); prints {"counts"}
//   pause                     Queue.pause(); prints {"counts"}
//   dlq <n> <source>          the source queue opened with one completed job, then n dead letters
//                             in <queue> (envelopes {"why", "data": {"i"}}), plus "order-7" with a
//                             priority and a deduplication id; prints {"ids": [...], "counts"}
//   flowfail <n> <children>   n plain jobs and <children> flow children (their parent in <queue>-parents,
//                             ignoreDependencyOnFailure) all failed by a worker (attempts 1); prints
//                             {"failed": [ids], "children": [ids], "parent": id}
//   counts                    prints {"counts": getJobCounts(), "paused": isPaused()}
//   work                      a worker runs until nothing is waiting; prints {"counts", "done": [ids], "data": {id: data}}
//   serve <n>                 a worker (every job succeeds) runs until it has completed n jobs, printing
//                             READY once it runs; then {"counts", "done": [ids in completion order]}
import { FlowProducer, Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';

const [mode, url, name, ...args] = process.argv.slice(2);
const connection = { connectionString: url, migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const watchdog = setTimeout(() => {
  process.stderr.write(`pg_bulk ${mode}: timed out\n`);
  process.exit(70);
}, 120_000);
const queue = new Queue(name, { connection }, createPostgresBackend);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
async function twinCounts(twinName) {
  const twin = new Queue(twinName, { connection }, createPostgresBackend);
  const counts = await twin.getJobCounts();
  await twin.close();
  return counts;
}

async function settled(q, n) {
  for (let i = 0; i < 3000; i++) {
    const c = await q.getJobCounts();
    if (c.completed + c.failed >= n) return;
    await sleep(20);
  }
  throw new Error('jobs did not finish');
}

if (mode === 'mix') {
  const [failed, completed] = args.map(Number);
  const failedJobs = await queue.addBulk(
    Array.from({ length: failed }, (_, i) => ({ name: 'boom', data: { i }, opts: { attempts: 1 } })),
  );
  await queue.addBulk(Array.from({ length: completed }, (_, i) => ({ name: 'fine', data: { i }, opts: { attempts: 1 } })));
  const worker = new Worker(
    name,
    async (job) => {
      if (job.name === 'boom') throw new Error(`boom ${job.data.i}`);
      return { ok: true };
    },
    { connection, concurrency: 20 },
    createPostgresBackend,
  );
  await settled(queue, failed + completed);
  await worker.close();
  for (let i = 0; i < 3; i++) await queue.add('later-plain', { i });
  for (let i = 0; i < 2; i++) await queue.add('later-urgent', { i }, { priority: 1 + i });
  for (let i = 0; i < 2; i++) await queue.add('later-delayed', { i }, { delay: 3_600_000 });
  out({ counts: await queue.getJobCounts(), failed: failedJobs.map((j) => j.id) });
} else if (mode === 'clean') {
  const [state, grace, limit, twin] = args;
  const removed = await queue.clean(Number(grace), Number(limit), state);
  out({ removed: removed.length, counts: await queue.getJobCounts(), twin: await twinCounts(twin) });
} else if (mode === 'drain') {
  await queue.drain(args[0] === '1');
  out({ counts: await queue.getJobCounts(), twin: await twinCounts(args[1]) });
} else if (mode === 'obliterate') {
  await queue.pause();
  await queue.obliterate();
  out({ counts: await queue.getJobCounts() });
} else if (mode === 'pause') {
  await queue.pause();
  out({ counts: await queue.getJobCounts() });
} else if (mode === 'dlq') {
  const [n, sourceName] = [Number(args[0]), args[1]];
  const source = new Queue(sourceName, { connection }, createPostgresBackend);
  await source.add('opener', {});
  const opener = new Worker(sourceName, async () => 'ok', { connection }, createPostgresBackend);
  await settled(source, 1);
  await opener.close();
  await source.close();
  const jobs = await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({ name: 'work', data: { why: 'dead letter', data: { i } } })),
  );
  const custom = await queue.add(
    'work',
    { why: 'dead letter', data: { i: -7 } },
    { jobId: 'order-7', priority: 4, deduplication: { id: 'dedup-7' } },
  );
  out({ ids: [...jobs.map((j) => j.id), custom.id], counts: await queue.getJobCounts() });
} else if (mode === 'flowfail') {
  const [plain, kids] = args.map(Number);
  const flows = new FlowProducer({ connection }, createPostgresBackend);
  const tree = await flows.add({
    name: 'parent',
    queueName: `${name}-parents`,
    children: Array.from({ length: kids }, (_, i) => ({
      name: 'boom',
      queueName: name,
      data: { child: i },
      opts: { attempts: 1, failParentOnFailure: true },
    })),
  });
  await flows.close();
  const jobs = await queue.addBulk(
    Array.from({ length: plain }, (_, i) => ({ name: 'boom', data: { i }, opts: { attempts: 1 } })),
  );
  const worker = new Worker(
    name,
    async (job) => {
      throw new Error(`boom ${job.id}`);
    },
    { connection, concurrency: 20 },
    createPostgresBackend,
  );
  await settled(queue, plain + kids);
  await worker.close();
  out({
    failed: [...tree.children.map((c) => c.job.id), ...jobs.map((j) => j.id)],
    children: tree.children.map((c) => c.job.id),
    parent: tree.job.id,
  });
} else if (mode === 'counts') {
  out({ counts: await queue.getJobCounts(), paused: await queue.isPaused() });
} else if (mode === 'work') {
  const done = [];
  const data = {};
  const worker = new Worker(
    name,
    async (job) => {
      data[job.id] = job.data;
      return { ok: true };
    },
    { connection, concurrency: 10 },
    createPostgresBackend,
  );
  worker.on('completed', (job) => done.push(job.id));
  for (;;) {
    const counts = await queue.getJobCounts();
    if (counts.waiting + counts.prioritized + counts.active === 0 && done.length > 0) break;
    await sleep(50);
  }
  await worker.close();
  out({ counts: await queue.getJobCounts(), done, data });
} else if (mode === 'serve') {
  const done = [];
  const worker = new Worker(name, async () => ({ ok: true }), { connection, concurrency: 5 }, createPostgresBackend);
  worker.on('completed', (job) => done.push(job.id));
  await worker.waitUntilReady();
  process.stdout.write('READY\n');
  while (done.length < Number(args[0])) await sleep(50);
  await worker.close();
  out({ counts: await queue.getJobCounts(), done });
} else {
  throw new Error(`unknown mode ${mode}`);
}
clearTimeout(watchdog);
await queue.close();
process.exit(0);
