/**
 * The IAM action each AWS SDK command needs: one table for both least-privilege checks, the static
 * one (`test/cdk.test.ts`, the commands each bundle can send) and the runtime one
 * (`test/least-privilege.test.ts`, the commands each function sent during the integration suite).
 * A command missing here fails both, asking for its line.
 */

/** IAM actions of the item operations a transaction (`TransactWriteCommand`, `TransactWriteItemsCommand`) carries. */
export const transactionItemActions: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  // TransactGetItems' items.
  Get: 'GetItem',
};

/**
 * IAM actions of the SDK commands (lib-dynamodb's document commands and the clients' own, which
 * is what a document command sends): `table` for DynamoDB (without the `dynamodb:` prefix), `other`
 * with its service prefix. Transactions are the actions of their items (`transactionItemActions`).
 */
export const commandActions: Record<string, { table?: string; other?: string; source?: string }> = {
  GetCommand: { table: 'GetItem' },
  GetItemCommand: { table: 'GetItem' },
  PutCommand: { table: 'PutItem' },
  PutItemCommand: { table: 'PutItem' },
  UpdateCommand: { table: 'UpdateItem' },
  UpdateItemCommand: { table: 'UpdateItem' },
  DeleteCommand: { table: 'DeleteItem' },
  DeleteItemCommand: { table: 'DeleteItem' },
  BatchGetCommand: { table: 'BatchGetItem' },
  BatchGetItemCommand: { table: 'BatchGetItem' },
  BatchWriteCommand: { table: 'BatchWriteItem' },
  BatchWriteItemCommand: { table: 'BatchWriteItem' },
  QueryCommand: { table: 'Query' },
  ScanCommand: { table: 'Scan' },
  TransactGetCommand: { table: 'GetItem' },
  SendMessageCommand: { other: 'sqs:SendMessage' },
  SendMessageBatchCommand: { other: 'sqs:SendMessage' },
  ChangeMessageVisibilityCommand: { other: 'sqs:ChangeMessageVisibility' },
  ChangeMessageVisibilityBatchCommand: { other: 'sqs:ChangeMessageVisibility' },
  DeleteMessageCommand: { other: 'sqs:DeleteMessage' },
  DeleteMessageBatchCommand: { other: 'sqs:DeleteMessage' },
  ReceiveMessageCommand: { other: 'sqs:ReceiveMessage' },
  GetObjectCommand: { other: 's3:GetObject' },
  PutObjectCommand: { other: 's3:PutObject' },
  // HeadObject has no action of its own: S3 authorises it as GetObject.
  HeadObjectCommand: { other: 's3:GetObject' },
  DeleteObjectCommand: { other: 's3:DeleteObject' },
  // CopyObject writes its destination and reads its source (`source`: the command log's item `CopySource`).
  CopyObjectCommand: { other: 's3:PutObject', source: 's3:GetObject' },
  GetSecretValueCommand: { other: 'secretsmanager:GetSecretValue' },
  GetParameterCommand: { other: 'ssm:GetParameter' },
  GetParametersCommand: { other: 'ssm:GetParameters' },
  PutEventsCommand: { other: 'events:PutEvents' },
  InvokeCommand: { other: 'lambda:InvokeFunction' },
  InvokeModelCommand: { other: 'bedrock:InvokeModel' },
};

const transactions = new Set(['TransactWriteCommand', 'TransactWriteItemsCommand', 'TransactGetItemsCommand']);

/**
 * The IAM action (with its service prefix) of one command, or of one item of a transaction;
 * undefined when `commandActions` does not know it.
 */
export const iamActionOf = (command: string, item?: string): string | undefined => {
  if (transactions.has(command)) {
    const action = item === undefined ? undefined : transactionItemActions[item];
    return action && `dynamodb:${action}`;
  }
  const known = commandActions[command];
  if (item === 'CopySource') return known?.source;
  return known?.table ? `dynamodb:${known.table}` : known?.other;
};
