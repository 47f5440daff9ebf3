// Real Node BullMQ 6.7 workers that a test starts and stops while a monitor runs (issue 14:
// workers per queue, retry-policy advice). One long-lived process per test module, driven by
// one JSON command per stdin line; each reply is one JSON line on stdout.
//
// Usage: node workers.mjs <redisUrl> <prefix>   (a redis+sentinel:// or redis+cluster:// URL too: connection.mjs)
// Commands:
//   {"cmd": "add", "queue", "jobs": [{name, data, opts}]}     -> {"ids": [...]} (Queue.add each)
//   {"cmd": "start", "id", "queue", "name"?, "concurrency"?, "fail"?, "hold"?}
//       a Worker (opts.name = name when given); `fail`: every attempt throws; `hold`: each job
//       waits until the worker stops; otherwise jobs complete at once. -> {"started": id}
//   {"cmd": "counts", "queue"}         -> getJobCounts() of the queue
//   {"cmd": "getWorkers", "queue"}     -> {"workers": [{addr, rawname}]}: Queue.getWorkers(), the truth
//   {"cmd": "drain", "queue", "count"}  -> {} once <count> jobs of the queue are finished
//   {"cmd": "stop", "id"}              -> {"stopped": id} (Worker.close(): its connections go)
//   {"cmd": "quit"}                    -> exits after closing everything
import { createInterface } from 'node:readline';
import { Queue, Worker } from 'bullmq';
import { connectionFromUrl, log, sleep } from './connection.mjs';

const [redisUrl, prefix] = process.argv.slice(2);
const connection = connectionFromUrl(redisUrl);
const queues = new Map();
const workers = new Map();

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
    case 'start': {
      let release;
      const held = new Promise(resolve => { release = resolve; });
      const opts = { connection, prefix, concurrency: msg.concurrency || 1 };
      if (msg.name) opts.name = msg.name;
      const w = new Worker(msg.queue, async () => {
        if (msg.fail) throw new Error('always fails');
        if (msg.hold) await held;
        return 'ok';
      }, opts);
      w.on('error', err => log(`worker ${msg.id}: ${err.message}`));
      await w.waitUntilReady();
      workers.set(msg.id, { w, release });
      return { started: msg.id };
    }
    case 'counts':
      return queue(msg.queue).getJobCounts();
    case 'getWorkers': {
      const found = await queue(msg.queue).getWorkers();
      return { workers: found.map(c => ({ addr: c.addr, rawname: c.rawname })) };
    }
    case 'drain': {
      const q = queue(msg.queue);
      for (;;) {
        const c = await q.getJobCounts('completed', 'failed');
        if (c.completed + c.failed >= msg.count) return c;
        await sleep(50);
      }
    }
    case 'stop': {
      const { w, release } = workers.get(msg.id);
      release();
      await w.close();
      workers.delete(msg.id);
      return { stopped: msg.id };
    }
    case 'quit': {
      for (const { w, release } of workers.values()) { release(); await w.close(); }
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
for (const { w, release } of workers.values()) { release(); await w.close(); }
for (const q of queues.values()) await q.close();
