import { S3Client } from '@aws-sdk/client-s3';

/** `s3` for `productionDeps` (see `dynamodb.ts`): only the entry points of functions that read or write files import it. */
export const s3Client = () => ({ s3: new S3Client({}) });
