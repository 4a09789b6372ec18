import { EventBridgeClient } from '@aws-sdk/client-eventbridge';

/** The EventBridge client of the operator events' publisher (see `dynamodb.ts`): no other function imports it. */
export const eventBridgeClient = () => new EventBridgeClient({});
