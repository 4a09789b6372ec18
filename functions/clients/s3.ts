import { S3Client } from '@aws-sdk/client-s3';

/**
 * Checksums only where S3 requires one: by default the SDK adds a CRC32 of the body to a PutObject,
 * and in a presigned PUT that is the CRC32 of no body (`x-amz-checksum-crc32=AAAAAA==`), which S3
 * then holds the caller's bytes to and refuses (BadDigest). Ours are sent over TLS and signed.
 * Sources (read 2026-11-27): the default `WHEN_SUPPORTED` and its CRC32, aws/aws-sdk-js-v3#6492 and
 * aws/aws-sdk-js-v3#6819 (client-s3 3.729.0); the empty-body CRC32 in a presigned PUT, seaweedfs/seaweedfs#10216.
 */
export const s3ClientConfig = { requestChecksumCalculation: 'WHEN_REQUIRED' } as const;

/** `s3` for `productionDeps` (see `dynamodb.ts`): only the entry points of functions that read or write files import it. */
export const s3Client = () => ({ s3: new S3Client({ ...s3ClientConfig }) });
