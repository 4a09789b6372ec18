import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LocalResources } from './provision.ts';

/** Everything `npm start` keeps lives under `.local/` at the repository root (LOCAL_STATE_DIR overrides). */
export const stateDir = process.env.LOCAL_STATE_DIR ?? fileURLToPath(new URL('../.local/', import.meta.url));
export const stackFile = join(stateDir, 'stack.json');
export const demoFile = join(stateDir, 'demo.json');
export const dynamoDbDataDir = join(stateDir, 'dynamodb');
export const fauxqsDataDir = join(stateDir, 'fauxqs');

/** The resource prefix of the local default (tests use their own per file). */
export const localPrefix = 'local';

/** What a running `npm start` publishes so the admin CLI and a second start can find it. */
export interface RunningStack {
  pid: number;
  baseUrl: string;
  resources: LocalResources;
}

/** Whether process `pid` still runs (signal 0 only asks). */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The running local stack, if its process is still alive. */
export const readRunningStack = (): RunningStack | undefined => {
  if (!existsSync(stackFile)) return undefined;
  try {
    const stack = JSON.parse(readFileSync(stackFile, 'utf8')) as RunningStack;
    return isProcessAlive(stack.pid) ? stack : undefined;
  } catch {
    return undefined;
  }
};
