/** Errors of the distributed layer: a message a user can act on plus a stable `code`. */
import { errorOf, type AnyFlockError } from '../errors';

export type DistErrorCode = 'ERR_TIMEOUT' | 'ERR_PEER_LOST' | 'ERR_AUTH' | 'ERR_ARG' | 'ERR_STORE' | 'ERR_NCCL' | 'ERR_COLLECTIVE_MISMATCH';

export function distError(code: DistErrorCode, message: string): AnyFlockError {
  return errorOf(code, message);
}
