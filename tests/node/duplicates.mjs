// The custom job id trap, with real Node BullMQ: re-adding a job whose id is still kept
// (here: completed, because removeOnComplete is not set) does nothing. BullMQ returns the
// existing id and emits a `duplicated` event; no new job runs. For contrast it also adds
// with the `deduplication` option, which reports `deduplicated` instead.
//
// Usage: node duplicates.mjs <redisUrl> <queue> <repeats> [jobId]
//   1. adds job <jobId> (default "invoice-42") and lets a worker complete it;
//   2. adds the same jobId <repeats> more times (each one is dropped as a duplicate);
//   3. adds two jobs with deduplication {id: "dedup-1"} (the second is deduplicated).
// Prints one JSON line: {"counts": getJobCounts(), "returned": [ids returned by the re-adds],
//                        "processed": <how many times the processor ran>, "dedup": [ids]}.

import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [redisUrl, queueName, repeatsArg, jobId = 'invoice-42'] = process.argv.slice(2);
if (!redisUrl || !queueName || !repeatsArg) {
  process.stderr.write('usage: node duplicates.mjs <redisUrl> <queue> <repeats> [jobId]\n');
  process.exit(64);
}
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection });

async function main() {
  let processed = 0;
  const worker = new Worker(queueName, async job => {
    processed += 1;
    return { handled: job.id };
  }, { connection, concurrency: 1 });
  worker.on('error', err => log(`worker error: ${err.message}`));

  await queue.add('invoice', { n: 0 }, { jobId });
  for (;;) {
    if ((await queue.getJobCounts('completed')).completed >= 1) break;
    await sleep(20);
  }
  const returned = [];
  for (let i = 1; i <= Number(repeatsArg); i++) {
    const job = await queue.add('invoice', { n: i }, { jobId });
    returned.push(job.id);
  }
  const dedup = [];
  for (let i = 0; i < 2; i++) {
    const job = await queue.add('dedup', { i }, { deduplication: { id: 'dedup-1' }, delay: 60000 });
    dedup.push(job.id);
  }
  await sleep(300); // a duplicate would have been picked up by now
  await worker.close();
  const counts = await queue.getJobCounts();
  await queue.close();
  process.stdout.write(JSON.stringify({ counts, returned, processed, dedup }) + '\n');
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
