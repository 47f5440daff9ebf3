// Shared helpers for the Node BullMQ fixture scripts.
//
// BullMQ takes ioredis *options* (not a URL), and when it gets options rather
// than a client instance it creates and closes its own connections. That is
// what we want: every Queue/Worker/FlowProducer owns its sockets and
// `close()` releases them, so node can exit on its own.

/**
 * Turn `redis://[user:pass@]host:port[/db]` into ioredis connection options.
 * Exits with a usage error on anything that is not a redis URL.
 */
export function connectionFromUrl(redisUrl) {
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

/** Diagnostics go to stderr so stdout stays machine-readable. */
export function log(...parts) {
  process.stderr.write(`[fixture] ${parts.join(' ')}\n`);
}
