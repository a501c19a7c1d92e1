/** `flockml trace merge a.json b.json -o out.json`: one trace with a process per rank. */
import { flockError } from '../errors';
import { mergeTraces, readTrace, writeTrace } from '../profiler/trace';

export function trace(argv: string[]): number {
  const [sub, ...rest] = argv;
  if (sub !== 'merge')
    throw flockError('ERR_ARG', 'trace', `unknown subcommand ${sub ?? '(none)'}; usage: flockml trace merge a.json b.json -o out.json`);
  const inputs: string[] = [];
  let out: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '-o' || rest[i] === '--output') out = rest[++i];
    else if (rest[i].startsWith('-')) throw flockError('ERR_ARG', 'trace merge', `unknown option ${rest[i]}`);
    else inputs.push(rest[i]);
  }
  if (!out) throw flockError('ERR_ARG', 'trace merge', 'no output given (-o out.json)');
  if (inputs.length === 0) throw flockError('ERR_ARG', 'trace merge', 'no input traces given');
  const merged = mergeTraces(inputs.map(readTrace));
  writeTrace(out, merged);
  const pids = new Set(merged.traceEvents.map((e) => e.pid));
  console.log(JSON.stringify({ output: out, inputs: inputs.length, processes: pids.size, events: merged.traceEvents.length }));
  return 0;
}
