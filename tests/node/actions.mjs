// Real Node BullMQ 6 producers and workers for Queuewatch's action tests.
//
// Usage (each prints one JSON object on its last stdout line):
//   node actions.mjs fail <redisUrl> <queue[,queue...]> <count> <attempts> [prefix]
//       add <count> jobs with `attempts` to each queue, run workers that always throw until all
//       of them are in `failed`; prints {ids} (of the first queue) and {byQueue: {queue: ids}}
//   node actions.mjs work <redisUrl> <queue> <behaviour> <expect> [prefix]
//       run a worker (behaviour `fail` always throws, `complete` returns {done: true}) until
//       `expect` jobs were finished by it in total (completed or failed for good); prints
//       {jobs: {id: {state, atm, ats, stc, data, name}}} for the jobs it finished
//   node actions.mjs dlq <redisUrl> <dlqQueue> <count> <source> [prefix]
//       add <count> dead letters to <dlqQueue> ({source, original_id, data}) and exit; prints {ids}

import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [mode, redisUrl, queueName, a, b, prefixArg] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const prefix = prefixArg || 'bull';

async function runUntil(behaviour, expect, name = queueName) {
  const finished = new Map();
  const worker = new Worker(
    name,
    async job => {
      if (behaviour === 'fail') throw new Error(`node failure for ${job.id}`);
      return { done: true };
    },
    { connection, prefix, concurrency: 50, stalledInterval: 1000, lockDuration: 5000, name: 'actions-test' },
  );
  const note = async job => {
    const state = await job.getState();
    if (state === 'completed' || state === 'failed') {
      finished.set(job.id, { state, atm: job.attemptsMade, ats: job.attemptsStarted, stc: job.stalledCounter,
                             data: job.data, name: job.name });
    }
  };
  worker.on('completed', job => note(job));
  worker.on('failed', job => job && note(job));
  worker.on('error', err => log(`worker error: ${err.message}`));
  while (finished.size < expect) await sleep(20);
  await worker.close();
  return finished;
}

async function main() {
  if (mode === 'fail') {
    const count = Number(a);
    const byQueue = {};
    await Promise.all(queueName.split(',').map(async name => {
      const queue = new Queue(name, { connection, prefix });
      const jobs = await queue.addBulk(Array.from({ length: count }, (_, i) => (
        { name: 'doomed', data: { i }, opts: { attempts: Number(b) } })));
      byQueue[name] = jobs.map(j => j.id);
      await runUntil('fail', count, name);
      await queue.close();
    }));
    const first = queueName.split(',')[0];
    process.stdout.write(JSON.stringify({ ids: byQueue[first], byQueue }) + '\n');
  } else if (mode === 'work') {
    const finished = await runUntil(a, Number(b));
    process.stdout.write(JSON.stringify({ jobs: Object.fromEntries(finished) }) + '\n');
  } else if (mode === 'dlq') {
    // The source queue exists, as it does for real dead letters (a redrive never creates one).
    const source = new Queue(b, { connection, prefix });
    await source.waitUntilReady();
    await source.close();
    const queue = new Queue(queueName, { connection, prefix });
    const jobs = await queue.addBulk(Array.from({ length: Number(a) }, (_, i) => ({
      name: 'dead-letter', data: { source: b, original_id: String(i), data: { i } },
      opts: { attempts: 2, removeOnComplete: false } })));
    await queue.close();
    process.stdout.write(JSON.stringify({ ids: jobs.map(j => j.id) }) + '\n');
  } else {
    process.stderr.write('usage: node actions.mjs fail|work|dlq <redisUrl> <queue> ...\n');
    process.exit(64);
  }
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
