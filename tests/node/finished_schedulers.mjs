// Job schedulers that BullMQ finishes, run by a real worker until it has.
//
// Usage:
//   node finished_schedulers.mjs [--prefix=P] <redisUrl> <queue> [schedule,work]
//       schedule: upserts
//         "limited"  every 200 ms, limit 2: finished once its 2nd iteration is taken;
//         "ending"   every 200 ms, endDate 1 s from now: finished once an iteration is taken
//                    after that;
//         "new-year" cron at noon on 1 January (Europe/Paris), limit 1: its one iteration is
//                    created but months away, so it is not finished (its next run is real);
//       work: runs a worker until both others are finished (nothing left waiting, delayed or
//       active after the end date), closes it.
//       The default does both; "schedule" alone leaves the first iterations to nobody.
// Prints one JSON line on stdout at the end:
//   {"schedulers": getJobSchedulers(), "processed": {"<scheduler id>": n}, "completed": [ids],
//    "endDate": ms, "counts": getJobCounts()}.

import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [redisUrl, queueName, steps = 'schedule,work']] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection, prefix });

async function schedule() {
  await queue.upsertJobScheduler('limited', { every: 200, limit: 2 }, { name: 'tick', data: {} });
  await queue.upsertJobScheduler('ending', { every: 200, endDate: Date.now() + 1000 }, { name: 'tock', data: {} });
  await queue.upsertJobScheduler(
    'new-year', { pattern: '0 12 1 1 *', tz: 'Europe/Paris', limit: 1 }, { name: 'report', data: {} });
}

async function work() {
  const endDate = (await queue.getJobScheduler('ending')).endDate;
  const processed = { limited: 0, ending: 0 };
  const worker = new Worker(queueName, async job => {
    processed[job.repeatJobKey] = (processed[job.repeatJobKey] || 0) + 1;
  }, { connection, prefix, concurrency: 2 });
  worker.on('error', err => log(`worker error: ${err.message}`));
  const deadline = Date.now() + 20000;
  for (;;) {
    await sleep(200);
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    // The new-year iteration stays delayed: everything else must be done.
    const pending = counts.waiting + counts.active + counts.prioritized + counts.delayed - 1;
    if (processed.limited >= 2 && Date.now() > endDate + 300 && pending === 0) break;
    if (Date.now() > deadline) throw new Error(`schedulers did not finish: ${JSON.stringify({ processed, counts })}`);
  }
  await worker.close();
  return processed;
}

async function main() {
  const todo = steps.split(',');
  if (todo.includes('schedule')) await schedule();
  const processed = todo.includes('work') ? await work() : {};
  const endDate = (await queue.getJobScheduler('ending')).endDate;
  const schedulers = await queue.getJobSchedulers();
  const completed = await queue.getCompleted();
  const counts = await queue.getJobCounts();
  await queue.close();
  console.log(JSON.stringify({ schedulers, processed, completed: completed.map(j => j.id), endDate, counts }));
}

main().catch(err => { console.error(err); process.exit(1); });
