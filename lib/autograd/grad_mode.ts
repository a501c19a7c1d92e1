/** Whether ops record the graph: off inside {@link noGrad} and while backward runs. */
let enabled = true;

export function isGradEnabled(): boolean {
  return enabled;
}

function withGradMode<T>(flag: boolean, fn: () => T): T {
  const prev = enabled;
  enabled = flag;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}

/** Runs `fn` without recording operations for autograd (like `torch.no_grad()`). */
export function noGrad<T>(fn: () => T): T {
  return withGradMode(false, fn);
}

/** Runs `fn` with recording on, even inside noGrad (like `torch.enable_grad()`). */
export function enableGrad<T>(fn: () => T): T {
  return withGradMode(true, fn);
}
