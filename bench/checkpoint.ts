/**
 * Save and load throughput of a state dict (default 1 GB in 8 tensors of 128 MB) next to `cp` of
 * the same bytes, in the same run, and the peak resident memory each adds.
 *   npm run bench -- checkpoint [--mb 1024] [--tensors 8] [--rounds 3] [--dir /tmp]
 * One JSON line per measurement, then a summary line per op:
 *   save vs `cp file dir/copy` and vs `cp` + fsync of the copy (save fsyncs: the fair anchor);
 *   load (file -> tensors) vs `cp file /dev/shm/copy` (file -> memory), both from the page cache.
 * Peak RSS is the process's high-water mark (VmHWM, reset through /proc/self/clear_refs) minus the
 * resident size before the op; the goal is at most 1.1x the largest tensor above the resident model.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../lib/index';
import { stringFlag } from './shared/args';

const mb = Number(stringFlag('mb', '1024'));
const count = Number(stringFlag('tensors', '8'));
const rounds = Number(stringFlag('rounds', '3'));
const dir = mkdtempSync(join(stringFlag('dir', tmpdir()), 'flockml-bench-ckpt-'));
const shm = '/dev/shm';

function status(field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Runs `fn` and returns its seconds and the peak RSS it added over the RSS before it. */
async function measured(fn: () => Promise<unknown>): Promise<{ s: number; peakOver: number }> {
  writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM to the current RSS
  const before = status('VmRSS');
  const t0 = performance.now();
  await fn();
  const s = (performance.now() - t0) / 1000;
  return { s, peakOver: status('VmHWM') - before };
}

function timed(cmd: string, args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
  return (performance.now() - t0) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const gbps = (bytes: number, s: number) => +(bytes / s / 1e9).toFixed(3);
const mib = (b: number) => +(b / 2 ** 20).toFixed(1);

async function main(): Promise<void> {
  const per = Math.floor((mb << 20) / count / 4);
  const state: Record<string, fl.Tensor> = {};
  for (let i = 0; i < count; i++) state[`layers.${i}.weight`] = fl.full([per], i + 0.5);
  await fl.sync();
  const bytes = per * 4 * count;
  const largest = per * 4;
  const path = join(dir, 'state.safetensors');
  const copy = join(dir, 'copy.bin');
  const shmCopy = join(shm, `flockml-bench-${process.pid}.bin`);
  await fl.save(state, path); // warm-up: file system, page cache
  const res: Record<string, number[]> = { save: [], cp: [], cpFsync: [], load: [], cpToMemory: [], savePeak: [], loadPeak: [] };
  for (let r = 0; r < rounds; r++) {
    // Rounds alternate the op and its anchors so both see the same machine.
    const save = await measured(() => fl.save(state, path));
    res.save.push(save.s);
    res.savePeak.push(save.peakOver);
    rmSync(copy, { force: true });
    res.cp.push(timed('cp', [path, copy]));
    rmSync(copy, { force: true });
    res.cpFsync.push(timed('sh', ['-c', `cp "${path}" "${copy}" && sync "${copy}"`]));
    rmSync(copy, { force: true });
    let loaded: Record<string, fl.Tensor> = {};
    const load = await measured(async () => (loaded = await fl.load(path)));
    res.load.push(load.s);
    res.loadPeak.push(load.peakOver);
    for (const t of Object.values(loaded)) t.dispose();
    fl.emptyCache('cpu');
    res.cpToMemory.push(timed('cp', [path, shmCopy]));
    rmSync(shmCopy, { force: true });
    console.log(
      JSON.stringify({
        bench: 'checkpoint',
        round: r,
        bytes,
        save_s: +save.s.toFixed(3),
        cp_s: +res.cp[r].toFixed(3),
        cp_fsync_s: +res.cpFsync[r].toFixed(3),
        load_s: +load.s.toFixed(3),
        cp_to_memory_s: +res.cpToMemory[r].toFixed(3),
        save_peak_over_mib: mib(save.peakOver),
        load_peak_over_mib: mib(load.peakOver),
      }),
    );
  }
  const fileBytes = statSync(path).size;
  const save = median(res.save),
    load = median(res.load);
  console.log(
    JSON.stringify({
      bench: 'checkpoint',
      op: 'save',
      bytes: fileBytes,
      tensors: count,
      gbps: gbps(fileBytes, save),
      anchor_cp_gbps: gbps(fileBytes, median(res.cp)),
      anchor_cp_fsync_gbps: gbps(fileBytes, median(res.cpFsync)),
      vs_cp: +(median(res.cp) / save).toFixed(2),
      vs_cp_fsync: +(median(res.cpFsync) / save).toFixed(2),
      peak_rss_over_resident_mib: mib(median(res.savePeak)),
      largest_tensor_mib: mib(largest),
      rss_goal_met: median(res.savePeak) <= 1.1 * largest,
    }),
  );
  console.log(
    JSON.stringify({
      bench: 'checkpoint',
      op: 'load',
      bytes: fileBytes,
      tensors: count,
      gbps: gbps(fileBytes, load),
      anchor_cp_to_memory_gbps: gbps(fileBytes, median(res.cpToMemory)),
      vs_cp: +(median(res.cpToMemory) / load).toFixed(2),
      peak_rss_over_resident_mib: mib(median(res.loadPeak)),
      model_mib: mib(bytes),
      largest_tensor_mib: mib(largest),
      // Loading makes the model resident: the goal is the model plus at most 1.1x the largest tensor.
      rss_goal_met: median(res.loadPeak) <= bytes + 1.1 * largest,
    }),
  );
  rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  rmSync(dir, { recursive: true, force: true });
  console.error(e);
  process.exit(1);
});
