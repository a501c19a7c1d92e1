/** Command-line flags of the benches: `--name value` anywhere after the script. */

/** The value after `--name`, or undefined when the flag is absent. */
export function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** `--name value` as a string, or `fallback`. */
export function stringFlag(name: string, fallback: string): string {
  return flag(name) ?? fallback;
}

/** `--name N` as a number, or `fallback`. */
export function numberFlag(name: string, fallback: number): number {
  const v = flag(name);
  return v === undefined ? fallback : Number(v);
}
