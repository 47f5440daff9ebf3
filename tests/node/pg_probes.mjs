// Real Node BullMQ 6.7 on PostgreSQL for the probe, worker and alert tests.
//
// Usage:
//   node pg_probes.mjs stall <postgresUrl> <queue>
//     Adds "stuck-1", "stuck-2" (taken by a worker whose process then exits, so their
//     locks lapse after 1.5 s), "retry-me" (fails twice, then completes: 3 attempts, no
//     backoff), "dead" (fails its only attempt), 3 waiting jobs added after the worker left,
//     and 1 delayed job already due (delay 1 ms, nobody promotes it). Prints one JSON line:
//     {"stuck": [ids], "retried": id, "dead": id, "counts": getJobCounts(),
//      "jobs": {id: {attemptsMade, attemptsStarted, stalledCounter, finishedOn, processedOn}}}
//   node pg_probes.mjs schedulers <postgresUrl> <queue>
//     Upserts "every-minute" (every 60 s), "new-year" (cron "0 0 1 1 *", tz UTC) and "once"
//     (every 1 s, limit 1), lets a worker take the one run "once" has (it then is finished),
//     and prints {"schedulers": getJobSchedulers()} (all of them, soonest first).
//   node pg_probes.mjs retries <postgresUrl> <queue> <count>
//     <count> jobs (attempts 3, no backoff) whose first two attempts fail and the third
//     completes, run by one worker; prints {"counts": getJobCounts()} once all completed.
//   node pg_probes.mjs events <postgresUrl> <queue> <maxLen> <jobs>
//     A queue made with `streams: {events: {maxLen}}` gets <jobs> jobs (addBulk, 1000 at a
//     time); prints {"counts": getJobCounts()}.
//   node pg_probes.mjs serve <postgresUrl> <queue>
//     Starts an unnamed worker and one named "alpha" on <queue> (autorun off: they hold their
//     connections without taking jobs), prints {"workers": getWorkers().length} once both are
//     listed, and closes them when its stdin closes.
import { Queue, Worker } from 'bullmq';
import { createPostgresBackend } from 'bullmq/dist/cjs/postgres/index.js';

const [mode, url, name] = process.argv.slice(2);
const connection = { connectionString: url, migrate: true };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const watchdog = setTimeout(() => {
  process.stderr.write('pg_probes: timed out\n');
  process.exit(70);
}, 60_000);
const maxLen = mode === 'events' ? Number(process.argv[5]) : undefined;
const queue = new Queue(
  name,
  maxLen === undefined ? { connection } : { connection, streams: { events: { maxLen } } },
  createPostgresBackend,
);

if (mode === 'stall') {
  const retried = await queue.add('retry-me', { n: 1 }, { attempts: 3 });
  const dead = await queue.add('dead', { n: 2 }, { attempts: 1 });
  const done = new Set();
  const finisher = new Worker(
    name,
    async (job) => {
      if (job.name === 'dead' || job.attemptsMade < 2) throw new Error(`attempt ${job.attemptsMade + 1} failed`);
      return 'ok';
    },
    { connection, concurrency: 1 },
    createPostgresBackend,
  );
  finisher.on('completed', (job) => done.add(job.id));
  finisher.on('failed', (job) => {
    if (job.attemptsMade >= (job.opts.attempts || 1)) done.add(job.id);
  });
  while (done.size < 2) await sleep(20);
  await finisher.close();

  const stuck = [await queue.add('stuck-1', { n: 3 }), await queue.add('stuck-2', { n: 4 })];
  let taken = 0;
  const holder = new Worker(
    name,
    async () => {
      taken++;
      await new Promise(() => {});
    },
    { connection, concurrency: 2, lockDuration: 1500, stalledInterval: 3_600_000 },
    createPostgresBackend,
  );
  while (taken < 2) await sleep(20);
  for (let i = 0; i < 3; i++) await queue.add('waiting', { i });
  await queue.add('due', { n: 5 }, { delay: 1 });
  const jobs = {};
  for (const id of [retried.id, dead.id, ...stuck.map((j) => j.id)]) {
    const j = await queue.getJob(id);
    jobs[id] = {
      attemptsMade: j.attemptsMade,
      attemptsStarted: j.attemptsStarted,
      stalledCounter: j.stalledCounter,
      finishedOn: j.finishedOn ?? null,
      processedOn: j.processedOn ?? null,
    };
  }
  const counts = await queue.getJobCounts();
  clearTimeout(watchdog);
  process.stdout.write(
    JSON.stringify({ stuck: stuck.map((j) => j.id), retried: retried.id, dead: dead.id, counts, jobs }) + '\n',
  );
  void holder;
  process.exit(0); // the holder never extends its locks again
} else if (mode === 'schedulers') {
  await queue.upsertJobScheduler('every-minute', { every: 60_000 }, { name: 'tick', data: { k: 1 } });
  await queue.upsertJobScheduler('new-year', { pattern: '0 0 1 1 *', tz: 'UTC' }, { name: 'greet' });
  await queue.upsertJobScheduler('once', { every: 1000, limit: 1 }, { name: 'one-off' });
  let ran = 0;
  const worker = new Worker(
    name,
    async (job) => {
      if (job.name === 'one-off') ran++;
    },
    { connection },
    createPostgresBackend,
  );
  while (ran < 1) await sleep(20);
  await sleep(300); // the iteration finished: BullMQ made no next one (limit 1)
  await worker.close();
  const schedulers = await queue.getJobSchedulers(0, -1, true);
  clearTimeout(watchdog);
  process.stdout.write(JSON.stringify({ schedulers }) + '\n');
  process.exit(0);
} else if (mode === 'retries') {
  const total = Number(process.argv[5]);
  let completed = 0;
  const worker = new Worker(
    name,
    async (job) => {
      if (job.attemptsMade < 2) throw new Error(`attempt ${job.attemptsMade + 1} failed`);
      return 'ok';
    },
    { connection, concurrency: 2 },
    createPostgresBackend,
  );
  worker.on('completed', () => completed++);
  for (let i = 0; i < total; i++) await queue.add('flaky', { i }, { attempts: 3 });
  while (completed < total) await sleep(20);
  await worker.close();
  clearTimeout(watchdog);
  process.stdout.write(JSON.stringify({ counts: await queue.getJobCounts() }) + '\n');
  process.exit(0);
} else if (mode === 'events') {
  const total = Number(process.argv[6]);
  for (let start = 0; start < total; start += 1000) {
    const n = Math.min(1000, total - start);
    await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'e', data: { i: start + i } })));
  }
  const counts = await queue.getJobCounts();
  clearTimeout(watchdog);
  process.stdout.write(JSON.stringify({ counts }) + '\n');
  process.exit(0);
} else if (mode === 'serve') {
  const opts = { connection, autorun: false };
  const workers = [
    new Worker(name, async () => {}, opts, createPostgresBackend),
    new Worker(name, async () => {}, { ...opts, name: 'alpha' }, createPostgresBackend),
  ];
  for (const w of workers) await w.waitUntilReady();
  let listed = 0;
  while ((listed = (await queue.getWorkers()).length) < 2) await sleep(50);
  clearTimeout(watchdog);
  process.stdout.write(JSON.stringify({ workers: listed }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', async () => {
    for (const w of workers) await w.close();
    await queue.close();
    process.exit(0);
  });
} else {
  process.stderr.write('usage: node pg_probes.mjs stall|serve <postgresUrl> <queue>\n');
  process.exit(64);
}
