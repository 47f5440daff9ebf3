// Cross-check the bench's bulk-loaded data with real Node BullMQ 6 (tests/node/node_modules).
//
//   node bench/verify_layout.mjs <port> '<json: [queueName, ...]>'
//
// Reads only (Queue with skipMetasUpdate, so not even `meta` is rewritten) from the private
// redis-server the bench started, and prints ONE JSON line per queue with what BullMQ itself
// reports: job counts, paused flag, scheduler count, and for the newest/oldest job of each
// state the decoded job (name, attemptsMade, priority, delay, finishedOn, failedReason) and
// getState(). snapshot_bench.py --verify-node compares these with its plan.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'tests', 'node', 'package.json'));
const { Queue } = await import(require.resolve('bullmq'));

const [port, namesJson] = process.argv.slice(2);
const connection = { host: '127.0.0.1', port: Number(port), maxRetriesPerRequest: null };
for (const name of JSON.parse(namesJson)) {
  const queue = new Queue(name, { connection, skipMetasUpdate: true });
  try {
    const counts = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed');
    const samples = {};
    for (const state of ['completed', 'failed', 'delayed', 'prioritized', 'wait']) {
      const jobs = [...await queue.getJobs([state], 0, 0, false), ...await queue.getJobs([state], 0, 0, true)];
      samples[state] = [];
      for (const job of jobs) {
        samples[state].push({
          id: job.id, name: job.name, state: await job.getState(), attemptsMade: job.attemptsMade,
          attemptsStarted: job.attemptsStarted, attempts: job.opts.attempts, priority: job.priority, delay: job.delay,
          timestamp: job.timestamp, processedOn: job.processedOn ?? null, finishedOn: job.finishedOn ?? null,
          failedReason: job.failedReason ?? null, stacktrace: (job.stacktrace || []).length,
          dataKeys: Object.keys(job.data || {}).length,
        });
      }
    }
    console.log(JSON.stringify({
      queue: name, counts, paused: await queue.isPaused(), schedulers: await queue.getJobSchedulersCount(), samples,
    }));
  } finally {
    await queue.close();
  }
}
