/** Errors of the distributed layer: a message a user can act on plus a stable `code`. */
export type DistErrorCode = 'ERR_TIMEOUT' | 'ERR_PEER_LOST' | 'ERR_AUTH' | 'ERR_ARG' | 'ERR_STORE' | 'ERR_NCCL';

export function distError(code: DistErrorCode, message: string): Error & { code: DistErrorCode } {
  const E = code === 'ERR_ARG' ? TypeError : Error;
  return Object.assign(new E(message), { code });
}
