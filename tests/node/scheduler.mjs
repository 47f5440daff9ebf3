// A job scheduler with a worker that runs for a while and then stops, for the missed-schedule
// alert test.
//
// Usage:
//   node scheduler.mjs <redisUrl> <queue> <workerSeconds>
//       upsert an "every second" scheduler and a cron scheduler (Europe/Paris) whose next run is
//       months away (noon on 1 January: a test's minutes never cross it), run a
//       worker for <workerSeconds>, stop it, exit
// Prints one JSON line on stdout at the end: {"schedulers": getJobSchedulers(), "processed": n}.

import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [redisUrl, queueName, seconds] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection });

async function main() {
  await queue.upsertJobScheduler('every-second', { every: 1000 }, { name: 'tick', data: {} });
  await queue.upsertJobScheduler('new-year', { pattern: '0 12 1 1 *', tz: 'Europe/Paris' }, { name: 'report', data: {} });
  let processed = 0;
  const worker = new Worker(queueName, async () => { processed += 1; }, { connection, concurrency: 2 });
  worker.on('error', err => log(`worker error: ${err.message}`));
  await sleep(Number(seconds) * 1000);
  await worker.close();
  const schedulers = await queue.getJobSchedulers();
  await queue.close();
  console.log(JSON.stringify({ schedulers, processed }));
}

main().catch(err => { console.error(err); process.exit(1); });
