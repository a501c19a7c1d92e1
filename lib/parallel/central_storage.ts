/**
 * CentralStorage (TensorFlow's CentralStorageStrategy): the parameters and the optimizer state
 * live on one storage device (the CPU by default) and nowhere else between steps. Each forward
 * copies the current parameters to the compute devices, each of which runs its share of the batch;
 * after backward the gradients are copied back, summed on the storage device and the update runs
 * there.
 *
 *   const cs = new fl.parallel.CentralStorage(model, { devices: ['cuda:0', 'cuda:1'] });
 *   const opt = cs.optimizer(fl.optim.SGD, { lr: 0.1 });   // on the storage device
 *   const loss = lossFn(cs.forward(x), y.to(cs.outputDevice));
 *   loss.backward();
 *   await cs.step();   // reduce onto storage, opt.step() there
 *   opt.zeroGrad();
 */
import { Tensor } from '../tensor';
import { keep, tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { ready } from '../device';
import { cat } from '../ops/shape';
import { copy_ } from '../ops/elementwise';
import type { Module } from '../nn/module';
import { argError, checkOptions, describe, flockError } from '../errors';
import { normalizeDevice } from '../device';
import { checkDevices, copyTrainingMode, replicate, scatter } from './devices';

export interface CentralStorageOptions {
  /** Compute devices, one replica each. */
  devices: string[];
  /** Where parameters and optimizer state live (default 'cpu'). */
  storage?: string;
}

type Forward = { forward(...inputs: never[]): unknown };

export class CentralStorage<M extends Module & Forward> {
  readonly devices: string[];
  readonly storage: string;
  /** The model, on the storage device: its parameters are the ones the optimizer updates. */
  readonly module: M;
  /** Per compute device, the module whose parameters each forward overwrites with the stored ones. */
  readonly #replicas: M[];
  #optimizer: { step(): void } | null = null;

  constructor(model: M, options: CentralStorageOptions) {
    const op = 'CentralStorage';
    if (!model || typeof model.parameters !== 'function' || typeof model.forward !== 'function')
      throw argError(op, `model must be an nn.Module with a forward method, got ${describe(model)}`);
    const o = checkOptions(op, options, ['devices', 'storage']);
    this.devices = checkDevices(op, o.devices);
    this.storage = normalizeDevice(o.storage ?? 'cpu', op);
    this.module = model.to(this.storage);
    this.#replicas = this.devices.map((d) => replicate(model, d));
  }

  /** Where {@link forward} gathers the outputs (the first compute device): compute the loss there. */
  get outputDevice(): string {
    return this.devices[0];
  }

  /** The stored parameters (give these to an optimizer, or use {@link optimizer}). */
  parameters(): Tensor[] {
    return this.module.parameters();
  }

  /** The optimizer over the stored parameters; its state lives on the storage device. */
  optimizer<O extends { step(): void }, Opts>(Optimizer: new (params: Tensor[], options: Opts) => O, options: Opts): O {
    if (typeof Optimizer !== 'function')
      throw argError('CentralStorage.optimizer', `expected an optimizer class such as fl.optim.SGD, got ${describe(Optimizer)}`);
    const opt = new Optimizer(this.module.parameters(), options);
    this.#optimizer = opt;
    return opt;
  }

  /**
   * Copies the stored parameters and buffers to every compute device, splits each tensor
   * argument along dim 0 across them, and returns the outputs concatenated on {@link outputDevice}.
   */
  forward(...inputs: Parameters<M['forward']>): Tensor {
    this.#broadcast();
    const parts = scatter('CentralStorage.forward', inputs, this.devices);
    const outs: Tensor[] = [];
    parts.forEach((args, i) => {
      if (args.length === 0) return;
      const replica = this.#replicas[i];
      copyTrainingMode(this.module, replica);
      const out = (replica.forward as (...a: unknown[]) => unknown)(...args);
      if (!(out instanceof Tensor))
        throw argError('CentralStorage.forward', `the model's forward must return a Tensor, got ${describe(out)}`);
      outs.push(out.to(this.devices[0]));
    });
    return outs.length === 1 ? outs[0] : cat(outs, 0);
  }

  /**
   * Sums the compute devices' gradients onto the stored parameters' `.grad` (added to what is
   * there, as backward would) and copies the first replica's buffers back to storage.
   */
  reduceGradients(): void {
    const stored = this.module.parameters();
    const perReplica = this.#replicas.map((r) => r.parameters());
    noGrad(() =>
      tidy(() => {
        stored.forEach((p, j) => {
          let sum: Tensor | null = null;
          for (const params of perReplica) {
            const g = params[j].grad;
            if (!g) continue;
            const here = g.to(this.storage);
            sum = sum ? sum.add(here) : here === g ? g.clone() : here;
            g.dispose();
            params[j].grad = null;
          }
          if (!sum) return;
          const next = p.grad && !p.grad.isDisposed ? p.grad.add(sum) : sum;
          p.grad?.dispose();
          p.grad = keep(next);
        });
        const bufs = this.module.buffers();
        this.#replicas[0].buffers().forEach((b, j) => copy_(bufs[j], b.to(this.storage)));
      }),
    );
  }

  /** {@link reduceGradients}, then the optimizer's step on the storage device. */
  async step(): Promise<void> {
    if (!this.#optimizer)
      throw flockError('ERR_ARG', 'CentralStorage.step', 'create the optimizer with cs.optimizer(Class, options) first');
    this.reduceGradients();
    this.#optimizer.step();
    await ready();
  }

  #broadcast(): void {
    const stored = this.module.parameters();
    const bufs = this.module.buffers();
    noGrad(() =>
      tidy(() => {
        for (const r of this.#replicas) {
          const d = r.parameters();
          stored.forEach((p, j) => copy_(d[j], p.to(d[j].device)));
          r.buffers().forEach((b, j) => copy_(b, bufs[j].to(b.device)));
        }
      }),
    );
  }
}
