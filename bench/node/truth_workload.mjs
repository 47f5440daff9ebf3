// Mixed BullMQ 6 workload for bench/count_accuracy.py: the configurations whose live counts
// events alone cannot settle (issue 11).
//
//   node truth_workload.mjs run   --redis URL [--queues 50] [--rate 100] [--name acc]
//   node truth_workload.mjs crash --redis URL [--name acc-crash] [--jobs 40]
//
// run: queues <name>-00 .. <name>-NN, one Worker each (concurrency 4, 2-20 ms per job). Jobs are
// added round-robin at <rate> jobs/s in total, on a 50 ms clock that catches up exactly. The
// queue's index mod 5 picks its kind:
//   0 prioritized  priorities 1..5 (add emits a plain `waiting`)
//   1 trimmed      removeOnComplete {count: 20}, removeOnFail {count: 10}; 1 job in 4 fails
//   2 backoff      attempts 3, fixed backoff 100 ms; 1 attempt in 3 fails (retried attempts)
//   3 flows        every 4th add is a flow: a parent with two children in the same queue
//   4 plain        1 job in 10 fails; 1 in 10 delayed by 200-800 ms
// Prints {"ready": true, "queues": [...]} once the workers run, then on SIGTERM or when stdin
// closes {"summary": {...}}.
//
// crash: adds <jobs> jobs to <name>, takes them all with one worker (lockDuration 3000 ms) that
// never finishes, prints {"active": n}, and waits to be SIGKILLed: its jobs stay in active with
// their locks expiring 3 s later and nobody to recover them (no other worker on that queue).

import IORedis from 'ioredis';
import { FlowProducer, Queue, Worker } from 'bullmq';
import { connectionFromUrl, emit, log, onStop, parseArgs, sleep } from './common.mjs';

const [mode, ...rest] = process.argv.slice(2);
const opts = parseArgs(rest, { redis: '', queues: 50, rate: 100, name: 'acc', jobs: 40 });
const TAG = `truth-${mode}`;
const connOpts = connectionFromUrl(opts.redis);
const shared = new IORedis(connOpts);

const KINDS = ['prioritized', 'trimmed', 'backoff', 'flows', 'plain'];

function jobFor(kind, seq) {
  const data = { seq };
  switch (kind) {
    case 'prioritized':
      return { data, opts: { priority: 1 + (seq % 5), removeOnComplete: { count: 200 } } };
    case 'trimmed':
      return { data: { ...data, fail: seq % 4 === 0 }, opts: { removeOnComplete: { count: 20 }, removeOnFail: { count: 10 } } };
    case 'backoff':
      return { data: { ...data, flaky: true }, opts: { attempts: 3, backoff: { type: 'fixed', delay: 100 }, removeOnComplete: { count: 200 } } };
    case 'plain':
      return { data: { ...data, fail: seq % 10 === 3 },
               opts: { delay: seq % 10 === 7 ? 200 + (seq % 7) * 100 : 0, removeOnComplete: { count: 200 }, removeOnFail: { count: 200 } } };
    default:
      return { data, opts: { removeOnComplete: { count: 200 } } };
  }
}

async function processor(job) {
  await sleep(2 + Math.floor(Math.random() * 18));
  if (job.data.fail) throw new Error(`bench failure ${job.data.seq}`);
  if (job.data.flaky && Math.random() < 1 / 3) throw new Error(`flaky attempt ${job.attemptsMade + 1}`);
  return { ok: job.data.seq };
}

async function run() {
  const names = Array.from({ length: opts.queues }, (_, i) => `${opts.name}-${String(i).padStart(2, '0')}`);
  const queues = names.map(n => new Queue(n, { connection: shared }));
  const flows = new FlowProducer({ connection: shared });
  const stats = { added: 0, flows: 0, completed: 0, failed: 0, errors: 0 };
  const workers = names.map(n => new Worker(n, processor, { connection: shared, concurrency: 4 }));
  for (const w of workers) {
    w.on('completed', () => stats.completed++);
    w.on('failed', () => stats.failed++);
    w.on('error', err => { stats.errors++; log(TAG, `worker error: ${err.message}`); });
  }
  await Promise.all(workers.map(w => w.waitUntilReady()));
  let stopping = false;
  onStop(async () => {
    stopping = true;
    emit({ summary: stats });
    await Promise.allSettled(workers.map(w => w.close(true)));
  });
  emit({ ready: true, queues: names, kinds: names.map((_, i) => KINDS[i % KINDS.length]) });
  const t0 = Date.now();
  let seq = 0;
  while (!stopping) {
    const due = Math.floor(((Date.now() - t0) / 1000) * opts.rate);
    const adds = [];
    while (seq < due) {
      const i = seq % names.length;
      const kind = KINDS[i % KINDS.length];
      if (kind === 'flows' && seq % 4 === 0) {
        adds.push(flows.add({ name: 'parent', queueName: names[i], data: { seq }, opts: { removeOnComplete: { count: 200 } },
                              children: [1, 2].map(c => ({ name: 'child', queueName: names[i], data: { seq, c },
                                                           opts: { removeOnComplete: { count: 200 } } })) }));
        stats.flows++;
      } else {
        const { data, opts: jobOpts } = jobFor(kind, seq);
        adds.push(queues[i].add(kind, data, jobOpts));
      }
      seq++;
    }
    stats.added = seq;
    await Promise.allSettled(adds);
    await sleep(50);
  }
}

async function crash() {
  const queue = new Queue(opts.name, { connection: shared });
  await queue.addBulk(Array.from({ length: opts.jobs }, (_, i) => ({ name: 'doomed', data: { i } })));
  let taken = 0;
  // Never finishes a job; concurrency high enough to hold them all. lockDuration short, so the
  // locks expire 3 s after the SIGKILL; stalledInterval long, so this worker never recovers them.
  const w = new Worker(opts.name, () => { taken++; return new Promise(() => {}); },
                       { connection: shared, concurrency: opts.jobs, lockDuration: 3000, stalledInterval: 3_600_000 });
  while (taken < opts.jobs) await sleep(20);
  emit({ active: taken });
  await new Promise(() => {}); // until SIGKILL
  await w.close();
}

await (mode === 'crash' ? crash() : run());
