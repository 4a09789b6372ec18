import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** The Lambda context the local default hands a handler, as the Lambda runtime would. */
export const lambdaContext = (functionName: string, timeoutMs: number, requestId: string = randomUUID()): Context => ({
  callbackWaitsForEmptyEventLoop: false,
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
  memoryLimitInMB: '512',
  awsRequestId: requestId,
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: 'local',
  getRemainingTimeInMillis: () => timeoutMs,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
});
