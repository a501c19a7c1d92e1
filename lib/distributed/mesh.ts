/**
 * Device meshes: the job's ranks laid out as an n-dimensional array (row-major, the last dimension
 * varying fastest, as torch.distributed.device_mesh), with one process group per line along each
 * dimension. A [dp, tp] mesh puts tensor-parallel peers on consecutive ranks (so on one host when
 * ranks are packed per host) and data-parallel replicas dp apart:
 *
 *   const mesh = await fl.distributed.deviceMesh([2, 2]);   // dims named 'dp', 'tp'
 *   const tp = mesh.group('tp');                             // this rank's tensor-parallel group
 *
 * Every rank creates every group, dimension by dimension in the same order (newGroup's contract),
 * and keeps the one group per dimension that holds it.
 */
import { argError, checkOptions, flockError } from '../errors';
import { intOption } from './errors';
import { type ProcessGroup, getRank, getWorldSize, isInitialized, newGroup } from './process_group';

/** Options of {@link deviceMesh}. */
export interface DeviceMeshOptions {
  /** One distinct name per dimension (default ['dp', 'tp'] for a 2-D mesh; none otherwise). */
  dimNames?: string[];
  /** Bound on connecting each group (default: initProcessGroup's timeoutMs). */
  timeoutMs?: number;
}

const OP = 'distributed.deviceMesh';

export class DeviceMesh {
  /** Ranks along each dimension; their product is the world size. */
  readonly shape: readonly number[];
  readonly dimNames: readonly string[] | null;
  /** This rank's index along each dimension. */
  readonly coordinate: readonly number[];
  /** This process's global rank. */
  readonly rank: number;
  readonly #groups: ProcessGroup[];
  readonly #lines: number[][];

  /** @internal use {@link deviceMesh}. */
  constructor(shape: number[], dimNames: string[] | null, rank: number, groups: ProcessGroup[], lines: number[][]) {
    if (
      !Array.isArray(shape) ||
      !shape.every((s) => Number.isInteger(s) && s > 0) ||
      !(dimNames === null || Array.isArray(dimNames)) ||
      !Number.isInteger(rank) ||
      !Array.isArray(groups) ||
      !Array.isArray(lines)
    )
      throw argError('DeviceMesh', 'a mesh is made by fl.distributed.deviceMesh(), not with new');
    this.shape = Object.freeze([...shape]);
    this.dimNames = dimNames ? Object.freeze([...dimNames]) : null;
    this.rank = rank;
    this.coordinate = Object.freeze(coordinateOf(rank, shape));
    this.#groups = groups;
    this.#lines = lines;
  }

  get ndim(): number {
    return this.shape.length;
  }

  /** The index of dimension `dim` (a name or an index; negative counts from the end). */
  dimIndex(dim: string | number): number {
    if (typeof dim === 'string') {
      const i = this.dimNames?.indexOf(dim) ?? -1;
      if (i < 0)
        throw flockError(
          'ERR_ARG',
          'DeviceMesh',
          `no dimension named '${dim}'` +
            (this.dimNames ? ` (dimensions: ${this.dimNames.join(', ')})` : ' (this mesh has no dimNames; pass an index)'),
        );
      return i;
    }
    if (!Number.isInteger(dim) || dim < -this.ndim || dim >= this.ndim)
      throw flockError('ERR_INDEX', 'DeviceMesh', `dimension ${String(dim)} is out of range for a ${this.ndim}-D mesh`);
    return dim < 0 ? dim + this.ndim : dim;
  }

  /** The process group of the ranks that share this rank's coordinates except along `dim`. */
  group(dim: string | number): ProcessGroup {
    return this.#groups[this.dimIndex(dim)];
  }

  /** Global ranks of {@link group}(dim), in group-rank order. */
  groupRanks(dim: string | number): readonly number[] {
    return this.#lines[this.dimIndex(dim)];
  }

  /** This rank's index along `dim` (its rank within {@link group}(dim)), as torch's get_local_rank. */
  localRank(dim: string | number): number {
    return this.coordinate[this.dimIndex(dim)];
  }

  /** Ranks along `dim`, or the whole mesh's rank count. */
  size(dim?: string | number): number {
    return dim === undefined ? this.shape.reduce((a, b) => a * b, 1) : this.shape[this.dimIndex(dim)];
  }

  toString(): string {
    const dims = this.shape.map((s, i) => (this.dimNames ? `${this.dimNames[i]}=${s}` : String(s)));
    return `DeviceMesh([${dims.join(', ')}], rank ${this.rank} at (${this.coordinate.join(', ')}))`;
  }
}

function coordinateOf(rank: number, shape: readonly number[]): number[] {
  const c = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    c[d] = rank % shape[d];
    rank = Math.floor(rank / shape[d]);
  }
  return c;
}

/** Every line of ranks along dimension `d`, in a fixed order (by the ranks' other coordinates). */
function linesAlong(shape: readonly number[], d: number): number[][] {
  const total = shape.reduce((a, b) => a * b, 1);
  const stride = shape.slice(d + 1).reduce((a, b) => a * b, 1);
  const lines: number[][] = [];
  for (let r = 0; r < total; r++) {
    if (coordinateOf(r, shape)[d] !== 0) continue;
    lines.push(Array.from({ length: shape[d] }, (_, i) => r + i * stride));
  }
  return lines;
}

/**
 * Lays the job's ranks out as a mesh of `shape` (its product must be the world size) and creates
 * the process groups along each dimension. Every rank must call it with the same arguments.
 */
export async function deviceMesh(shape: number[], options: DeviceMeshOptions = {}): Promise<DeviceMesh> {
  const o = checkOptions(OP, options, ['dimNames', 'timeoutMs']);
  if (!isInitialized()) throw flockError('ERR_ARG', OP, 'call initProcessGroup() first');
  if (!Array.isArray(shape) || shape.length === 0 || shape.some((s) => !Number.isInteger(s) || s < 1))
    throw flockError('ERR_ARG', OP, `shape must be a non-empty array of positive integers, got ${JSON.stringify(shape)}`);
  const world = getWorldSize();
  const total = shape.reduce((a, b) => a * b, 1);
  if (total !== world) throw flockError('ERR_SHAPE', OP, `a [${shape.join(', ')}] mesh holds ${total} ranks but the world has ${world}`);
  let names: string[] | null = shape.length === 2 ? ['dp', 'tp'] : null;
  if (o.dimNames !== undefined) {
    const n = o.dimNames;
    if (!Array.isArray(n) || n.length !== shape.length || n.some((s) => typeof s !== 'string' || s === '') || new Set(n).size !== n.length)
      throw flockError('ERR_ARG', OP, `dimNames must be ${shape.length} distinct non-empty strings, got ${JSON.stringify(n)}`);
    names = [...n];
  }
  const timeoutMs = o.timeoutMs === undefined ? undefined : intOption(OP, 'timeoutMs', o.timeoutMs, 1, 2 ** 30);
  const rank = getRank();
  const groups: ProcessGroup[] = [];
  const mine: number[][] = [];
  for (let d = 0; d < shape.length; d++) {
    for (const line of linesAlong(shape, d)) {
      const g = await newGroup(line, timeoutMs === undefined ? {} : { timeoutMs });
      if (g) {
        groups[d] = g;
        mine[d] = line;
      }
    }
  }
  return new DeviceMesh(shape, names, rank, groups, mine);
}
