/** How the method files install their methods on Tensor's prototype. */
import { Tensor } from '../../tensor';

/** Defines the methods as class methods are: non-enumerable, writable, configurable. */
export function install(methods: Partial<Tensor> & ThisType<Tensor>): void {
  for (const [name, value] of Object.entries(methods))
    Object.defineProperty(Tensor.prototype, name, { value, writable: true, configurable: true, enumerable: false });
}

/** `f(2, 3)` or `f([2, 3])`: the list either way. */
export const listArgs = (args: number[] | [number[]]): number[] =>
  Array.isArray(args[0]) ? [...(args[0] as number[])] : (args as number[]);
