/** Prints what a fresh process sees of its CPU devices; run by devices_env.test.ts with different environments. */
import * as fl from '../lib/index';

const out: Record<string, unknown> = {};
const mode = process.argv[2];
if (mode === 'set-after-use') {
  fl.ones([4]).sum().dataSync();
  try {
    fl.setCpuDeviceCount(2);
  } catch (e) {
    out.error = { code: (e as { code?: string }).code, message: (e as Error).message };
  }
} else if (mode === 'set-before-use') {
  fl.setCpuDeviceCount(3);
}
out.count = fl.cpuDeviceCount();
out.devices = fl.cpuDevices();
out.memory = Object.keys(fl.memory()).filter((k) => k.startsWith('cpu'));
out.threads = fl.getNumThreads();
const last = out.devices as string[];
out.sum = Number(
  fl
    .arange(0, 10, 1, { dtype: 'f64', device: last[last.length - 1] })
    .sum()
    .dataSync()[0],
);
console.log(JSON.stringify(out));
