// bull-board 9 (the versions pinned in this folder's package-lock.json) serving the bench
// queues, set up the way its README does it: one BullMQ Queue (with its own connection) per
// queue, wrapped in a BullMQAdapter, mounted on an Express app.
//
//   node bullboard.mjs --redis redis://127.0.0.1:PORT/0 --port 3000 --queues bench-00,bench-01,...
//
// Prints {"listening": port} on stdout once it serves, and exits on SIGTERM/SIGINT or when
// stdin closes.

import express from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import { connectionFromUrl, emit, log, onStop, parseArgs } from './common.mjs';

const opts = parseArgs(process.argv.slice(2), { redis: '', port: 0, queues: '' });
const connection = connectionFromUrl(opts.redis);
const queues = opts.queues.split(',').filter(Boolean).map(n => new Queue(n, { connection }));

const serverAdapter = new ExpressAdapter();
serverAdapter.setBasePath('/');
createBullBoard({ queues: queues.map(q => new BullMQAdapter(q)), serverAdapter });

const app = express();
app.use('/', serverAdapter.getRouter());
const server = app.listen(opts.port, '127.0.0.1', () => {
  log('bull-board', `serving ${queues.length} queues on http://127.0.0.1:${opts.port}/`);
  emit({ listening: opts.port });
});

onStop(async () => {
  server.close();
  await Promise.all(queues.map(q => q.close()));
});
