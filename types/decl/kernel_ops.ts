/**
 * The native entries of the ops declared with a `kernel` in the manifest (lib/manifest/): one per
 * op, taking its arguments in order, into the generated front end (cpp/generated/kernel_ops.cc).
 */
import { manifest } from '../../lib/manifest/index';
import { type FnDecl, type NativeArg, group } from './dsl';

const decls: FnDecl[] = manifest
  .filter((o) => o.kernel !== undefined)
  .map((o) => ({
    kind: 'fn',
    name: o.name,
    doc: `fl.${o.name}'s kernel (lib/manifest/): the generated front end in cpp/generated/kernel_ops.cc.`,
    args: o.args.map((a): NativeArg => {
      if (a.type === 'tensor') return { kind: 'tensor', name: a.name };
      if (a.type === 'bool') return { kind: 'bool', name: a.name };
      if (a.type === 'int') return { kind: 'int', name: a.name, lo: -(2 ** 48), hi: 2 ** 48 };
      return { kind: 'number', name: a.name };
    }),
    result: 'tensor',
  }));

export const kernelOpsExports = group('kernel_ops', 'ops whose glue is generated from the manifest (`kernel`)', decls, ['kernel_ops.h']);
