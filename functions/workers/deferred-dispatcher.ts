export const handler = async () => ({ batchItemFailures: [] });
