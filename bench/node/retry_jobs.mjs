// BullMQ's own bulk retry, for bench/redrive.py: Queue.retryJobs({state: 'failed'}) on one
// queue (moveJobsToWait, 1000 jobs per call by default, looped until done), timed.
//
//   node retry_jobs.mjs --redis redis://127.0.0.1:PORT/0 --queue bench-retryjobs
//
// Prints {"seconds": s} on stdout when done.

import { Queue } from 'bullmq';
import { connectionFromUrl, emit } from './common.mjs';
import { parseArgs } from './common.mjs';

const opts = parseArgs(process.argv.slice(2), { redis: '', queue: '' });
const queue = new Queue(opts.queue, { connection: connectionFromUrl(opts.redis) });
await queue.waitUntilReady();
const t0 = process.hrtime.bigint();
await queue.retryJobs({ state: 'failed', timestamp: Date.now() });
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
await queue.close();
emit({ seconds });
