/**
 * Checks a state dict against a module's own before anything is written: the keys, and for each
 * entry a live tensor of the same shape and kind. Module.loadStateDict and checkpoint.load share it.
 */
import { Tensor } from '../tensor';
import { tidy } from '../memory';
import { isFloating } from '../dtype';
import { describe, type ErrorCode } from '../errors';

/** What {@link checkStateDict} found: the copies a load makes (module tensor, value), and the keys it skips. */
export interface StateDictPlan {
  pairs: Array<[Tensor, Tensor]>;
  missingKeys: string[];
  unexpectedKeys: string[];
}

/**
 * Checks `state` against a module's own state dict `own` (its stateDict()) and changes nothing:
 * the keys (missing or unexpected ones are errors with `strict`), and for every entry that both
 * hold: a live tensor on each side, the same shape, and the same floating/integer kind. The
 * first problem is thrown as `fail(code, detail)`, the detail naming the entry.
 * Module.loadStateDict checks with it before writing; checkpoint.load before loading anything.
 */
export function checkStateDict(
  own: Record<string, Tensor>,
  state: Map<string, unknown>,
  strict: boolean,
  fail: (code: ErrorCode, detail: string) => Error,
): StateDictPlan {
  // Names of one tensor (tied weights) form a group: given under any one of its names, it is loaded.
  const groups = new Map<Tensor, string[]>();
  for (const [k, t] of Object.entries(own)) {
    const g = groups.get(t);
    if (g) g.push(k);
    else groups.set(t, [k]);
  }
  const missingKeys = [...groups.values()].filter((names) => !names.some((k) => state.has(k))).flat();
  const unexpectedKeys = [...state.keys()].filter((k) => !Object.hasOwn(own, k));
  if (strict && (missingKeys.length || unexpectedKeys.length)) {
    const parts = [];
    if (missingKeys.length) parts.push(`missing keys: ${missingKeys.join(', ')}`);
    if (unexpectedKeys.length) parts.push(`unexpected keys: ${unexpectedKeys.join(', ')}`);
    throw fail('ERR_STATE_DICT', parts.join('; '));
  }
  const pairs: Array<[Tensor, Tensor]> = [];
  for (const [dst, names] of groups) {
    let first: [string, Tensor] | null = null;
    for (const k of names) {
      if (!state.has(k)) continue;
      const v = state.get(k);
      if (!(v instanceof Tensor)) throw fail('ERR_ARG', `'${k}' must be a Tensor, got ${describe(v)}`);
      if (v.isDisposed) throw fail('ERR_DISPOSED', `'${k}' has been disposed`);
      // A disposed tensor of the module's own would fail the write half-way through.
      if (dst.isDisposed) throw fail('ERR_DISPOSED', `the module's '${k}' has been disposed`);
      if (v.shape.length !== dst.shape.length || v.shape.some((s, i) => s !== dst.shape[i]))
        throw fail('ERR_SHAPE', `size mismatch for '${k}': checkpoint has [${v.shape.join(',')}], module has [${dst.shape.join(',')}]`);
      if (isFloating(v.dtype) !== isFloating(dst.dtype))
        throw fail('ERR_DTYPE', `dtype mismatch for '${k}': checkpoint has ${v.dtype}, module has ${dst.dtype}`);
      if (!first) {
        first = [k, v];
        pairs.push([dst, v]);
      } else if (!sameValues(first[1], v))
        throw fail(
          'ERR_STATE_DICT',
          `'${first[0]}' and '${k}' name one tied tensor of the module but hold different values; give them equal values, or only one of them`,
        );
    }
  }
  return { pairs, missingKeys, unexpectedKeys };
}

/** Whether two tensors of one shape hold the same values, bit for bit after a cast to a's dtype. */
function sameValues(a: Tensor, b: Tensor): boolean {
  if (a === b) return true;
  const bytes = (t: Tensor) => {
    const v = t.dataSync() as ArrayLike<unknown> & ArrayBufferView;
    return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  };
  return tidy(() => bytes(a).equals(bytes(a.dtype === b.dtype && a.device === b.device ? b : b.to(a.dtype))));
}
