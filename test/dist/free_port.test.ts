/**
 * Test ports stay below the kernel's ephemeral range: a port inside it can already be the local end
 * of an outgoing connection, and a store listening there failed with EADDRINUSE.
 */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from './harness';

test('freePort never picks a port of the ephemeral range', () => {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  for (let i = 0; i < 2000; i++) {
    const p = freePort();
    assert.ok(Number.isInteger(p) && p >= 1024 && p < low, `port ${p} (ephemeral range starts at ${low})`);
  }
});

test.run();
