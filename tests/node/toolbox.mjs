// Real Node BullMQ 6 for Queuewatch's toolbox tests (add, duplicate, edit-and-retry, queue
// settings, drain, obliterate, schedulers).
//
// Usage (each prints one JSON object on its last stdout line; a leading --prefix=<prefix> sets
// the BullMQ key prefix, default 'bull'):
//   node toolbox.mjs add <redisUrl> <queue> <jobsJson>
//       Queue.add each {name, data, opts} of the JSON list; prints {ids, hashes} (each job's hash)
//   node toolbox.mjs hashes <redisUrl> <queue> <idsJson>
//       prints {hashes: {id: raw hash}} as stored
//   node toolbox.mjs run <redisUrl> <queue> <count> <failFirst> [concurrency]
//       a worker that throws on a job's first <failFirst> attempts (data.fail overrides), until
//       <count> jobs finished for good; prints {jobs: {id: {name, data, opts, state, atm, order,
//       attempts: [processedOn...]}}, order: [ids in the order they were first taken]}
//   node toolbox.mjs promote <redisUrl> <queue> <idsJson>
//       Job.promote() each delayed job of the list (it becomes waiting now); prints {promotedAt}
//   node toolbox.mjs fail <redisUrl> <queue> <jobsJson>
//       add the jobs (as `add`) and fail each once for good (attempts 1); prints {ids}
//   node toolbox.mjs fill <redisUrl> <queue> <pausedFlag>
//       a queue with jobs in every state (2 waiting, 2 prioritized, 2 delayed, 1 completed,
//       1 failed, a scheduler, a deduplicated job), paused if <pausedFlag> is 1; prints {ids}
//   node toolbox.mjs dump <redisUrl> <queue>
//       every key of the queue with its type, sorted; prints {keys: {key: type}}
//   node toolbox.mjs drain|obliterate|resume <redisUrl> <queue> [delayedFlag]
//       Node's own Queue.drain(delayed) / Queue.obliterate() / Queue.resume(); prints {}
//   node toolbox.mjs throughput <redisUrl> <queue> <count> <ms>
//       <count> jobs processed by a worker with concurrency 10 taking <ms> each: prints
//       {maxActive, started: [ms since the first start]} (global concurrency and rate limit
//       are Redis settings the worker reads)
//   node toolbox.mjs schedule <redisUrl> <queue> <id> <repeatJson> <templateJson>
//       upsertJobScheduler(id, repeat, template); prints {scheduler, next: {id, delay, timestamp}}
//   node toolbox.mjs unschedule <redisUrl> <queue> <id>
//       Queue.removeJobScheduler(id); prints {removed}
//   node toolbox.mjs schedulers <redisUrl> <queue>
//       prints {schedulers: getJobSchedulers()} or {error: its message} (it throws on legacy entries)
//   node toolbox.mjs cron-next <redisUrl> <queue> <casesFile>
//       for each [pattern, tz, nowMs, startMs] of the JSON file, the next run as BullMQ's
//       defaultRepeatStrategy computes it with cron-parser; prints {next: [ms or error text]}

import { readFileSync } from 'node:fs';
import { Job, Queue, Worker } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import IORedis from 'ioredis';
import { connectionFromUrl, log, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [mode, redisUrl, queueName, a, b, c]] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);

const redis = new IORedis(connection);

async function hashes(queue, ids) {
  const out = {};
  for (const id of ids) out[id] = await redis.hgetall(`${prefix}:${queueName}:${id}`);
  return out;
}

async function run(count, failFirst, concurrency = 5) {
  const jobs = {};
  const order = [];
  let done = 0;
  const worker = new Worker(queueName, async job => {
    if (!jobs[job.id]) {
      order.push(job.id);
      jobs[job.id] = { name: job.name, data: job.data, opts: job.opts, attempts: [] };
    }
    jobs[job.id].attempts.push(job.processedOn);
    const failures = typeof job.data?.fail === 'number' ? job.data.fail : failFirst;
    if (job.attemptsMade < failures) throw new Error(`planned failure ${job.attemptsMade + 1}`);
    return { ok: true };
  }, { connection, prefix, concurrency, name: 'toolbox-test' });
  const finish = async (job, state) => {
    if (state === 'failed' && job.attemptsMade < (job.opts.attempts || 1)) return; // will be retried
    Object.assign(jobs[job.id], { state, atm: job.attemptsMade, finishedOn: job.finishedOn });
    done += 1;
  };
  worker.on('completed', job => finish(job, 'completed'));
  worker.on('failed', job => job && finish(job, 'failed'));
  worker.on('error', err => log(`worker error: ${err.message}`));
  while (done < count) await sleep(20);
  await worker.close();
  return { jobs, order };
}

async function dump() {
  const keys = {};
  for (const key of (await redis.keys(`${prefix}:${queueName}:*`)).sort()) {
    keys[key] = await redis.type(key);
  }
  return { keys };
}

async function main() {
  if (mode === 'dump') {
    // No Queue object here: BullMQ's Queue writes its meta hash when it connects, which would
    // put a key back into a queue that was just obliterated (a race the tests lost at times).
    const out = await dump();
    redis.disconnect();
    process.stdout.write(JSON.stringify(out) + '\n');
    return;
  }
  const queue = new Queue(queueName, { connection, prefix });
  await queue.waitUntilReady();
  let out = {};
  if (mode === 'add') {
    const ids = [];
    for (const spec of JSON.parse(a)) ids.push((await queue.add(spec.name, spec.data, spec.opts)).id);
    out = { ids, hashes: await hashes(queue, ids) };
  } else if (mode === 'promote') {
    for (const id of JSON.parse(a)) await (await Job.fromId(queue, id)).promote();
    out = { promotedAt: Date.now() };
  } else if (mode === 'hashes') {
    out = { hashes: await hashes(queue, JSON.parse(a)) };
  } else if (mode === 'run') {
    out = await run(Number(a), Number(b), c ? Number(c) : 5);
  } else if (mode === 'fail') {
    const ids = [];
    for (const spec of JSON.parse(a)) ids.push((await queue.add(spec.name, spec.data, { ...spec.opts, attempts: 1 })).id);
    await run(ids.length, 1);
    out = { ids };
  } else if (mode === 'fill') {
    const ids = {};
    const add = async (key, name, opts = {}) => { (ids[key] ||= []).push((await queue.add(name, { key }, opts)).id); };
    await add('completed', 'c'); await add('failed', 'f');
    const worker = new Worker(queueName, async job => { if (job.name === 'f') throw new Error('boom'); },
                              { connection, prefix, concurrency: 2 });
    while ((await queue.getJobCounts('completed', 'failed')).failed < 1 ||
           (await queue.getJobCounts('completed')).completed < 1) await sleep(20);
    await worker.close();
    await add('waiting', 'w'); await add('waiting', 'w2', { lifo: true });
    await add('prioritized', 'p', { priority: 3 }); await add('prioritized', 'p2', { priority: 1 });
    await add('delayed', 'd', { delay: 3600000 }); await add('delayed', 'd2', { delay: 7200000 });
    await add('dedup', 'dd', { deduplication: { id: 'same' } });
    await queue.upsertJobScheduler('hourly', { every: 3600000 }, { name: 'tick' });
    if (a === '1') await queue.pause();
    out = { ids };
  } else if (mode === 'drain') {
    await queue.drain(a === '1');
  } else if (mode === 'obliterate') {
    await queue.obliterate();
  } else if (mode === 'resume') {
    await queue.resume();
  } else if (mode === 'throughput') {
    const count = Number(a);
    const ms = Number(b);
    await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 't', data: { i } })));
    let active = 0, maxActive = 0, finished = 0;
    const started = [];
    const t0 = Date.now();
    const worker = new Worker(queueName, async () => {
      active += 1; maxActive = Math.max(maxActive, active); started.push(Date.now() - t0);
      await sleep(ms);
      active -= 1; finished += 1;
    }, { connection, prefix, concurrency: 10 });
    while (finished < count) await sleep(10);
    await worker.close();
    out = { maxActive, started };
  } else if (mode === 'schedule') {
    const scheduled = await queue.upsertJobScheduler(a, JSON.parse(b), JSON.parse(c));
    out = { scheduler: await queue.getJobScheduler(a),
            next: { id: scheduled.id, delay: scheduled.delay, timestamp: scheduled.timestamp } };
  } else if (mode === 'unschedule') {
    out = { removed: await queue.removeJobScheduler(a) };
  } else if (mode === 'schedulers') {
    try { out = { schedulers: await queue.getJobSchedulers() }; } catch (err) { out = { error: err.message }; }
  } else if (mode === 'cron-next') {
    // defaultRepeatStrategy's own lines (job-scheduler.js), for many cases in one process.
    out = { next: JSON.parse(readFileSync(a, 'utf8')).map(([pattern, tz, now, start]) => {
      const dateFromMillis = new Date(now);
      const startDate = start && new Date(start);
      const currentDate = startDate > dateFromMillis ? startDate : dateFromMillis;
      try {
        return CronExpressionParser.parse(pattern, { tz, startDate: start || undefined, currentDate }).next().getTime();
      } catch (err) { return String(err.message); }
    }) };
  } else {
    process.stderr.write(`unknown mode ${mode}\n`);
    process.exit(64);
  }
  await queue.close();
  redis.disconnect();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
