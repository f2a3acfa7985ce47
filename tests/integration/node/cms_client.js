// node-redis v4 with @redis/bloom against bloomproxy, as an application would use CMS.*:
// initByDim, initByProb, incrBy (one and several items), query, merge (names, and names with
// weights), info, and the errors a caller sees. Prints one JSON object {step: result};
// test_cms_clients.py computes what each step must give.
//
//   node cms_client.js PORT PREFIX
'use strict';

const { connect, run, stepRecorder, toPlain } = require('./client_common');

// Replies as JSON: an error (thrown, or an element of an array reply) as {error: message}.
function plain(value) {
  return toPlain(value, (v) => (v instanceof Error ? { error: v.message } : undefined));
}

async function main() {
  const [port, prefix] = [Number(process.argv[2]), process.argv[3] || 'nd'];
  const client = await connect(port);
  const k = (name) => `${prefix}:${name}`;
  const { out, step } = stepRecorder(plain);

  await step('initByDim', () => client.cms.initByDim(k('a'), 100, 5));
  await step('initByDimAgain', () => client.cms.initByDim(k('a'), 100, 5));
  await step('initByProb', () => client.cms.initByProb(k('p'), 0.001, 0.01));
  await step('infoProb', () => client.cms.info(k('p')));
  await step('incrByMany', () => client.cms.incrBy(k('a'), [
    { item: 'x', incrementBy: 3 }, { item: 'y', incrementBy: 4 }, { item: 'x', incrementBy: 5 },
  ]));
  await step('incrByOne', () => client.cms.incrBy(k('a'), { item: 'z', incrementBy: 7 }));
  await step('query', () => client.cms.query(k('a'), ['x', 'y', 'z', 'never']));
  await step('queryOne', () => client.cms.query(k('a'), 'x'));
  await step('initB', () => client.cms.initByDim(k('b'), 100, 5));
  await step('initM', () => client.cms.initByDim(k('m'), 100, 5));
  await step('incrByB', () => client.cms.incrBy(k('b'), [
    { item: 'x', incrementBy: 10 }, { item: 'w', incrementBy: 20 },
  ]));
  await step('merge', () => client.cms.merge(k('m'), [k('a'), k('b')]));
  await step('queryMerged', () => client.cms.query(k('m'), ['x', 'y', 'z', 'w']));
  await step('infoMerged', () => client.cms.info(k('m')));
  await step('mergeWeights', () => client.cms.merge(k('m'), [
    { name: k('a'), weight: 2 }, { name: k('b'), weight: 3 },
  ]));
  await step('queryWeighted', () => client.cms.query(k('m'), ['x', 'y', 'z', 'w']));
  await step('infoWeighted', () => client.cms.info(k('m')));
  await step('incrByOverflow', () => client.cms.incrBy(k('a'), [
    { item: 'big', incrementBy: 4294967296 }, { item: 'x', incrementBy: 1 },
  ]));
  await step('infoA', () => client.cms.info(k('a')));
  await step('queryMissing', () => client.cms.query(k('missing'), 'x'));
  await step('mergeMismatch', () => client.cms.merge(k('p'), [k('a')]));
  await step('setPlain', () => client.set(k('plain'), 'v'));
  await step('incrByPlain', () => client.cms.incrBy(k('plain'), { item: 'x', incrementBy: 1 }));
  await step('type', () => client.type(k('a')));

  await client.quit();
  process.stdout.write(JSON.stringify(out) + '\n');
}

run(main);
