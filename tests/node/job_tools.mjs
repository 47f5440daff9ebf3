// Node BullMQ 6.7 beside the job tools and the deduplication page: adds jobs, runs a worker and
// reports what BullMQ's own getters say. One long-lived process per test module, driven by one
// JSON command per stdin line; each reply is one JSON line on stdout. Started with the `TZ` a
// test chooses (times are compared as epoch milliseconds, whatever the zone).
//
// Usage: node job_tools.mjs <redisUrl> <prefix>
// Commands:
//   {"cmd": "add", "queue", "jobs": [{name, data, opts}]}  -> {"ids": [...]} (Queue.add each: a
//       deduplicated add answers the id of the job that holds the deduplication id)
//   {"cmd": "run", "queue", "count", "timeoutMs"?}   -> {"order": [{id, priority, processedOn}]}
//       a Worker of concurrency 1 that completes each job, closed once `count` jobs ran
//   {"cmd": "take", "queue", "token"}     -> {"id"} a job moved to active by a manual worker
//       (Worker.getNextJob): it holds the job's lock, as a live worker does
//   {"cmd": "job", "queue", "id"}         -> the job as Node reads it (Job.fromId, getState)
//   {"cmd": "failed", "queue"}            -> {"ids"} Queue.getFailed()
//   {"cmd": "dedupOwner", "queue", "dedupId"} -> {"id"} Queue.getDeduplicationJobId
//   {"cmd": "scheduler", "queue", "id", "every"} -> {"id"} the pending iteration of
//       Queue.upsertJobScheduler(id, {every})
//   {"cmd": "progress", "queue", "id", "value"} -> {} Job.updateProgress(value) (a "progress" event)
//   {"cmd": "quit"}
import { createInterface } from 'node:readline';
import { Job, Queue, Worker } from 'bullmq';
import { connectionFromUrl, sleep } from './connection.mjs';

const [redisUrl, prefix] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queues = new Map();
const manual = [];

function queue(name) {
  if (!queues.has(name)) queues.set(name, new Queue(name, { connection, prefix }));
  return queues.get(name);
}

async function handle(msg) {
  switch (msg.cmd) {
    case 'add': {
      const q = queue(msg.queue);
      const ids = [];
      for (const j of msg.jobs) ids.push((await q.add(j.name || 'job', j.data || {}, j.opts || {})).id);
      return { ids };
    }
    case 'run': {
      const order = [];
      const w = new Worker(msg.queue, async job => {
        order.push({ id: job.id, priority: job.priority, processedOn: job.processedOn });
        return 'ok';
      }, { connection, prefix, concurrency: 1 });
      const deadline = Date.now() + (msg.timeoutMs || 20000);
      while (order.length < msg.count && Date.now() < deadline) await sleep(20);
      await w.close();
      return { order };
    }
    case 'take': {
      const w = new Worker(msg.queue, null, { connection, prefix, lockDuration: 60000 });
      manual.push(w);
      const job = await w.getNextJob(msg.token);
      return { id: job ? job.id : null };
    }
    case 'job': {
      const q = queue(msg.queue);
      const job = await Job.fromId(q, msg.id);
      if (!job) return { missing: true };
      return {
        state: await job.getState(),
        failedReason: job.failedReason,
        attemptsMade: job.attemptsMade,
        priority: job.priority,
        delay: job.delay,
        timestamp: job.timestamp,
        finishedOn: job.finishedOn,
        processedOn: job.processedOn,
      };
    }
    case 'failed':
      return { ids: (await queue(msg.queue).getFailed()).map(j => j.id) };
    case 'dedupOwner':
      return { id: await queue(msg.queue).getDeduplicationJobId(msg.dedupId) };
    case 'scheduler': {
      const job = await queue(msg.queue).upsertJobScheduler(msg.id, { every: msg.every }, { name: 'tick' });
      return { id: job.id };
    }
    case 'progress': {
      const job = await Job.fromId(queue(msg.queue), msg.id);
      await job.updateProgress(msg.value);
      return {};
    }
    case 'quit': {
      for (const w of manual) await w.close(true);
      for (const q of queues.values()) await q.close();
      process.stdout.write('{}\n');
      process.exit(0);
    }
    default:
      return { error: `unknown command ${msg.cmd}` };
  }
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let reply;
  try {
    reply = await handle(JSON.parse(line));
  } catch (err) {
    reply = { error: err.message };
  }
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}
