/** Containers: Sequential (chained forward), ModuleList and ModuleDict (registered holders). */
import { Module } from './module';
import { Linear } from './linear';
import { ReLU } from './activation';
import { linear } from './functional/basic';
import type { Tensor } from '../tensor';
import { argError, describe, flockError } from '../errors';

type Callable = { forward(x: unknown): unknown };

/** Runs its modules in order, each on the previous one's output. Children are named '0', '1', …. */
export class Sequential extends Module {
  constructor(...modules: Module[]) {
    super();
    modules.forEach((m, i) => this.append(m, i));
  }

  private append(m: Module, i: number): void {
    if (!(m instanceof Module)) throw argError('Sequential', `argument ${i} must be a Module, got ${describe(m)}`);
    (this as unknown as Record<string, Module>)[String(i)] = m;
  }

  get length(): number {
    return [...this.children()].length;
  }

  at(i: number): Module {
    if (!Number.isInteger(i)) throw argError('Sequential.at', `index must be an integer, got ${describe(i)}`);
    const kids = [...this.children()];
    const m = kids[i < 0 ? i + kids.length : i];
    if (!m) throw flockError('ERR_INDEX', 'Sequential.at', `index ${i} is out of range for ${kids.length} modules`);
    return m;
  }

  forward<T>(x: T): T {
    return runChain([...this.children()], x) as T;
  }
}

/** Whether `m` is exactly a `cls` whose forward is the class's own (not a subclass, nor replaced). */
function plain<C extends abstract new (...args: never[]) => Module>(m: Module, cls: C): m is InstanceType<C> {
  return m.constructor === cls && (m as unknown as Callable).forward === (cls.prototype as Callable).forward;
}

/**
 * Runs `mods` in order, each on the previous one's output (Sequential's forward, and
 * checkpointSequential's segments). A Linear followed at once by a ReLU runs as one linear with the
 * ReLU fused into its bias pass: the same values and gradients, one kernel less each way, and the
 * pre-activation, which nothing outside the chain can see, is never kept.
 */
export function runChain(mods: readonly Module[], x: unknown): unknown {
  let y = x;
  for (let i = 0; i < mods.length; i++) {
    const m = mods[i];
    const next = mods[i + 1];
    if (next && plain(m, Linear) && plain(next, ReLU)) {
      y = linear(y as Tensor, m.weight, m.bias, { activation: 'relu' });
      i++;
    } else y = (m as unknown as Callable).forward(y);
  }
  return y;
}

/** A list of modules whose parameters belong to the parent; forward is yours to write. */
export class ModuleList extends Module {
  constructor(modules: Module[] = []) {
    super();
    if (!Array.isArray(modules)) throw argError('ModuleList', `modules must be an array of Modules, got ${describe(modules)}`);
    for (const m of modules) this.push(m);
  }

  push(m: Module): this {
    if (!(m instanceof Module)) throw argError('ModuleList.push', `expected a Module, got ${describe(m)}`);
    (this as unknown as Record<string, Module>)[String(this.length)] = m;
    return this;
  }

  get length(): number {
    return [...this.children()].length;
  }

  at(i: number): Module {
    const kids = [...this.children()];
    const m = Number.isInteger(i) ? kids[i < 0 ? i + kids.length : i] : undefined;
    if (!m)
      throw flockError(
        Number.isInteger(i) ? 'ERR_INDEX' : 'ERR_ARG',
        'ModuleList.at',
        `index ${describe(i)} is out of range for ${kids.length} modules`,
      );
    return m;
  }

  [Symbol.iterator](): Iterator<Module> {
    return this.children();
  }

  forward(): never {
    throw argError('ModuleList.forward', 'a ModuleList has no forward; iterate over it in your own module');
  }
}

/** Modules by name; names become state-dict prefixes. */
export class ModuleDict extends Module {
  constructor(modules: Record<string, Module> = {}) {
    super();
    if (modules === null || typeof modules !== 'object' || Array.isArray(modules))
      throw argError('ModuleDict', `modules must be an object of Modules by name, got ${describe(modules)}`);
    for (const [k, m] of Object.entries(modules)) this.set(k, m);
  }

  set(name: string, m: Module): this {
    if (!(m instanceof Module)) throw argError('ModuleDict.set', `'${name}' must be a Module, got ${describe(m)}`);
    if (typeof name !== 'string' || name === '' || name.includes('.'))
      throw argError('ModuleDict.set', `name must be a non-empty string without dots, got ${describe(name)}`);
    if (name.startsWith('_') || name in Module.prototype || name === 'training')
      throw argError('ModuleDict.set', `'${name}' is a reserved name`);
    (this as unknown as Record<string, Module>)[name] = m;
    return this;
  }

  get(name: string): Module | undefined {
    for (const [k, m] of this.namedChildren()) if (k === name) return m;
    return undefined;
  }

  keys(): string[] {
    return Array.from(this.namedChildren(), ([k]) => k);
  }

  forward(): never {
    throw argError('ModuleDict.forward', 'a ModuleDict has no forward; look modules up in your own module');
  }
}
