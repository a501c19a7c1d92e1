/**
 * Runs the worker named by WORKER with this rank's FLOCKML_HOST_ID taken from HOST_IDS (one per
 * rank, comma-separated), so ranks of one machine act as ranks of several hosts.
 */
const ids = (process.env.HOST_IDS ?? '').split(',');
const mine = ids[Number(process.env.RANK)];
if (!mine) throw new Error(`HOST_IDS=${process.env.HOST_IDS} names no host for rank ${process.env.RANK}`);
process.env.FLOCKML_HOST_ID = mine;
import(`./${process.env.WORKER}`);
