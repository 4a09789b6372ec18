/**
 * What one function may do to the stage's resources: exact IAM actions, no families. Pure data,
 * read from the route table (`routes.ts`) and the worker table (`lib/workers.ts`) and turned into one
 * policy statement per resource by `lib/grants.ts`.
 *
 * Each list holds exactly the actions the function's code sends (its bundle's SDK commands:
 * `GetCommand` is `GetItem`, a `TransactWriteCommand` is the item actions it carries, a presigned
 * `GetObjectCommand` is `GetObject`); `test/cdk.test.ts` rebuilds every bundle and checks both ways.
 */

import type { IndexDefinition } from './definitions.ts';

/** DynamoDB item and query actions, as IAM names them (without the `dynamodb:` prefix). */
export const tableActions = [
  'GetItem',
  'BatchGetItem',
  'Query',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'ConditionCheckItem',
] as const;
export type TableAction = (typeof tableActions)[number];

/** S3 object actions on the library bucket's `teams/` keys (presigning a GET needs `GetObject`). */
export type ObjectAction = 'GetObject' | 'PutObject';

/**
 * S3 object actions on the library bucket's `uploads/` keys, the files callers upload (presigning
 * their PUT needs `PutObject`; `HeadObject` is `GetObject`).
 */
export type UploadAction = 'GetObject' | 'PutObject' | 'DeleteObject';

/**
 * Whether any of these grants lets its function list the library bucket (`s3:ListBucket`, a
 * bucket action). None can: every bucket action above is an object action. It decides more than
 * listing: S3 answers a caller without it a missing key with 403 AccessDenied, not 404 (HeadObject,
 * GetObject, CopyObject's source), so the store reads both as absent (functions/store/missing-object.ts)
 * and the local S3 answers the functions as S3 does (local/emulators.ts).
 */
export const grantsBucketListing = (grants: readonly Access[]): boolean =>
  grants.some((access) =>
    [...(access.bucket ?? []), ...(access.uploads ?? [])].some((action: string) => action === 'ListBucket'),
  );

export interface Access {
  /** Actions on the application table itself (not its indexes). Default: none. */
  table?: readonly TableAction[];
  /** Indexes the function queries (`dynamodb:Query` on each, by name). Default: none. */
  indexes?: readonly IndexDefinition['name'][];
  /** `sqs:SendMessage` (single and batch) on the steps queue. Default: none. */
  stepsQueue?: 'send';
  /** `sqs:SendMessage` on the webhooks queue. Default: none. */
  webhooksQueue?: 'send';
  /** Object actions on the library bucket's `teams/` keys. Default: none. */
  bucket?: readonly ObjectAction[];
  /** Object actions on the library bucket's `uploads/` keys. Default: none. */
  uploads?: readonly UploadAction[];
  /**
   * `secretsmanager:GetSecretValue` and `ssm:GetParameter` on the stage's provider secrets (each on
   * its own store) and on the team connection secrets and parameters under the stage's connection
   * prefix (`lib/stages.ts`). Only the step executor resolves secrets. Default: none.
   */
  secrets?: 'providers-and-connections';
  /** `events:PutEvents` on the stage's operator event bus. Default: none. */
  eventBus?: 'put';
  /** `lambda:InvokeFunction` on the PythonRunner function (PythonSandbox steps). Default: none. */
  pythonRunner?: 'invoke';
  /** `bedrock:InvokeModel` on exactly the models the stage grants (`bedrockModels`). Default: none. */
  bedrock?: 'invoke';
}
