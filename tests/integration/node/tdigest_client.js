// node-redis v4 with @redis/bloom against a server, as an application would use TDIGEST.*:
// client.tDigest's create, add, merge (COMPRESSION, OVERRIDE), min, max, quantile, cdf,
// trimmedMean, rank, revRank, byRank, byRevRank, info and reset, and sendCommand for commands no
// method sends as they are. Reads its steps (JSON) on stdin, from test_tdigest_clients.py:
//   {"m": method, "a": [key, ...], "opts": {...}}   a client.tDigest call
//   {"raw": [hex, ...]}                             a command sent as it is
// Values come as text: a number where String(Number(text)) is that text, else the text itself
// (both go out as the same bytes). Prints a JSON array: each step's result, or {error: message}.
// In "multi" mode every step goes into one MULTI and the output is exec()'s result.
//
//   node tdigest_client.js PORT plain|multi < steps.json
'use strict';

const { createClient } = require('redis');

// Replies as JSON: an error (thrown, or an element of a reply) as {error: message}, a failed
// MULTI with its replies; NaN, the infinities and -0 (which JSON cannot hold) as text.
function plain(value) {
  if (value instanceof Error) {
    const out = { error: value.message };
    if (value.replies) out.replies = plain(value.replies);
    if (value.errorIndexes) out.errorIndexes = value.errorIndexes;
    return out;
  }
  if (typeof value === 'number' && (!Number.isFinite(value) || Object.is(value, -0))) {
    return Object.is(value, -0) ? '-0' : String(value);
  }
  if (Buffer.isBuffer(value)) return { hex: value.toString('hex') };
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  return value;
}

function asValue(text) {
  const n = Number(text);
  return String(n) === text ? n : text;
}

function values(list) {
  return list.map(asValue);
}

// The arguments of a client.tDigest call.
function callArgs(step) {
  const [key, ...rest] = step.a;
  switch (step.m) {
    case 'create':
    case 'merge': {
      const opts = {};
      if (step.opts.COMPRESSION !== undefined) opts.COMPRESSION = asValue(step.opts.COMPRESSION);
      if (step.opts.OVERRIDE) opts.OVERRIDE = true;
      return step.m === 'create' ? [key, opts] : [key, rest[0], opts];
    }
    case 'trimmedMean':
      return [key, asValue(rest[0]), asValue(rest[1])];
    case 'add': case 'quantile': case 'cdf': case 'rank': case 'revRank': case 'byRank':
    case 'byRevRank':
      return [key, values(rest[0])];
    default:
      return [key];
  }
}

function rawArgs(step) {
  return step.raw.map((hex) => Buffer.from(hex, 'hex'));
}

async function plainSteps(client, steps) {
  const out = [];
  for (const step of steps) {
    try {
      if (step.raw) out.push(plain(await client.sendCommand(rawArgs(step))));
      else out.push(plain(await client.tDigest[step.m](...callArgs(step))));
    } catch (err) {
      out.push(plain(err));
    }
  }
  return out;
}

async function multiSteps(client, steps) {
  let multi = client.multi();
  for (const step of steps) {
    multi = step.raw ? multi.addCommand(rawArgs(step)) : multi.tDigest[step.m](...callArgs(step));
  }
  try {
    return plain(await multi.exec());
  } catch (err) {
    return plain(err);
  }
}

async function main() {
  const [port, mode] = [Number(process.argv[2]), process.argv[3] || 'plain'];
  const steps = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const client = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } });
  client.on('error', (err) => console.error('client error:', err.message));
  await client.connect();
  const out = mode === 'multi' ? await multiSteps(client, steps) : await plainSteps(client, steps);
  await client.quit();
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
