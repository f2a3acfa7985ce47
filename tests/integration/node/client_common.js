// What the node-redis clients of the integration tests (cf_, cms_, topk_ and tdigest_client.js)
// share: replies turned into JSON, the connection to the proxy, the recorder of named steps and
// the way a client fails.
'use strict';

// `value` as JSON: `leaf(value)` first turns what it knows (an error, a Buffer, a number JSON
// cannot hold; undefined for anything else), then arrays and objects are walked element by
// element.
function toPlain(value, leaf) {
  const known = leaf(value);
  if (known !== undefined) return known;
  if (Array.isArray(value)) return value.map((v) => toPlain(v, leaf));
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = toPlain(v, leaf);
    return out;
  }
  return value;
}

// A client connected to 127.0.0.1:`port` that never reconnects (a dropped connection fails the
// steps); its errors are logged on stderr.
async function connect(port) {
  const { createClient } = require('redis');
  const client = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } });
  client.on('error', (err) => console.error('client error:', err.message));
  await client.connect();
  return client;
}

// out: {step name: {ok: plain(result)} or plain(the error thrown)}, filled by step(name, fn).
function stepRecorder(plain) {
  const out = {};
  const step = async (name, fn) => {
    try {
      out[name] = { ok: plain(await fn()) };
    } catch (err) {
      out[name] = plain(err);
    }
  };
  return { out, step };
}

// Runs `main`; a failure is printed on stderr and exits 1.
function run(main) {
  main().catch((err) => {
    console.error(err && err.stack ? err.stack : err);
    process.exit(1);
  });
}

module.exports = { connect, run, stepRecorder, toPlain };
