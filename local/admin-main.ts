import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { dynamoDbClient } from '../functions/clients/dynamodb.ts';
import { type Deps, productionDeps } from '../functions/deps.ts';
import { refusingSecrets } from '../functions/nodes/providers/secret-refs.ts';
import { defaultStackPrefix, stackNames, stageDefaults, stageNames } from '../lib/stages.ts';
import { envNames } from '../platform/definitions.ts';
import { connectionSecretPrefixOf } from '../platform/secret-refs.ts';
import { asksForHelp, runAdmin, runEventsTail, usage } from './admin.ts';
import { localAwsConfig, startDynamoDb } from './emulators.ts';
import { operatorEventsFile } from './eventbridge-emulator.ts';
import { localDeps, tableOnlyDeps } from './local-deps.ts';
import { provisionTables } from './provision.ts';
import type { LogPlace } from './run-show.ts';
import { dynamoDbDataDir, localPrefix, readRunningStack, stateDir } from './state.ts';

/**
 * `npm run admin -- …`. With TABLE_NAME (and the usual AWS environment) in the environment it
 * talks to deployed tables (set SERVICE_STAGE too, to check connection secrets against that stage's
 * prefix); otherwise to the local default: the running `npm start`, or, when none
 * runs, DynamoDB Local started on the same data for the length of the command.
 */
const main = async () => {
  // The usage needs no table: print it before starting or reaching one.
  if (asksForHelp(process.argv.slice(2))) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  // The operator events the local stack wrote: a file, no table needed.
  if (process.argv[2] === 'events') {
    const abort = new AbortController();
    process.once('SIGINT', () => abort.abort());
    process.exitCode = await runEventsTail(process.argv.slice(2), {
      file: operatorEventsFile,
      write: (line) => process.stdout.write(`${line}\n`),
      signal: abort.signal,
    });
    return;
  }
  let deps: Deps;
  let cleanup = async () => {};
  let logs: LogPlace = { kind: 'local' };
  if (process.env[envNames.table]) {
    // A deployed table: connection references must be ones a deployed stage reads (never env:),
    // under SERVICE_STAGE's connection prefix when it is set.
    const stage = process.env[envNames.stage];
    const connectionPrefix = stage ? connectionSecretPrefixOf(stage) : undefined;
    deps = { ...productionDeps(dynamoDbClient()), secrets: refusingSecrets({ deployed: true, connectionPrefix }) };
    // A dispatch tick dates the expiry of the deferred runs it moves: with SERVICE_STAGE, that
    // stage's retention (prod: 365 days), unless RETENTION_DAYS gives the one the stage deployed.
    const stageName = stageNames.find((name) => name === stage);
    if (stageName && !process.env[envNames.retentionDays]) deps.retentionDays = stageDefaults[stageName].retentionDays;
    // `run show` names the stage's log groups: its API stack's (STACK_PREFIX as deployed with -c stackPrefix).
    const stackPrefix = process.env.STACK_PREFIX || defaultStackPrefix;
    logs = stageName
      ? { kind: 'stage', apiStackName: stackNames({ stackPrefix, stage: stageName }).api }
      : { kind: 'unknown' };
  } else {
    const running = readRunningStack();
    if (running) {
      deps = localDeps(running.resources);
    } else {
      const dynamo = await startDynamoDb({ dataDir: dynamoDbDataDir, stateDir });
      const client = new DynamoDBClient({ ...localAwsConfig, endpoint: dynamo.endpoint });
      const tableName = await provisionTables(client, localPrefix);
      client.destroy();
      deps = tableOnlyDeps(dynamo.endpoint, tableName);
      cleanup = dynamo.stop;
    }
  }
  try {
    const { exitCode, output } = await runAdmin(process.argv.slice(2), deps, { logs });
    (exitCode === 0 ? process.stdout : process.stderr).write(`${output}\n`);
    process.exitCode = exitCode;
  } finally {
    deps.ddb.destroy();
    await cleanup();
  }
};

await main();
