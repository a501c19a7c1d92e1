/** Containers: Sequential (chained forward), ModuleList and ModuleDict (registered holders). */
import { Module } from './module';
import { errorOf } from '../errors';

type Callable = { forward(x: unknown): unknown };

/** Runs its modules in order, each on the previous one's output. Children are named '0', '1', …. */
export class Sequential extends Module {
  constructor(...modules: Module[]) {
    super();
    modules.forEach((m, i) => this.append(m, i));
  }

  private append(m: Module, i: number): void {
    if (!(m instanceof Module)) throw Object.assign(new TypeError(`Sequential: argument ${i} is not a Module`), { code: 'ERR_ARG' });
    (this as unknown as Record<string, Module>)[String(i)] = m;
  }

  get length(): number {
    return [...this.children()].length;
  }

  at(i: number): Module {
    const kids = [...this.children()];
    const m = kids[i < 0 ? i + kids.length : i];
    if (!m) throw Object.assign(new RangeError(`Sequential: index ${i} is out of range for ${kids.length} modules`), { code: 'ERR_INDEX' });
    return m;
  }

  forward<T>(x: T): T {
    let y: unknown = x;
    for (const m of this.children()) y = (m as unknown as Callable).forward(y);
    return y as T;
  }
}

/** A list of modules whose parameters belong to the parent; forward is yours to write. */
export class ModuleList extends Module {
  constructor(modules: Module[] = []) {
    super();
    for (const m of modules) this.push(m);
  }

  push(m: Module): this {
    if (!(m instanceof Module)) throw Object.assign(new TypeError('ModuleList: expected a Module'), { code: 'ERR_ARG' });
    (this as unknown as Record<string, Module>)[String(this.length)] = m;
    return this;
  }

  get length(): number {
    return [...this.children()].length;
  }

  at(i: number): Module {
    return [...this.children()][i < 0 ? i + this.length : i];
  }

  [Symbol.iterator](): Iterator<Module> {
    return this.children();
  }

  forward(): never {
    throw Object.assign(new TypeError('ModuleList has no forward; iterate over it in your own module'), { code: 'ERR_ARG' });
  }
}

/** Modules by name; names become state-dict prefixes. */
export class ModuleDict extends Module {
  constructor(modules: Record<string, Module> = {}) {
    super();
    for (const [k, m] of Object.entries(modules)) this.set(k, m);
  }

  set(name: string, m: Module): this {
    if (!(m instanceof Module)) throw Object.assign(new TypeError(`ModuleDict: '${name}' is not a Module`), { code: 'ERR_ARG' });
    if (name.startsWith('_') || name in Module.prototype || name === 'training')
      throw errorOf('ERR_RANGE', `ModuleDict: '${name}' is a reserved name`);
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
    throw Object.assign(new TypeError('ModuleDict has no forward; look modules up in your own module'), { code: 'ERR_ARG' });
  }
}
