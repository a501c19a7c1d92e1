/** Whether ops record the graph: off inside {@link noGrad} and while backward runs. */
let enabled = true;

export function isGradEnabled(): boolean {
  return enabled;
}

/** Runs `fn` without recording operations for autograd (like `torch.no_grad()`). */
export function noGrad<T>(fn: () => T): T {
  const prev = enabled;
  enabled = false;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}

/** Runs `fn` with recording on, even inside noGrad (like `torch.enable_grad()`). */
export function enableGrad<T>(fn: () => T): T {
  const prev = enabled;
  enabled = true;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}
