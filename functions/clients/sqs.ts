import { SQSClient } from '@aws-sdk/client-sqs';

/** `sqs` for `productionDeps` (see `dynamodb.ts`): only the entry points of functions that send messages import it. */
export const sqsClient = () => ({ sqs: new SQSClient({}) });
