// node-redis v4 with @redis/bloom against bloomproxy, as an application would use TOPK.*: reserve
// (with width/depth/decay options and without), add, incrBy (one pair and several), query,
// count, list, listWithCount, info, MULTI (one that succeeds, one with errors in place) and the
// errors a caller sees. Prints one JSON object {step: result}; test_topk_clients.py computes
// what each step must give.
//
//   node topk_client.js PORT PREFIX
'use strict';

const { connect, run, stepRecorder, toPlain } = require('./client_common');

// Replies as JSON: an error (thrown, or an element of an array reply) as {error: message}; a
// failed MULTI also with its replies.
function plain(value) {
  return toPlain(value, (v) => {
    if (!(v instanceof Error)) return undefined;
    const out = { error: v.message };
    if (v.replies) out.replies = plain(v.replies);
    return out;
  });
}

async function sketchSteps(client, k, step) {
  const f = k('f');
  await step('reserve', () => client.topK.reserve(f, 4, { width: 7, depth: 3, decay: 1 }));
  await step('info', () => client.topK.info(f));
  await step('reserveAgain', () => client.topK.reserve(f, 4));
  await step('reserveDecay', () => client.topK.reserve(k('bad'), 4,
    { width: 7, depth: 3, decay: 1.5 }));
  await step('reserveDefault', () => client.topK.reserve(k('d'), 2));
  await step('infoDefault', () => client.topK.info(k('d')));
  const items = Array.from({ length: 15 }, (_, i) => `n${i}`);
  await step('add', () => client.topK.add(f, items));
  await step('addOne', () => client.topK.add(f, 'n3'));
  await step('incrBy', () => client.topK.incrBy(f, [
    { item: 'n1', incrementBy: 9 }, { item: 'n4', incrementBy: 3 },
    { item: 'new', incrementBy: 12 }, { item: 'n1', incrementBy: 0 }]));
  await step('incrByOne', () => client.topK.incrBy(f, { item: 'n7', incrementBy: 5 }));
  const probes = items.concat(['new', 'never']);
  await step('query', () => client.topK.query(f, probes));
  await step('count', () => client.topK.count(f, probes));
  await step('list', () => client.topK.list(f));
  await step('listWithCount', () => client.topK.listWithCount(f));
  await step('infoAfter', () => client.topK.info(f));
}

async function wideSteps(client, k, step) {
  const w = k('w');
  // Items chosen by the test to sit in distinct buckets: exact at decay 0.9.
  const wide = JSON.parse(process.argv[4]);
  await step('wideReserve', () => client.topK.reserve(w, 3, { width: 1000, depth: 5, decay: 0.9 }));
  await step('wideIncrBy', () => client.topK.incrBy(w,
    wide.map((item, i) => ({ item, incrementBy: i + 1 }))));
  await step('wideListWithCount', () => client.topK.listWithCount(w));
  await step('wideCount', () => client.topK.count(w, wide));
  await step('wideInfo', () => client.topK.info(w));
}

async function multiSteps(client, k, step) {
  const t = k('t');
  await step('multi', () => client.multi()
    .topK.reserve(t, 2, { width: 20, depth: 2, decay: 1 })
    .topK.add(t, ['x', 'y', 'x'])
    .topK.query(t, ['x', 'z'])
    .topK.count(t, 'x')
    .topK.listWithCount(t)
    .exec());
  await step('multiFailed', () => client.multi()
    .topK.add(t, 'z').set(k('s'), 'v').topK.add(k('s'), 'x').topK.reserve(t, 2).topK.list(t)
    .exec());
  await step('addMissing', () => client.topK.add(k('none'), 'x'));
  await step('incrByBad', () => client.topK.incrBy(t, [
    { item: 'q', incrementBy: 1 }, { item: 'r', incrementBy: 100001 }]));
  await step('listMissing', () => client.topK.list(k('none')));
  await step('infoWrongType', () => client.topK.info(k('s')));
  await step('type', () => client.type(k('f')));
}

async function main() {
  const [port, prefix] = [Number(process.argv[2]), process.argv[3] || 'nd'];
  const client = await connect(port);
  const k = (name) => `${prefix}:${name}`;
  const { out, step } = stepRecorder(plain);
  await sketchSteps(client, k, step);
  await wideSteps(client, k, step);
  await multiSteps(client, k, step);
  await client.quit();
  process.stdout.write(JSON.stringify(out) + '\n');
}

run(main);
