import { S3Client } from '@aws-sdk/client-s3';

/**
 * Checksums only where S3 requires one: by default the SDK adds a CRC32 of the body to a PutObject,
 * and in a presigned PUT that is the CRC32 of no body (`x-amz-checksum-crc32=AAAAAA==`), which S3
 * then holds the caller's bytes to and refuses (BadDigest). Ours are sent over TLS and signed.
 */
export const s3ClientConfig = { requestChecksumCalculation: 'WHEN_REQUIRED' } as const;

/** `s3` for `productionDeps` (see `dynamodb.ts`): only the entry points of functions that read or write files import it. */
export const s3Client = () => ({ s3: new S3Client({ ...s3ClientConfig }) });
