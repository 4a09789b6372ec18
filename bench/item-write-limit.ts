import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * DynamoDB Local never throttles. On AWS one item takes about 1,000 writes a second and then
 * answers ProvisionedThroughputExceededException; this middleware does the same on `client`: an
 * UpdateItem beyond `perSecond` on one item within one wall-clock second fails as AWS would, after
 * the SDK's retries (it sits at the first step, so they are not tried). Failed conditional writes
 * count, as they consume write capacity on AWS too. Used by the hot-key section (bench/hot-key.ts)
 * through `bench/api-server.ts` when `BENCH_ITEM_WRITES_PER_SECOND` is set.
 */
export const limitItemWrites = (client: DynamoDBDocumentClient, perSecond: number) => {
  let second = 0;
  const writes = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand') {
        const now = Math.floor(Date.now() / 1000);
        if (now !== second) {
          second = now;
          writes.clear();
        }
        const item = JSON.stringify((args.input as { Key?: unknown }).Key);
        const count = (writes.get(item) ?? 0) + 1;
        writes.set(item, count);
        if (count > perSecond) {
          throw new ProvisionedThroughputExceededException({
            message: `bench: more than ${perSecond} writes to one item in a second`,
            $metadata: { httpStatusCode: 400 },
          });
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'benchItemWriteLimit' },
  );
};
