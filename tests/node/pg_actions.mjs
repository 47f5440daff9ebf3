// Real Node BullMQ 6.7 on PostgreSQL around the dashboard's actions.
//
// Usage: node pg_actions.mjs <mode> <postgresUrl> <queue>
//   seed   one job failed (attempts 1) and one completed by a worker, one delayed an hour, and
//          prints {"failed": id, "completed": id, "delayed": id, "counts": getJobCounts()}
//   counts prints {"counts": getJobCounts(), "paused": isPaused()}
//   work   runs a worker until no job is waiting, then prints {"counts": …, "done": [ids]}
//   hold   adds one job, a worker takes it and keeps it active (its lock renewed) until a line
//          arrives on stdin; prints HELD <id> once it is active, then {"counts": …} at the end
import { Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';
import { createInterface } from 'node:readline';

const [mode, url, name] = process.argv.slice(2);
const connection = { connectionString: url, migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const watchdog = setTimeout(() => {
  process.stderr.write(`pg_actions ${mode}: timed out\n`);
  process.exit(70);
}, 60_000);

const queue = new Queue(name, { connection }, createPostgresBackend);
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

async function settle(ids) {
  for (let i = 0; i < 500; i++) {
    const states = await Promise.all(ids.map((id) => queue.getJobState(id)));
    if (states.every((s) => s === 'completed' || s === 'failed')) return;
    await sleep(20);
  }
  throw new Error('jobs did not finish');
}

if (mode === 'seed') {
  const fail = await queue.add('boom', { n: 1 }, { attempts: 1 });
  const done = await queue.add('fine', { n: 2 }, { attempts: 1 });
  const worker = new Worker(
    name,
    async (job) => {
      if (job.name === 'boom') throw new Error('boom: on purpose');
      return { ok: true };
    },
    { connection },
    createPostgresBackend,
  );
  await settle([fail.id, done.id]);
  await worker.close();
  const delayed = await queue.add('later', { n: 3 }, { delay: 3_600_000 });
  out({ failed: fail.id, completed: done.id, delayed: delayed.id, counts: await queue.getJobCounts() });
} else if (mode === 'counts') {
  out({ counts: await queue.getJobCounts(), paused: await queue.isPaused() });
} else if (mode === 'work') {
  const done = [];
  const worker = new Worker(name, async (job) => ({ n: job.data.n }), { connection }, createPostgresBackend);
  worker.on('completed', (job) => done.push(job.id));
  for (;;) {
    const counts = await queue.getJobCounts();
    if (counts.waiting + counts.prioritized + counts.active === 0 && done.length > 0) break;
    await sleep(50);
  }
  await worker.close();
  out({ counts: await queue.getJobCounts(), done });
} else if (mode === 'hold') {
  let release;
  const released = new Promise((r) => (release = r));
  const worker = new Worker(
    name,
    async (job) => {
      process.stdout.write(`HELD ${job.id}\n`);
      await released;
      return { held: true };
    },
    { connection, lockDuration: 30_000 },
    createPostgresBackend,
  );
  createInterface({ input: process.stdin }).on('line', () => release());
  const job = await queue.add('held', { n: 4 });
  await released;
  await settle([job.id]);
  await worker.close();
  out({ counts: await queue.getJobCounts() });
} else {
  throw new Error(`unknown mode ${mode}`);
}
clearTimeout(watchdog);
await queue.close();
process.exit(0);
