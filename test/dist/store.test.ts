/** The rendezvous store: set/get/add/wait/delete/barrier, timeouts, and refusal of a wrong token. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect as tcpConnect, type Socket } from 'node:net';
import { Store } from '../../lib/distributed/store';
import { StoreServer } from '../../lib/distributed/store_server';
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

/** A raw TCP connection to the store that never says hello; resolves once connected. */
function stranger(port: number): Promise<Socket & { closedAt: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const sock = tcpConnect({ host: '127.0.0.1', port }) as Socket & { closedAt: Promise<number> };
    sock.closedAt = new Promise((r) => sock.on('close', () => r(Date.now())));
    sock.on('error', () => undefined);
    sock.resume(); // read what the server says, so its closing is seen
    sock.once('connect', () => resolve(sock));
    sock.once('error', reject);
  });
}

test('an unauthenticated client announcing a large frame is dropped at its header, before any body is buffered', async () => {
  const port = freePort();
  const server = await StoreServer.listen('127.0.0.1', port, 'tok');
  const sock = await stranger(port);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(1 << 20, 0); // 1 MiB: under the post-hello limit, far over a hello's
  const sent = Date.now();
  sock.write(head);
  const closed = await Promise.race([sock.closedAt, new Promise<number>((r) => setTimeout(() => r(-1), 3000))]);
  assert.ok(closed > 0, 'the connection was kept open, waiting for the body');
  assert.ok(closed - sent < 2000, `closed after ${closed - sent} ms`);
  await new Promise((r) => setTimeout(r, 50));
  assert.is(server.connections, 0);
  // The store still serves ranks that do present the token.
  const client = await Store.connect({ host: '127.0.0.1', port, token: 'tok', timeoutMs: 2000 });
  await client.set('k', 'v');
  assert.is(await client.get('k'), 'v');
  await client.close();
  await server.close(0);
});

test('connections over maxConnections are refused with ERR_STORE; authenticated ranks within the cap work', async () => {
  const port = freePort();
  const server = await Store.connect({ host: '127.0.0.1', port, token: 'tok', isServer: true, maxConnections: 3 });
  const a = await Store.connect({ host: '127.0.0.1', port, token: 'tok', timeoutMs: 2000 });
  const idle = await stranger(port); // the third: holds a place without authenticating
  const e = await rejection(Store.connect({ host: '127.0.0.1', port, token: 'tok', timeoutMs: 2000 }));
  assert.is(e.code, 'ERR_STORE', e.message);
  assert.match(e.message, /maxConnections/);
  const refused = await stranger(port);
  const closed = await Promise.race([refused.closedAt, new Promise<number>((r) => setTimeout(() => r(-1), 3000))]);
  assert.ok(closed > 0, 'an over-cap connection was kept');
  await a.set('x', '1');
  assert.is(await server.get('x'), '1');
  // A place freed is usable again.
  idle.destroy();
  await idle.closedAt;
  await new Promise((r) => setTimeout(r, 50));
  const b = await Store.connect({ host: '127.0.0.1', port, token: 'tok', timeoutMs: 2000 });
  assert.is(await b.get('x'), '1');
  await Promise.all([a.close(), b.close()]);
  await server.close();
});

test('an idle unauthenticated connection is closed after authTimeoutMs', async () => {
  const port = freePort();
  const server = await StoreServer.listen('127.0.0.1', port, 'tok', { authTimeoutMs: 300 });
  const sock = await stranger(port);
  const opened = Date.now();
  const closed = await Promise.race([sock.closedAt, new Promise<number>((r) => setTimeout(() => r(-1), 5000))]);
  assert.ok(closed > 0, 'the idle connection was kept');
  assert.ok(closed - opened >= 250 && closed - opened < 3000, `closed after ${closed - opened} ms`);
  await new Promise((r) => setTimeout(r, 50));
  assert.is(server.connections, 0);
  await server.close(0);
});

test('store options are validated: unknown keys (with a suggestion) and bad values throw ERR_ARG', async () => {
  const base = { host: '127.0.0.1', port: freePort(), token: 't' };
  let e = await rejection(Store.connect({ ...base, timeoutMS: 5 } as never));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /unknown option 'timeoutMS' \(did you mean 'timeoutMs'\?\)/);
  for (const bad of [{ maxConnections: 0 }, { authTimeoutMs: -1 }, { timeoutMs: 1.5 }, { port: 70000 }, { isServer: 'yes' }]) {
    e = await rejection(Store.connect({ ...base, ...bad } as never));
    assert.is(e.code, 'ERR_ARG', `${JSON.stringify(bad)}: ${e.message}`);
    assert.match(e.message, new RegExp(Object.keys(bad)[0]));
  }
});

test.run();
