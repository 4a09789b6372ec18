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
/** The local CA and the loopback receiver's certificate of `--private-callbacks` (local/local-ca.ts). */
export const tlsDir = join(stateDir, 'tls');
/**
 * The S3 endpoint's port, kept across restarts: an upload URL names it, so a URL minted before a
 * restart still reaches the bucket after it (within its expiry).
 */
export const portsFile = join(stateDir, 'ports.json');

/** The S3 port the last start listened on, if it kept one. */
export const savedS3Port = (): number | undefined => {
  if (!existsSync(portsFile)) return undefined;
  try {
    const { s3 } = JSON.parse(readFileSync(portsFile, 'utf8')) as { s3?: unknown };
    return typeof s3 === 'number' && Number.isInteger(s3) && s3 > 0 && s3 < 65536 ? s3 : undefined;
  } catch {
    return undefined;
  }
};

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
