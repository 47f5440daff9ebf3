// Queue figures as Node BullMQ 6.7 reports them (the truth Queuewatch's figures are tested against).
//
// Usage: node figures.mjs [--prefix=<prefix>] <redisUrl> <queue> <mode>
//   (a redis+cluster:// URL too, with a {hash-tagged} prefix: connection.mjs)
//   priorities: adds 4 jobs without priority and 3, 2 and 1 jobs of priorities 1, 5 and 1000, sets
//     a global concurrency of 2 and a global rate limit of 5 per minute, starts a worker of
//     concurrency 5 whose jobs never finish, and once 2 are active prints
//     {counts: getCountsPerPriority([0, 1, 5, 1000, 7]), concurrency, maxed, active, limiter, ttl}
//     and exits without closing (the active jobs stay active).
//   metrics: a worker with metrics {maxDataPoints: 100} finishes jobs across four minutes of a
//     clock moved back (Date.now, which BullMQ passes to its scripts, starts 4 minutes ago):
//     3 completed in the first minute, 2 completed and 1 failed two minutes later, 1 completed the
//     next minute and 1 in the current one. Prints {completed, failed}: Queue.getMetrics of each.
//   held: adds a job, runs a worker for 1.5 s and prints {ttl: getRateLimitTtl(), completed:
//     getCompletedCount()}: whether a rate limit set by hand holds Node's workers.
//   job67: a job with deduplication (ttl 60 s), keepLogs, telemetry metadata and progress 42; a flow
//     whose child has failParentOnFailure; a job scheduler's first iteration. Prints the ids,
//     Node's Job.opts of the first job and of the child (optsFromJSON), and getDeduplicationJobId.
import { FlowProducer, Job, Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { connectionFromUrl, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [redisUrl, name, mode]] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(name, { connection, prefix });

async function until(check) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error('timed out');
}

if (mode === 'priorities') {
  for (let i = 0; i < 4; i++) await queue.add('plain', { i });
  for (const [priority, n] of [[1, 3], [5, 2], [1000, 1]]) {
    for (let i = 0; i < n; i++) await queue.add('urgent', { i }, { priority });
  }
  await queue.setGlobalConcurrency(2);
  await queue.setGlobalRateLimit(5, 60000);
  const worker = new Worker(name, () => new Promise(() => {}), { connection, prefix, concurrency: 5 });
  await until(async () => (await queue.getActiveCount()) === 2);
  await sleep(200); // let the worker's other slots try (and be refused: maxed)
  const client = connection instanceof IORedis.Cluster ? connection : new IORedis(connection);
  const out = {
    counts: await queue.getCountsPerPriority([0, 1, 5, 1000, 7]),
    concurrency: await queue.getGlobalConcurrency(),
    active: await queue.getActiveCount(),
    limiter: Number(await client.get(`${prefix}:${name}:limiter`)),
    ttl: await client.pttl(`${prefix}:${name}:limiter`),
    rateLimitTtl: await queue.getRateLimitTtl(5),
  };
  console.log(JSON.stringify(out));
  process.exit(0);
  void worker;
} else if (mode === 'held') {
  await queue.add('held', {});
  const worker = new Worker(name, async () => 'ok', { connection, prefix });
  await sleep(1500);
  const out = { ttl: await queue.getRateLimitTtl(), completed: await queue.getCompletedCount() };
  await worker.close(true);
  await queue.close();
  console.log(JSON.stringify(out));
  process.exit(0);
} else if (mode === 'job67') {
  const owner = await queue.add('owned', { n: 1 }, {
    deduplication: { id: 'd1', ttl: 60000 },
    keepLogs: 5,
    attempts: 2,
    telemetry: { metadata: '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}' },
  });
  await owner.updateProgress(42);
  const flows = new FlowProducer({ connection, prefix });
  const flow = await flows.add({
    name: 'parent', queueName: name, data: {},
    children: [{ name: 'child', queueName: name, data: {}, opts: { failParentOnFailure: true } }],
  });
  const iteration = await queue.upsertJobScheduler('every-min', { every: 60000 }, { name: 'tick' });
  const child = flow.children[0].job;
  const out = {
    owner: owner.id,
    parent: flow.job.id,
    child: child.id,
    iteration: iteration.id,
    ownerOpts: (await Job.fromId(queue, owner.id)).opts,
    childOpts: (await Job.fromId(queue, child.id)).opts,
    dedupOwner: await queue.getDeduplicationJobId('d1'),
  };
  await flows.close();
  await queue.close();
  console.log(JSON.stringify(out));
  process.exit(0);
} else if (mode === 'metrics') {
  const realNow = Date.now.bind(Date);
  const start = Math.floor(realNow() / 60000) * 60000 - 4 * 60000;
  let fake = start + 5000;
  Date.now = () => fake;
  const worker = new Worker(name, async job => {
    if (job.data.fail) throw new Error('boom');
    return 'ok';
  }, { connection, prefix, metrics: { maxDataPoints: 100 } });
  let finished = 0;
  worker.on('completed', () => finished++);
  worker.on('failed', () => finished++);
  async function batch(minute, jobs) {
    fake = start + minute * 60000 + 5000;
    const target = finished + jobs.length;
    for (const data of jobs) await queue.add('m', data);
    await until(() => finished >= target);
  }
  await batch(0, [{}, {}, {}]);
  await batch(2, [{}, {}, { fail: true }]);
  await batch(3, [{}]);
  Date.now = realNow;
  fake = realNow();
  await batch(4, [{}]);
  const out = { completed: await queue.getMetrics('completed'), failed: await queue.getMetrics('failed') };
  await worker.close();
  await queue.close();
  console.log(JSON.stringify(out));
  process.exit(0);
}
