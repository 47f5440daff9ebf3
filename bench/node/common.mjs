// Shared helpers for the bench Node scripts (same conventions as tests/node/connection.mjs:
// diagnostics on stderr, machine-readable JSON lines on stdout).

export function connectionFromUrl(redisUrl) {
  const url = new URL(redisUrl);
  if (url.protocol !== 'redis:') throw new Error(`expected a redis:// URL, got ${redisUrl}`);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
    throw new Error(`bench scripts only talk to loopback Redis servers, got ${url.hostname}`);
  }
  const db = url.pathname && url.pathname !== '/' ? Number(url.pathname.slice(1)) : 0;
  return { host: url.hostname, port: Number(url.port || 6379), db, maxRetriesPerRequest: null };
}

/** Parse `--name value` pairs into an object, with defaults. */
export function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in defaults)) throw new Error(`unknown option ${argv[i]}`);
    out[key] = typeof defaults[key] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return out;
}

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

export function log(tag, ...parts) {
  process.stderr.write(`[${tag}] ${parts.join(' ')}\n`);
}

export function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

/** Exit cleanly on SIGTERM/SIGINT, and on our parent's death (stdin closes when it dies). */
export function onStop(fn) {
  let stopping = false;
  const stop = async why => {
    if (stopping) return;
    stopping = true;
    try {
      await fn(why);
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.stdin.on('end', () => stop('parent gone'));
  process.stdin.on('error', () => stop('parent gone'));
  process.stdin.resume();
}
