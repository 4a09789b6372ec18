import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

/** Page sizes a Linux kernel may use (x86-64 and arm64 kernels: 4, 16 or 64 KB). */
const pageSizes = [4096, 16_384, 65_536];

/**
 * Watches a process's resident memory (its whole memory: WebAssembly and ArrayBuffers included,
 * which neither V8's heap limit nor RLIMIT_AS can bound without breaking WebAssembly's reservations)
 * every `intervalMs`, and calls `onOver` once it passes `limitBytes`. It reads /proc/<pid>/statm
 * through one open descriptor (a few µs a read); the page size comes from comparing it once with
 * VmRSS of /proc/<pid>/status. Linux only (Lambda, the containers): elsewhere it watches nothing.
 */
export const watchMemory = (
  pid: number,
  limitBytes: number,
  intervalMs: number,
  onOver: (rssBytes: number) => void,
) => {
  let fd: number | undefined;
  let pageBytes = 0;
  const buffer = Buffer.alloc(128);
  const residentPages = () => {
    if (fd === undefined) return undefined;
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return Number(buffer.toString('latin1', 0, read).split(' ')[1]);
  };
  try {
    fd = openSync(`/proc/${pid}/statm`, 'r');
    const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]);
    const pages = residentPages() ?? 0;
    const measured = (kb * 1024) / pages;
    pageBytes = pageSizes.reduce((best, size) => (Math.abs(size - measured) < Math.abs(best - measured) ? size : best));
  } catch {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  }
  const stop = () => {
    clearInterval(timer);
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  };
  const check = () => {
    let bytes: number;
    try {
      bytes = (residentPages() ?? 0) * pageBytes;
    } catch {
      return stop(); // the process is gone
    }
    if (bytes > limitBytes) {
      stop();
      onOver(bytes);
    }
  };
  const timer = fd !== undefined ? setInterval(check, intervalMs) : undefined;
  return { stop };
};
