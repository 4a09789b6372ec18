import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { LocalResources } from '../local/provision.ts';
import type { ServerStats } from './api-server.ts';

export interface ServerProcess {
  pid: number;
  baseUrl: string;
  /** With `gc`, the server first runs a full collection (when started with `exposeGc`). */
  stats(options?: { gc?: boolean }): Promise<ServerStats>;
  /** Resident and peak resident memory from /proc (Linux), or undefined elsewhere. */
  procMemory(): { rss: number; peak: number } | undefined;
  stop(): Promise<void>;
}

const serverScript = new URL('./api-server.ts', import.meta.url).pathname;

/** Starts `bench/api-server.ts` in a child Node (the same binary as this one) and waits for its URL. */
export const startServerProcess = async (resources: LocalResources, options: { exposeGc?: boolean } = {}) => {
  const child: ChildProcess = spawn(process.execPath, [...(options.exposeGc ? ['--expose-gc'] : []), serverScript], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_RESOURCES: JSON.stringify(resources) },
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.connected) child.disconnect();
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const ready = await new Promise<{ baseUrl: string; pid: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bench API server did not start within 20 s')), 20_000);
    child.once('exit', (code) => reject(new Error(`bench API server exited with code ${code}`)));
    child.on('message', (message: { type?: string; baseUrl?: string; pid?: number }) => {
      if (message.type === 'ready' && message.baseUrl && message.pid) {
        clearTimeout(timer);
        resolve({ baseUrl: message.baseUrl, pid: message.pid });
      }
    });
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  const stats = (statsOptions: { gc?: boolean } = {}) =>
    new Promise<ServerStats>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('bench API server did not answer a stats request')), 5000);
      const onMessage = (message: ServerStats & { type?: string }) => {
        if (message.type !== 'stats') return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve(message);
      };
      child.on('message', onMessage);
      child.send({ type: 'stats', gc: statsOptions.gc === true });
    });
  const procMemory = () => {
    try {
      const status = readFileSync(`/proc/${ready.pid}/status`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
      return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
    } catch {
      return undefined;
    }
  };
  return { pid: ready.pid, baseUrl: ready.baseUrl, stats, procMemory, stop } satisfies ServerProcess;
};
