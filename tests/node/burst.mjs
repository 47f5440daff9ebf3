// A burst into a queue made just before it: the queue is created (its meta written by the Queue
// constructor), <createToBurstMs> later 40 jobs are added at once, <burstToWorkMs> after that one
// worker of concurrency 4 works them (250 ms each).
//
// Usage: node burst.mjs <redisUrl> <queue> <createToBurstMs> <burstToWorkMs>
// Prints `STARTED` when the worker starts, then once every job completed the truth as BullMQ's
// own job fields tell it: {"jobs": [{"name", "wait_ms": processedOn - timestamp}]}.
import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [redisUrl, queueName, createToBurstMs, burstToWorkMs] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection });
await queue.waitUntilReady();
await sleep(Number(createToBurstMs));
await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'burst', data: { i } })));
await sleep(Number(burstToWorkMs));
const worker = new Worker(queueName, async () => { await sleep(250); }, { connection, concurrency: 4 });
worker.on('error', err => log(`worker error: ${err.message}`));
console.log('STARTED');
for (;;) {
  if ((await queue.getJobCounts('completed')).completed >= 40) break;
  await sleep(50);
}
await worker.close();
const jobs = (await queue.getJobs(['completed'], 0, -1)).map(j => ({ name: j.name, wait_ms: j.processedOn - j.timestamp }));
await queue.close();
console.log(JSON.stringify({ jobs }));
