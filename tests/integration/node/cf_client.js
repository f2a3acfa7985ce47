// node-redis v4 with @redis/bloom against bloomproxy, as an application would use CF.*: reserve
// with its options, add, addNX, insert/insertNX (CAPACITY, NOCREATE), exists, count, del, info,
// scanDump/loadChunk with binary buffers (a filter copied chunk by chunk), MULTI (one that
// succeeds, one with errors in place, one Redis aborts) and the errors a caller sees. Prints one
// JSON object {step: result}; test_cf_clients.py computes what each step must give.
//
//   node cf_client.js PORT PREFIX
'use strict';

const { commandOptions } = require('redis');

const { connect, run, stepRecorder, toPlain } = require('./client_common');

// Replies as JSON: an error (thrown, or an element of an array reply) as {error: message}; a
// failed MULTI also with its replies; a Buffer as hex.
function plain(value) {
  return toPlain(value, (v) => {
    if (Buffer.isBuffer(v)) return v.toString('hex');
    if (!(v instanceof Error)) return undefined;
    const out = { error: v.message };
    if (v.replies) out.replies = plain(v.replies);
    return out;
  });
}

// Every SCANDUMP reply of a walk from iterator 0, the final {iterator: 0, chunk: null} included.
async function scanDumpAll(client, key) {
  const replies = [];
  let iterator = 0;
  do {
    const reply = await client.cf.scanDump(commandOptions({ returnBuffers: true }), key, iterator);
    replies.push(reply);
    iterator = reply.iterator;
  } while (iterator !== 0);
  return replies;
}

async function filterSteps(client, k, step) {
  const f = k('f');
  await step('reserve', () => client.cf.reserve(f, 100,
    { BUCKETSIZE: 4, MAXITERATIONS: 30, EXPANSION: 2 }));
  await step('info', () => client.cf.info(f));
  await step('reserveAgain', () => client.cf.reserve(f, 100));
  await step('reserveRange', () => client.cf.reserve(k('r'), 3));
  await step('reserveBucketSize', () => client.cf.reserve(k('r'), 1000, { BUCKETSIZE: 256 }));
  await step('add', () => client.cf.add(f, 'a'));
  await step('addDup', () => client.cf.add(f, 'a'));
  await step('addBinary', () => client.cf.add(f, Buffer.from([0, 255, 13, 10])));
  await step('addNX', () => client.cf.addNX(f, 'a'));
  await step('addNXNew', () => client.cf.addNX(f, 'b'));
  const items = Array.from({ length: 200 }, (_, i) => `n${i}`);
  await step('insertMany', () => client.cf.insert(f, items));
  await step('insertNX', () => client.cf.insertNX(f, ['a', 'c', 'c']));
  await step('exists', () => client.cf.exists(f, 'c'));
  await step('existsBinary', () => client.cf.exists(f, Buffer.from([0, 255, 13, 10])));
  await step('existsNot', () => client.cf.exists(f, 'never'));
  await step('count', () => client.cf.count(f, 'a'));
  await step('del', () => client.cf.del(f, 'a'));
  await step('delAbsent', () => client.cf.del(f, 'never'));
  await step('countAfterDel', () => client.cf.count(f, 'a'));
  await step('infoAfter', () => client.cf.info(f));
  await step('insertCapacity', () => client.cf.insert(k('auto'), ['x', 'y'], { CAPACITY: 500 }));
  await step('infoCapacity', () => client.cf.info(k('auto')));
  await step('insertNoCreate', () => client.cf.insert(k('none'), 'x', { NOCREATE: true }));
  await step('insertCapacityRange', () => client.cf.insert(k('none'), 'x', { CAPACITY: 3 }));
}

async function dumpSteps(client, k, step) {
  const f = k('f');
  const copy = k('copy');
  const dump = await scanDumpAll(client, f);
  await step('scanDump', () => dump);
  await step('loadChunks', async () => {
    const out = [];
    for (const { iterator, chunk } of dump) {
      if (iterator !== 0) out.push(await client.cf.loadChunk(copy, iterator, chunk));
    }
    return out;
  });
  await step('infoCopy', () => client.cf.info(copy));
  await step('existsCopy', () => Promise.all(['b', 'c', 'n7', Buffer.from([0, 255, 13, 10]),
    'never'].map((item) => client.cf.exists(copy, item))));
  await step('addCopyOnly', () => client.cf.add(copy, 'copy-only'));
  await step('existsSrcCopyOnly', () => client.cf.exists(f, 'copy-only'));
  await step('scanDumpBad', () => client.cf.scanDump(f, -1));
  await step('loadChunkHeader', () => client.cf.loadChunk(k('new'), 1, Buffer.from('short')));
}

async function multiSteps(client, k, step) {
  const t = k('t');
  await step('multi', () => client.multi()
    .cf.reserve(t, 64).cf.add(t, 'x').cf.insert(t, ['x', 'y']).cf.count(t, 'x')
    .cf.exists(t, 'y')
    .exec());
  await step('multiFailed', () => client.multi()
    .cf.add(t, 'z').set(k('s'), 'v').cf.add(k('s'), 'x').cf.reserve(t, 64).cf.count(t, 'z')
    .exec());
  // A wrong arity is refused while queuing: Redis discards the whole transaction.
  await step('multiAborted', () => client.multi()
    .cf.add(t, 'w').addCommand(['CF.ADD', t])
    .exec());
  await step('existsAborted', () => client.cf.exists(t, 'w'));
  await step('setPlain', () => client.set(k('plain'), 'v'));
  await step('addPlain', () => client.cf.add(k('plain'), 'x'));
  await step('existsPlain', () => client.cf.exists(k('plain'), 'x'));
  await step('delPlain', () => client.cf.del(k('plain'), 'x'));
  await step('type', () => client.type(k('f')));
}

async function main() {
  const [port, prefix] = [Number(process.argv[2]), process.argv[3] || 'nd'];
  const client = await connect(port);
  const k = (name) => `${prefix}:${name}`;
  const { out, step } = stepRecorder(plain);
  await filterSteps(client, k, step);
  await dumpSteps(client, k, step);
  await multiSteps(client, k, step);
  await client.quit();
  process.stdout.write(JSON.stringify(out) + '\n');
}

run(main);
