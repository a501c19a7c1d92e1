/**
 * bench/lm.ts's serving figure: one process serves HTTP on 127.0.0.1 whose handler streams a
 * model's tokens (model.stream, one chunk per token) while a client in the same process makes
 * `streams` requests at once; perf_hooks.monitorEventLoopDelay measures how long the event loop
 * waited meanwhile. The same monitor over an idle stretch first gives what the machine alone costs.
 */
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type * as fl from '../../lib';

export interface ServeResult {
  streams: number;
  new_tokens: number;
  /** Event-loop delay while the streams ran, ms. */
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** The same over an idle stretch of the same process before, ms. */
  idle_p99_ms: number;
  /** Tokens of all streams per second, and the mean time to each stream's first token. */
  tokens_per_s: number;
  first_token_ms: number;
}

const ms = (ns: number) => Number((ns / 1e6).toFixed(2));

/** A histogram of event-loop delay (1 ms resolution) over `run`. */
async function delays<T>(run: () => Promise<T>): Promise<[T, ReturnType<typeof monitorEventLoopDelay>]> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  try {
    return [await run(), h];
  } finally {
    h.disable();
  }
}

/** GET `path` and resolve with the body's chunk count, and the ms to the first chunk and to the end. */
function fetchStream(port: number, path: string): Promise<{ chunks: number; firstMs: number; endMs: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let chunks = 0;
      let firstMs = Number.NaN;
      res.on('data', () => {
        if (chunks++ === 0) firstMs = performance.now() - t0;
      });
      res.on('end', () => resolve({ chunks, firstMs, endMs: performance.now() - t0 }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

export async function serveStreams(model: fl.models.CausalLM, streams: number, newTokens: number, prompt: number[]): Promise<ServeResult> {
  const server = createServer(async (req, res) => {
    const seed = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('seed') ?? 0);
    res.writeHead(200, { 'content-type': 'text/plain' });
    try {
      for await (const { tokens } of model.stream([prompt], { maxNewTokens: newTokens, doSample: true, seed, stopTokens: [] }))
        res.write(`${tokens[0]} `);
    } finally {
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const [, idle] = await delays(() => new Promise((r) => setTimeout(r, 500)));
    const t0 = performance.now();
    const [got, busy] = await delays(() => Promise.all(Array.from({ length: streams }, (_, i) => fetchStream(port, `/?seed=${i}`))));
    const seconds = (performance.now() - t0) / 1000;
    const tokens = got.reduce((n, g) => n + g.chunks, 0);
    if (tokens !== streams * newTokens) throw new Error(`the streams sent ${tokens} tokens, expected ${streams * newTokens}`);
    return {
      streams,
      new_tokens: newTokens,
      p50_ms: ms(busy.percentile(50)),
      p99_ms: ms(busy.percentile(99)),
      max_ms: ms(busy.max),
      idle_p99_ms: ms(idle.percentile(99)),
      tokens_per_s: Number((tokens / seconds).toFixed(1)),
      first_token_ms: Number((got.reduce((n, g) => n + g.firstMs, 0) / streams).toFixed(1)),
    };
  } finally {
    server.close();
  }
}
