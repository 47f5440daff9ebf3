// Shared helpers for the Node BullMQ fixture scripts.
//
// BullMQ takes ioredis *options* (not a URL), and when it gets options rather
// than a client instance it creates and closes its own connections. That is
// what we want: every Queue/Worker/FlowProducer owns its sockets and
// `close()` releases them, so node can exit on its own.

import IORedis from 'ioredis';

/**
 * Turn `redis://[user:pass@]host:port[/db]` into ioredis connection options.
 * `redis+sentinel://[user:pass@]host:port[,host:port…]/<master-name>[/db][?sentinel_password=…]`
 * (Queuewatch's Sentinel URL) becomes ioredis' Sentinel options: the hosts are the Sentinels.
 * `redis+cluster://[user:pass@]host:port[,host:port…]` (Queuewatch's Cluster URL) becomes one
 * ioredis `Cluster` (BullMQ takes a Cluster only as an instance: its users share it, and a
 * Worker duplicates it for its blocking reads).
 * Exits with a usage error on anything that is not a redis URL.
 */
export function connectionFromUrl(redisUrl) {
  if (/^rediss?\+sentinel:\/\//i.test(redisUrl)) return sentinelConnection(redisUrl);
  if (/^redis\+cluster:\/\//i.test(redisUrl)) return clusterConnection(redisUrl);
  let url;
  try {
    url = new URL(redisUrl);
  } catch {
    usageError(`not a URL: ${redisUrl}`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    usageError(`expected a redis:// URL, got ${redisUrl}`);
  }
  const db = url.pathname && url.pathname !== '/' ? Number(url.pathname.slice(1)) : 0;
  return {
    host: url.hostname || '127.0.0.1',
    port: url.port ? Number(url.port) : 6379,
    db,
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    tls: url.protocol === 'rediss:' ? {} : undefined,
    // Workers require this (blocking commands must not be retried/aborted);
    // harmless for the other classes.
    maxRetriesPerRequest: null,
  };
}

function sentinelConnection(redisUrl) {
  const [scheme, rest] = redisUrl.split('://');
  const at = rest.lastIndexOf('@');
  const userinfo = at === -1 ? '' : rest.slice(0, at);
  const [beforeQuery, query = ''] = (at === -1 ? rest : rest.slice(at + 1)).split('?');
  const [hosts, name, db = '0'] = beforeQuery.split('/');
  if (!name) usageError(`a Sentinel URL names its master: ${scheme}://…/<master-name>`);
  const colon = userinfo.indexOf(':');
  const params = new URLSearchParams(query);
  return {
    sentinels: hosts.split(',').map(hostPort => {
      const sep = hostPort.lastIndexOf(':');
      return sep === -1 ? { host: hostPort, port: 26379 } : { host: hostPort.slice(0, sep), port: Number(hostPort.slice(sep + 1)) };
    }),
    name: decodeURIComponent(name),
    db: Number(db),
    username: colon > 0 ? decodeURIComponent(userinfo.slice(0, colon)) : undefined,
    password: colon !== -1 ? decodeURIComponent(userinfo.slice(colon + 1)) : undefined,
    sentinelPassword: params.get('sentinel_password') || undefined,
    maxRetriesPerRequest: null,
  };
}

function clusterConnection(redisUrl) {
  const rest = redisUrl.split('://')[1].split(/[/?]/)[0];
  const at = rest.lastIndexOf('@');
  const userinfo = at === -1 ? '' : rest.slice(0, at);
  const colon = userinfo.indexOf(':');
  const seeds = (at === -1 ? rest : rest.slice(at + 1)).split(',').map(hostPort => {
    const sep = hostPort.lastIndexOf(':');
    return { host: hostPort.slice(0, sep), port: Number(hostPort.slice(sep + 1)) };
  });
  return new IORedis.Cluster(seeds, {
    redisOptions: {
      username: colon > 0 ? decodeURIComponent(userinfo.slice(0, colon)) : undefined,
      password: colon !== -1 ? decodeURIComponent(userinfo.slice(colon + 1)) : undefined,
      maxRetriesPerRequest: null,
    },
  });
}

function usageError(message) {
  process.stderr.write(`${message}\n`);
  process.exit(64); // EX_USAGE
}

/**
 * The script's arguments after an optional leading `--prefix=<prefix>` (the BullMQ key prefix,
 * default 'bull'): `[prefix, args]`. Tests isolate their keys by a prefix of their own.
 */
export function prefixAndArgs(argv) {
  const args = argv.slice(2);
  const flag = '--prefix=';
  const prefix = args[0]?.startsWith(flag) ? args.shift().slice(flag.length) : 'bull';
  return [prefix, args];
}

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/**
 * Close BullMQ objects once a script's answer is printed, giving up after `ms`: a close that
 * waits on a Cluster connection must not hold the script (and its test) past its answer.
 */
export async function closeWithin(ms, ...closables) {
  await Promise.race([Promise.all(closables.map(closable => closable.close())), sleep(ms)]);
}

/** Diagnostics go to stderr so stdout stays machine-readable. */
export function log(...parts) {
  process.stderr.write(`[fixture] ${parts.join(' ')}\n`);
}
