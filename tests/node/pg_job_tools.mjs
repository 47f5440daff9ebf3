// Real Node BullMQ 6.7 on PostgreSQL beside the job tools and the deduplication page.
//
// Usage: node pg_job_tools.mjs <mode> <postgresUrl> <queue> [json]
//   add    adds the jobs of <json> ([{name, data, opts}]) and prints {"ids": [...]} (a
//          deduplicated add prints the id of the job holding the deduplication id)
//   run    a worker (concurrency 1) runs <json>.count jobs; prints {"order": [{id, priority, processedOn}]}
//   job    prints the job <json>.id as Node reads it: {state, failedReason, attemptsMade, priority, delay}
//   owner  prints {"id": getDeduplicationJobId(<json>.dedupId)}
import { Job, Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';

const [mode, url, name, arg] = process.argv.slice(2);
const given = arg ? JSON.parse(arg) : {};
const connection = { connectionString: url, migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const watchdog = setTimeout(() => {
  process.stderr.write(`pg_job_tools ${mode}: timed out\n`);
  process.exit(70);
}, 60_000);
const queue = new Queue(name, { connection }, createPostgresBackend);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

if (mode === 'add') {
  const ids = [];
  for (const j of given) ids.push((await queue.add(j.name || 'job', j.data || {}, j.opts || {})).id);
  out({ ids });
} else if (mode === 'run') {
  const order = [];
  const worker = new Worker(
    name,
    async (job) => {
      order.push({ id: job.id, priority: job.priority, processedOn: job.processedOn });
      return 'ok';
    },
    { connection, concurrency: 1 },
    createPostgresBackend,
  );
  const deadline = Date.now() + (given.timeoutMs || 20000);
  while (order.length < given.count && Date.now() < deadline) await sleep(20);
  await worker.close();
  out({ order });
} else if (mode === 'job') {
  const job = await Job.fromId(queue, given.id);
  out(job ? { state: await job.getState(), failedReason: job.failedReason, attemptsMade: job.attemptsMade,
    priority: job.priority, delay: job.delay } : { missing: true });
} else if (mode === 'owner') {
  out({ id: await queue.getDeduplicationJobId(given.dedupId) });
} else {
  throw new Error(`unknown mode ${mode}`);
}
clearTimeout(watchdog);
await queue.close();
process.exit(0);
