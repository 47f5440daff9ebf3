// Add delayed jobs and exit, with no worker (so nothing promotes them when they fall due).
//
// Usage:
//   node delayed.mjs <redisUrl> <queue> <count> <delayMs>
// Prints one JSON line on stdout at the end: {"counts": getJobCounts(), "ids": [...]}.

import { Queue } from 'bullmq';
import { connectionFromUrl } from './connection.mjs';

const [redisUrl, queueName, count, delayMs] = process.argv.slice(2);
const queue = new Queue(queueName, { connection: connectionFromUrl(redisUrl) });

async function main() {
  const jobs = await queue.addBulk(
    Array.from({ length: Number(count) }, (_, i) => ({ name: 'later', data: { i }, opts: { delay: Number(delayMs) } })),
  );
  const counts = await queue.getJobCounts();
  await queue.close();
  console.log(JSON.stringify({ counts, ids: jobs.map(j => j.id) }));
}

main().catch(err => { console.error(err); process.exit(1); });
