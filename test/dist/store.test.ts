/** The rendezvous store: set/get/add/wait/delete/barrier, timeouts, and refusal of a wrong token. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Store } from '../../lib/distributed/store';
import { expectAllOk, freePort, rejection, runRanks } from './harness';

test('set, get, add, check, delete and wait in one process', async () => {
  const port = freePort();
  const server = await Store.connect({ host: '127.0.0.1', port, token: 's3cret', isServer: true });
  const client = await Store.connect({ host: '127.0.0.1', port, token: 's3cret' });
  const waiting = client.wait(['a', 'b'], 5000);
  await server.set('a', '1');
  assert.is(await client.check(['a', 'b']), false);
  await server.set('b', 'two');
  await waiting;
  assert.is(await client.get('b'), 'two');
  assert.is(await client.add('n'), 1);
  assert.is(await server.add('n', 41), 42);
  assert.is(await client.delete('a'), true);
  assert.is(await client.delete('a'), false);
  assert.is(await client.check(['a']), false);
  await client.close();
  await server.close();
});

test('wait and get time out with ERR_TIMEOUT naming the missing key', async () => {
  const port = freePort();
  const server = await Store.connect({ host: '127.0.0.1', port, token: 't', isServer: true });
  const started = Date.now();
  const e = await rejection(server.wait(['never'], 300));
  assert.is(e.code, 'ERR_TIMEOUT');
  assert.match(e.message, /never/);
  assert.ok(Date.now() - started < 3000);
  assert.is((await rejection(server.get('missing', 200))).code, 'ERR_TIMEOUT');
  await server.close();
});

test('a wrong token is refused with ERR_AUTH', async () => {
  const port = freePort();
  const server = await Store.connect({ host: '127.0.0.1', port, token: 'right', isServer: true });
  const e = await rejection(Store.connect({ host: '127.0.0.1', port, token: 'wrong', timeoutMs: 2000 }));
  assert.is(e.code, 'ERR_AUTH');
  assert.match(e.message, /FLOCKML_TOKEN/);
  await server.set('still', 'works');
  assert.is(await server.get('still'), 'works');
  await server.close();
});

test('an empty token is rejected before connecting', async () => {
  const e = await rejection(Store.connect({ host: '127.0.0.1', port: freePort(), token: '' }));
  assert.is(e.code, 'ERR_ARG');
});

test('connecting to nobody times out', async () => {
  const e = await rejection(Store.connect({ host: '127.0.0.1', port: freePort(), token: 'x', timeoutMs: 400 }));
  assert.is(e.code, 'ERR_TIMEOUT');
});

test('two processes rendezvous through the store', async () => {
  expectAllOk(await runRanks('store_client.ts', 2, { timeoutMs: 30_000 }).done);
});

test.run();
