// Workloads whose events do not tell the whole truth, for the "quiet means exact" tests.
//
// Usage: node truth.mjs <mode> <redisUrl> <queue> [arg]
//   prioritized  plain and prioritized jobs, a worker takes some; a delayed prioritized job is
//                promoted and a failed prioritized job retried (both emit a plain `waiting`)
//   trimmed      removeOnComplete {count: 20} / removeOnFail {count: 10}: 60 complete, 30 fail
//   aged         removeOnComplete {age: 1}: 10 complete, then 5 more after 1.5 s prune them
//   backoff      attempts 3, fixed backoff: 10 jobs fail twice then complete, 2 jobs always fail
//   flow         a parent with 4 children in the same queue, all processed
//   ratelimited  a worker pushes every job back once with RateLimitError (no attempt used), then
//                completes it; plus 3 jobs moved to delayed with skipAttempt (DelayedError)
//   crash <n>    a worker takes <n> jobs, prints `ACTIVE <n>` and freezes (the test SIGKILLs it)
//   eventless    5 waiting and 5 prioritized jobs, no worker
//   drain        Queue.drain(): emits no event, so only a read can tell
//   steady       removeOnComplete {count: 20} / removeOnFail {count: 10} under continuous load
//                (about 100 jobs/s, 1 in 3 fails, never a pause): prints `CAPPED` once both sets
//                are at their cap, and runs until killed
//   flowsteady <s>  for <s> seconds a flow (a parent and 2 children, all removeOnComplete
//                {count: 1000}) and a plain job every 100 ms, never a pause: the completed set
//                grows below its cap; prints `STARTED` after the first add, then closes its
//                worker (jobs in hand finish) and prints the counts
//   crossflow <children queue>  a parent in <queue> with 3 children in the other queue, no
//                worker: the parent waits in waiting-children, the children in wait
//   counts       just print getJobCounts()
// Every mode but `crash` closes its workers and prints one JSON line at the end:
// {"counts": getJobCounts(), ...}.

import { DelayedError, FlowProducer, Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [mode, redisUrl, queueName, arg] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queue = new Queue(queueName, { connection });

async function until(test) {
  for (;;) {
    if (await test(await queue.getJobCounts())) return;
    await sleep(20);
  }
}

function worker(processor, opts = {}) {
  const w = new Worker(queueName, processor, { connection, concurrency: 5, stalledInterval: 500, lockDuration: 2000, ...opts });
  w.on('error', err => log(`worker error: ${err.message}`));
  return w;
}

const modes = {
  async prioritized() {
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'plain', data: { i } })));
    const doomed = await queue.add('prio-doomed', {}, { priority: 1, attempts: 1 }); // the first to run after wait
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'prio', data: { i }, opts: { priority: 1 + (i % 5) } })));
    const later = await queue.add('prio-later', {}, { priority: 3, delay: 60_000 });
    let done = 0;
    const w = worker(async job => {
      if (job.name === 'prio-doomed') throw new Error('doomed');
      done += 1;
      if (done === 40) w.pause(true); // stop taking jobs, do not wait for this one
    }, { concurrency: 1 });
    await until(c => done >= 40 && c.failed >= 1);
    await w.close();
    await later.promote(); // `waiting prev=delayed`, into prioritized
    await doomed.retry('failed'); // `waiting prev=failed`, into prioritized
  },
  async trimmed() {
    await queue.addBulk([
      ...Array.from({ length: 60 }, (_, i) => ({ name: 'ok', data: { i }, opts: { removeOnComplete: { count: 20 } } })),
      ...Array.from({ length: 30 }, (_, i) => ({ name: 'bad', data: { i }, opts: { removeOnFail: { count: 10 } } })),
    ]);
    let finished = 0;
    const w = worker(async job => {
      finished += 1;
      if (job.name === 'bad') throw new Error('bad');
    });
    await until(() => finished >= 90);
    await w.close();
  },
  async aged() {
    const add = n => queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'ok', data: { i }, opts: { removeOnComplete: { age: 1 } } })));
    let finished = 0;
    const w = worker(async () => { finished += 1; });
    await add(10);
    await until(() => finished >= 10);
    await sleep(1500);
    await add(5);
    await until(() => finished >= 15);
    await w.close();
  },
  async backoff() {
    await queue.addBulk([
      ...Array.from({ length: 10 }, (_, i) => ({ name: 'flaky', data: { i }, opts: { attempts: 3, backoff: { type: 'fixed', delay: 50 } } })),
      ...Array.from({ length: 2 }, (_, i) => ({ name: 'broken', data: { i }, opts: { attempts: 3, backoff: { type: 'fixed', delay: 50 } } })),
    ]);
    const w = worker(async job => {
      if (job.name === 'broken' || job.attemptsMade < 2) throw new Error(`attempt ${job.attemptsMade + 1}`);
    });
    await until(c => c.completed >= 10 && c.failed >= 2);
    await w.close();
    return { attempt_failures: 10 * 2 + 2 * 2, final_failures: 2 };
  },
  async flow() {
    const flows = new FlowProducer({ connection });
    await flows.add({
      name: 'parent', queueName,
      children: Array.from({ length: 4 }, (_, i) => ({ name: 'child', queueName, data: { i } })),
    });
    await flows.close();
    const w = worker(async () => 'ok');
    await until(c => c.completed >= 5);
    await w.close();
  },
  async ratelimited() {
    await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'limited', data: { i }, opts: { attempts: 3 } })));
    await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'later', data: { i }, opts: { attempts: 3 } })));
    const pushedBack = new Set();
    const w = worker(async (job, token) => {
      if (job.name === 'limited' && !pushedBack.has(job.id)) {
        pushedBack.add(job.id);
        await w.rateLimit(30);
        throw Worker.RateLimitError(); // back to wait, `waiting prev=active`, attempt not used
      }
      if (job.name === 'later' && !pushedBack.has(job.id)) {
        pushedBack.add(job.id);
        await job.moveToDelayed(Date.now() + 50, token); // skipAttempt: `delayed`, attempt not used
        throw new DelayedError();
      }
      return 'ok';
    }, { concurrency: 1 });
    await until(c => c.completed >= 9);
    await w.close();
    return { attempt_failures: 0 };
  },
  async crash() {
    const n = Number(arg);
    let taken = 0;
    worker(async () => {
      taken += 1;
      if (taken === n) {
        process.stdout.write(`ACTIVE ${n}\n`);
        setTimeout(() => { for (;;) { /* freeze: no lock renewal, no I/O */ } }, 50);
      }
      return new Promise(() => {});
    }, { concurrency: n, lockDuration: 2000, stalledInterval: 60_000 });
    await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'doomed', data: { i } })));
    return null;
  },
  async steady() {
    const opts = { removeOnComplete: { count: 20 }, removeOnFail: { count: 10 } };
    worker(async job => { if (job.data.i % 3 === 0) throw new Error('bad'); });
    let capped = false;
    for (let i = 0; ; i += 5) {
      await queue.addBulk(Array.from({ length: 5 }, (_, k) => ({ name: 'steady', data: { i: i + k }, opts })));
      if (!capped) {
        const c = await queue.getJobCounts('completed', 'failed');
        if (c.completed >= 20 && c.failed >= 10) {
          capped = true;
          process.stdout.write('CAPPED\n');
        }
      }
      await sleep(50);
    }
  },
  async flowsteady() {
    const opts = { removeOnComplete: { count: 1000 } };
    const flows = new FlowProducer({ connection });
    const w = worker(async () => { await sleep(2 + Math.floor(Math.random() * 8)); return 'ok'; }, { concurrency: 4 });
    const until_ = Date.now() + 1000 * Number(arg);
    for (let i = 0; Date.now() < until_; i++) {
      await flows.add({ name: 'parent', queueName, data: { i }, opts,
                        children: [1, 2].map(c => ({ name: 'child', queueName, data: { i, c }, opts })) });
      await queue.add('plain', { i }, opts);
      if (i === 0) process.stdout.write('STARTED\n');
      await sleep(100);
    }
    await until(c => c.waiting + c.active + c['waiting-children'] === 0);
    await w.close();
    await flows.close();
  },
  async eventless() {
    await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'plain', data: { i } })));
    await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'prio', data: { i }, opts: { priority: 2 } })));
  },
  async drain() {
    await queue.drain(); // removes waiting and prioritized jobs, emits no event
  },
  async crossflow() {
    const flows = new FlowProducer({ connection });
    await flows.add({
      name: 'parent', queueName,
      children: Array.from({ length: 3 }, (_, i) => ({ name: 'child', queueName: arg, data: { i } })),
    });
    await flows.close();
  },
  async counts() {},
};

async function main() {
  if (!modes[mode]) {
    process.stderr.write(`usage: node truth.mjs ${Object.keys(modes).join('|')} <redisUrl> <queue> [arg]\n`);
    process.exit(64);
  }
  const extra = await modes[mode]();
  if (extra === null) return; // crash: frozen until killed
  const counts = await queue.getJobCounts();
  await queue.close();
  process.stdout.write(JSON.stringify({ counts, ...(extra || {}) }) + '\n');
}

main().catch(err => {
  log(err.stack);
  process.exit(1);
});
