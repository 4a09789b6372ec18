import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { handler as pythonRunnerHandler } from '../../functions/workers/python-runner.ts';
import { pythonRunner } from '../../lib/workers.ts';
import { startDynamoDb, startSqsS3 } from '../../local/emulators.ts';
import { startEventBridge } from '../../local/eventbridge-emulator.ts';
import { startLambdaEmulator } from '../../local/lambda-emulator.ts';
import { awsCommandLogDir } from '../../vitest.config.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `s3Endpoint`: fauxqs's S3 behind the presign guard (local/s3-presign-guard.ts). */
    emulators: { dynamoDbEndpoint: string; sqsS3Endpoint: string; s3Endpoint: string };
    /** The EventBridge emulator, and the directory where it writes each bus's events (`<bus>.jsonl`). */
    eventBridge: { endpoint: string; eventsDir: string };
    /** Lambda's Invoke API for the PythonRunner function (its handler in this process, each run's Python in a child process; Pyodide loads on the first run). */
    lambda: { endpoint: string };
  }
}

/**
 * Starts one in-memory DynamoDB Local and one fauxqs for the whole suite, and empties the AWS
 * command log, marking it as this vitest run's (the audit project reads only this run's log).
 */
export default async function setup(project: TestProject) {
  rmSync(awsCommandLogDir, { recursive: true, force: true });
  mkdirSync(awsCommandLogDir, { recursive: true });
  writeFileSync(`${awsCommandLogDir}run.json`, JSON.stringify({ vitestPid: process.pid }));
  const dynamo = await startDynamoDb({ stateDir: join(tmpdir(), 'workflow-run-api-test-emulators') });
  const sqsS3 = await startSqsS3({});
  project.provide('emulators', {
    dynamoDbEndpoint: dynamo.endpoint,
    sqsS3Endpoint: sqsS3.endpoint,
    s3Endpoint: sqsS3.s3Endpoint,
  });
  const eventsDir = join(tmpdir(), `workflow-run-api-test-events-${process.pid}`);
  rmSync(eventsDir, { recursive: true, force: true });
  const eventBridge = await startEventBridge({ fileFor: (bus) => join(eventsDir, `${bus}.jsonl`) });
  project.provide('eventBridge', { endpoint: eventBridge.endpoint, eventsDir });
  const lambda = await startLambdaEmulator({ [pythonRunner.id]: pythonRunnerHandler });
  project.provide('lambda', { endpoint: lambda.endpoint });
  return async () => {
    await lambda.stop();
    await eventBridge.stop();
    rmSync(eventsDir, { recursive: true, force: true });
    await sqsS3.stop();
    await dynamo.stop();
  };
}
