// Build a set of BullMQ 6 queues in every interesting state, using the real
// Node library, so Queuewatch tests read data written by the real thing
// rather than by our own idea of the Redis layout.
//
// Usage: node build_fixture.mjs <redisUrl>
//
// The Redis must not already hold the fixture queues (tests start a private
// redis-server, or FLUSHDB before calling this). On success the LAST line of
// stdout is one JSON object:
//
//   {"queues": [{"prefix", "name", "counts", "paused", "schedulers"}, ...],
//    "jobs": {"<prefix>/<queue>/<id>": {"name", "data", "progress",
//             "returnvalue", "failedReason", "attemptsMade", "stacktrace",
//             "logs"}, ...}}
//
// "counts" is `queue.getJobCounts()` with BullMQ's default types (active,
// completed, delayed, failed, prioritized, waiting, waiting-children), as
// Node reports them; "jobs" holds every failed and every completed job.
// Everything else (progress notes, BullMQ warnings) goes to stderr.
//
// Determinism: jobs are added one at a time in a fixed order, so the
// auto-increment ids are stable between runs; jobs that must end up finished
// are processed by a concurrency-1 worker which is closed before the jobs
// that must stay waiting/delayed/prioritized are added. The only
// time-dependent things are timestamps and the job-scheduler iteration ids
// (`repeat:<schedulerId>:<millis>`).

import { FlowProducer, Queue, UnrecoverableError, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const HOUR = 60 * 60 * 1000;
const WATCHDOG_MS = 60_000;

// Hostile strings for the dashboard's HTML-escaping tests.
const XSS_SCRIPT = '<script>alert(1)</script>';
const XSS_IMG = '<img src=x onerror=alert(2)>';

// Every queue the fixture creates, in output order.
const QUEUES = [
  { prefix: 'bull', name: 'mixed' },
  { prefix: 'bull', name: 'paused-q' },
  { prefix: 'bull', name: 'flows' },
  { prefix: 'bull', name: 'dedup' },
  { prefix: 'bull', name: 'sched' },
  // A prefix with braces (Redis Cluster hash tag) and a colon: the dashboard
  // must not find queue names by splitting keys on ':'.
  { prefix: '{app:bull}', name: 'custom' },
  { prefix: 'bull', name: 'stacky' },
];

const redisUrl = process.argv[2];
if (!redisUrl || process.argv.length > 3) {
  process.stderr.write('usage: node build_fixture.mjs <redisUrl>\n');
  process.exit(64);
}
const connection = connectionFromUrl(redisUrl);

// Everything we open, so that it can all be closed (node must exit by itself).
const closables = [];

function openQueue(prefix, name) {
  const queue = new Queue(name, { connection, prefix });
  queue.on('error', err => log(`queue ${prefix}/${name} error:`, err.stack));
  closables.push(queue);
  return queue;
}

/**
 * Run a concurrency-1 worker on `queue` until the queue holds exactly the
 * expected number of completed and failed jobs and nothing is left to do
 * (retries with backoff sit in `delayed` for a moment, so wait for those
 * too), then close it.
 */
async function drainWithWorker(queue, processor, expected) {
  const worker = new Worker(queue.name, processor, {
    connection,
    prefix: queue.opts.prefix,
    concurrency: 1,
    name: 'fixture-worker', // stored as the job's `pb` (processedBy) field
  });
  // An EventEmitter 'error' with no listener would crash the process.
  worker.on('error', err => log(`worker ${queue.name} error:`, err.stack));

  const deadline = Date.now() + 15_000;
  for (;;) {
    const c = await queue.getJobCounts();
    const settled =
      c.completed === expected.completed &&
      c.failed === expected.failed &&
      c.active === 0 &&
      c.delayed === 0 &&
      c.waiting === 0 &&
      c.prioritized === 0;
    if (settled) break;
    if (Date.now() > deadline) {
      throw new Error(`worker on ${queue.name} did not settle: ${JSON.stringify(c)}`);
    }
    await sleep(20);
  }
  await worker.close();
}

/** Refuse to run on top of an earlier fixture: ids would not be stable. */
async function assertFresh() {
  const client = new IORedis({ ...connection, lazyConnect: true });
  try {
    await client.connect();
    for (const { prefix, name } of QUEUES) {
      const existing = await client.exists(`${prefix}:${name}:meta`, `${prefix}:${name}:id`);
      if (existing) {
        throw new Error(
          `queue ${prefix}:${name} already exists in ${redisUrl}; ` +
            'the fixture needs a fresh database (FLUSHDB first)',
        );
      }
    }
  } finally {
    client.disconnect();
  }
}

// ---------------------------------------------------------------- mixed ----
// Every job state in one queue, plus the job-level details the dashboard
// shows: return values, failedReason on a completed job, 2-entry stack
// traces, logs, progress, ids containing ':' and non-ASCII.
async function buildMixed() {
  const queue = openQueue('bull', 'mixed');

  // Phase 1: jobs that must end up completed or failed.
  // Node only accepts custom ids with ':' when they have exactly 3 segments.
  await queue.add('work', { n: 0 }, { jobId: 'order:eu:42' });
  for (let n = 1; n <= 5; n++) await queue.add('work', { n });
  // Fails on its first attempt, succeeds on the second: a *completed* job
  // that still carries `failedReason` and a 1-entry stacktrace.
  await queue.add('flaky', { n: 6 }, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
  // Always throw: two attempts each, so stacktrace has 2 entries.
  for (let n = 1; n <= 3; n++) {
    await queue.add('doomed', { n }, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
  }
  // UnrecoverableError skips the remaining attempts: attemptsMade stays 1.
  await queue.add('fatal', { input: 'bad' }, { attempts: 3, backoff: { type: 'fixed', delay: 10 } });

  await drainWithWorker(
    queue,
    async job => {
      switch (job.name) {
        case 'work':
          if (job.data.n === 0) {
            await job.log('step 1: validated order');
            await job.log('step 2: charged card');
            await job.updateProgress(50);
          }
          return { ok: true, n: job.data.n };
        case 'flaky':
          if (job.attemptsMade === 0) throw new Error('flaky: transient glitch');
          return { ok: true, n: job.data.n, recovered: true };
        case 'doomed':
          throw new Error(`boom ${job.data.n}`);
        case 'fatal':
          throw new UnrecoverableError('fatal: bad input');
        default:
          throw new Error(`unexpected job ${job.name}`);
      }
    },
    { completed: 7, failed: 4 },
  );

  // Phase 2: the worker is closed, so these stay where they are put.
  await queue.add('wait', { n: 1 });
  await queue.add('wait', { n: 2 });
  await queue.add('wait', { n: 3 }, { jobId: 'order:us:7' });
  await queue.add('wait', { n: 4, text: 'ünïcode ジョブ' }, { jobId: 'ünïcode-ジョブ' });
  await queue.add('wait', { n: 5 });
  for (let n = 1; n <= 3; n++) await queue.add('later', { n }, { delay: HOUR });
  for (const priority of [1, 5, 10, 100]) {
    await queue.add('prio', { priority }, { priority });
  }
  return queue;
}

// ------------------------------------------------------------- paused-q ----
// In BullMQ 6 a paused queue keeps its jobs in `wait`; only meta.paused is set.
async function buildPaused() {
  const queue = openQueue('bull', 'paused-q');
  await queue.pause();
  for (let n = 1; n <= 3; n++) await queue.add('held', { n });
  return queue;
}

// ---------------------------------------------------------------- flows ----
// Parent in waiting-children, both children waiting (no worker runs).
// Explicit ids: 6.x would otherwise give flow nodes random UUIDs.
async function buildFlows() {
  const queue = openQueue('bull', 'flows');
  const flowProducer = new FlowProducer({ connection, prefix: 'bull' });
  flowProducer.on('error', err => log('flow producer error:', err.stack));
  closables.push(flowProducer);
  await flowProducer.add({
    name: 'parent',
    queueName: 'flows',
    data: { kind: 'report' },
    opts: { jobId: 'flow-parent' },
    children: [
      { name: 'child', queueName: 'flows', data: { part: 1 }, opts: { jobId: 'flow-child-1' } },
      { name: 'child', queueName: 'flows', data: { part: 2 }, opts: { jobId: 'flow-child-2' } },
    ],
  });
  return queue;
}

// ---------------------------------------------------------------- dedup ----
// Three adds with one deduplication id -> one job (and a `de:same` key);
// the same custom jobId twice -> one job (the second add is a `duplicated`
// no-op). So the queue holds exactly 2 waiting jobs.
async function buildDedup() {
  const queue = openQueue('bull', 'dedup');
  for (let n = 1; n <= 3; n++) {
    await queue.add('deduped', { n }, { deduplication: { id: 'same' } });
  }
  await queue.add('custom-id', { n: 1 }, { jobId: 'only-once' });
  await queue.add('custom-id', { n: 2 }, { jobId: 'only-once' });
  return queue;
}

// ---------------------------------------------------------------- sched ----
// Two job schedulers (6.x replacement for repeatable jobs). Each gets one
// pending iteration job `repeat:<schedulerId>:<millis>`.
async function buildSched() {
  const queue = openQueue('bull', 'sched');
  await queue.upsertJobScheduler(
    'cron-berlin',
    { pattern: '0 */5 * * * *', tz: 'Europe/Berlin' },
    { name: 'cron-job', data: { kind: 'cron' } },
  );
  await queue.upsertJobScheduler(
    'every-minute',
    { every: 60_000 },
    { name: 'tick', data: { kind: 'every' } },
  );
  return queue;
}

// --------------------------------------------------------------- custom ----
async function buildCustomPrefix() {
  const queue = openQueue('{app:bull}', 'custom');
  await queue.add('will-fail', { n: 0 });
  await drainWithWorker(
    queue,
    async () => {
      throw new Error('custom prefix failure');
    },
    { completed: 0, failed: 1 },
  );
  await queue.add('custom-wait', { n: 1 });
  await queue.add('custom-wait', { n: 2 });
  return queue;
}

// --------------------------------------------------------------- stacky ----
// A failed job whose name, data, message and stack trace are hostile HTML:
// the dashboard must escape all of them.
async function buildStacky() {
  const queue = openQueue('bull', 'stacky');
  await queue.add('<b>bold</b>', { html: `${XSS_SCRIPT} & "quotes" 'single'` });
  await drainWithWorker(
    queue,
    async () => {
      const err = new Error(`${XSS_SCRIPT} ${XSS_IMG}`);
      // BullMQ stores err.stack verbatim; put markup in a frame line too.
      err.stack += `\n    at ${XSS_IMG} (file:///evil/<script>.js:1:1)`;
      throw err;
    },
    { completed: 0, failed: 1 },
  );
  return queue;
}

// --------------------------------------------------------------- report ----
function describeJob(job, logs) {
  return {
    name: job.name,
    data: job.data,
    progress: job.progress,
    returnvalue: job.returnvalue ?? null,
    failedReason: job.failedReason ?? null,
    attemptsMade: job.attemptsMade,
    stacktrace: job.stacktrace ?? [],
    logs,
  };
}

async function summarize(queues) {
  const summary = { queues: [], jobs: {} };
  for (const queue of queues) {
    const prefix = queue.opts.prefix;
    summary.queues.push({
      prefix,
      name: queue.name,
      counts: await queue.getJobCounts(),
      paused: await queue.isPaused(),
      schedulers: await queue.getJobSchedulersCount(),
    });
    // Every finished job; the order of keys in "jobs" carries no meaning.
    const finished = [...(await queue.getCompleted()), ...(await queue.getFailed())];
    for (const job of finished) {
      const { logs } = await queue.getJobLogs(job.id, 0, -1, true);
      summary.jobs[`${prefix}/${queue.name}/${job.id}`] = describeJob(job, logs);
    }
  }
  return summary;
}

async function main() {
  const started = Date.now();
  // Fail loudly instead of hanging a test run; unref'd so it never keeps
  // node alive on its own.
  setTimeout(() => {
    log(`gave up after ${WATCHDOG_MS} ms`);
    process.exit(2);
  }, WATCHDOG_MS).unref();

  await assertFresh();
  const queues = [];
  try {
    queues.push(await buildMixed());
    queues.push(await buildPaused());
    queues.push(await buildFlows());
    queues.push(await buildDedup());
    queues.push(await buildSched());
    queues.push(await buildCustomPrefix());
    queues.push(await buildStacky());
    const summary = await summarize(queues);
    log(`built ${queues.length} queues in ${Date.now() - started} ms`);
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } finally {
    await Promise.all(closables.map(c => c.close()));
  }
}

main().catch(err => {
  log('failed:', err.stack);
  process.exit(1);
});
