/**
 * Preloaded (node --import) into every rank that `flockml launch` starts: the rank exits when its
 * launcher is gone, even when the launcher was killed with SIGKILL and could not stop it, so no
 * rank is left holding the store's port (the next job's EADDRINUSE). The launcher holds one end of
 * a pipe whose other end is this process's fd FLOCKML_LAUNCHER_FD; the kernel closes the
 * launcher's end when its process ends, whatever the cause. The watch runs in the rank's own node
 * process (not a wrapper that might outlive it), and costs one idle unref'd handle.
 */
import { Socket } from 'node:net';
import { isMainThread } from 'node:worker_threads';

/** How long a rank's own SIGTERM handlers get before it exits regardless. */
const EXIT_GRACE_MS = 2_000;

function watchLauncher(): void {
  const fd = Number(process.env.FLOCKML_LAUNCHER_FD);
  if (!isMainThread || !Number.isInteger(fd) || fd < 3) return;
  // This rank's own child processes are not the launcher's ranks.
  delete process.env.FLOCKML_LAUNCHER_FD;
  let pipe: Socket;
  try {
    pipe = new Socket({ fd, readable: true, writable: false });
  } catch {
    return; // not a pipe from a launcher (the variable was set by hand)
  }
  pipe.on('error', () => undefined); // 'close' follows
  pipe.on('close', () => {
    // SIGTERM first, as the launcher would have sent, so the rank's handlers can clean up.
    setTimeout(() => process.exit(143), EXIT_GRACE_MS).unref();
    process.kill(process.pid, 'SIGTERM');
  });
  pipe.resume();
  pipe.unref();
}

watchLauncher();
