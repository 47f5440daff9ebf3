// Flows across queues for the flow tree page (tests/browse/test_flow_tree_node.py).
//
// Usage: node flow_tree.mjs [--prefix=<prefix>] <redisUrl> build
//   Adds two flows. "order-1" (queue flow-top) has children in flow-kids that end every way BullMQ
//   records on a parent (completed, failed and ignored, failed with failParentOnFailure), a child
//   waiting in flow-later (no worker serves it) and a child "pack-1" (flow-kids) with a child of
//   its own waiting in flow-later. "order-2" (flow-top) waits for one child in flow-later. A
//   worker on flow-kids runs the children, then stops. Prints getFlow() of order-1 flattened
//   ({key, state, children}) and order-2's state.
// Usage: node flow_tree.mjs [--prefix=<prefix>] <redisUrl> work-top <jobId>
//   A worker on flow-top until <jobId> has finished; prints its state and return value.

import { FlowProducer, Job, Queue, Worker } from 'bullmq';
import { closeWithin, connectionFromUrl, log, prefixAndArgs, sleep } from './connection.mjs';

const [prefix, [redisUrl, mode, jobId]] = prefixAndArgs(process.argv);
const connection = connectionFromUrl(redisUrl);

async function flatten(node, out) {
  const state = await node.job.getState();
  out.push({ key: `${prefix}:${node.job.queueName}:${node.job.id}`, state, children: (node.children || []).length });
  for (const child of node.children || []) await flatten(child, out);
  return out;
}

if (mode === 'build') {
  const flows = new FlowProducer({ connection, prefix });
  await flows.add({
    name: 'order',
    queueName: 'flow-top',
    opts: { jobId: 'order-1' },
    children: [
      { name: 'charge', queueName: 'flow-kids', data: { step: 1 }, opts: { jobId: 'k-ok' } },
      { name: 'notify', queueName: 'flow-kids', opts: { jobId: 'k-ignored', ignoreDependencyOnFailure: true } },
      { name: 'reserve', queueName: 'flow-kids', opts: { jobId: 'k-fatal', failParentOnFailure: true } },
      { name: 'ship', queueName: 'flow-later', opts: { jobId: 'k-later' } },
      {
        name: 'pack',
        queueName: 'flow-kids',
        opts: { jobId: 'pack-1' },
        children: [{ name: 'label', queueName: 'flow-later', opts: { jobId: 'g-later' } }],
      },
    ],
  });
  await flows.add({
    name: 'order',
    queueName: 'flow-top',
    opts: { jobId: 'order-2' },
    children: [{ name: 'ship', queueName: 'flow-later', opts: { jobId: 'k2-later' } }],
  });
  const kids = new Queue('flow-kids', { connection, prefix });
  const worker = new Worker('flow-kids', async job => {
    if (job.name === 'charge') return { charged: 42 };
    throw new Error(`${job.name} failed: card declined`);
  }, { connection, prefix, concurrency: 1 });
  worker.on('error', err => log(`worker error: ${err.message}`));
  while (true) {
    const counts = await kids.getJobCounts('completed', 'failed');
    if (counts.completed + counts.failed >= 3) break;
    await sleep(20);
  }
  await worker.close();
  const tree = await flows.getFlow({ id: 'order-1', queueName: 'flow-top' });
  const top = new Queue('flow-top', { connection, prefix });
  console.log(JSON.stringify({
    flow: await flatten(tree, []),
    order2: await top.getJobState('order-2'),
  }));
  await closeWithin(5000, flows, kids, top);
} else if (mode === 'work-top') {
  const top = new Queue('flow-top', { connection, prefix });
  const worker = new Worker('flow-top', async job => ({ shipped: job.id }), { connection, prefix });
  worker.on('error', err => log(`worker error: ${err.message}`));
  let state = await top.getJobState(jobId);
  for (let i = 0; i < 500 && state !== 'completed' && state !== 'failed'; i++) {
    await sleep(20);
    state = await top.getJobState(jobId);
  }
  await worker.close();
  const job = await Job.fromId(top, jobId);
  console.log(JSON.stringify({ state, returnvalue: job ? job.returnvalue : null }));
  await closeWithin(5000, top);
} else {
  console.error('usage: flow_tree.mjs [--prefix=<prefix>] <redisUrl> build | work-top <jobId>');
  process.exit(2);
}
// A Cluster connection is one shared ioredis instance, which no BullMQ object closes, and its
// reconnect timers could keep node alive after the answer is printed (a run once hung here for the
// test's whole timeout): end the process once everything is closed.
if (typeof connection.disconnect === 'function') connection.disconnect();
process.exit(0);
