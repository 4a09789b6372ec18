/**
 * The store's one reading of S3's answer to a missing key of our bucket (functions/store/missing-object.ts):
 * 404, or 403 as S3 answers a caller without `s3:ListBucket`; anything else is not "missing".
 * The answers are shaped as the SDK throws them (its `$metadata`, and for a bodiless HEAD the name `Unknown`).
 */
import { describe, expect, it } from 'vitest';
import { isMissingObject } from '../functions/store/missing-object.ts';

const s3Error = (status: number, name: string, message: string) =>
  Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } });

describe('isMissingObject', () => {
  it('reads 404 and 403 (bodiless HEAD, bare AccessDenied, or one naming its cause) as missing', () => {
    expect(isMissingObject(s3Error(404, 'NotFound', 'UnknownError'), 'HeadObject', 'uploads/t/f')).toBe(true);
    expect(isMissingObject(s3Error(404, 'NoSuchKey', 'The specified key does not exist.'), 'CopyObject', 'k')).toBe(
      true,
    );
    expect(isMissingObject(s3Error(403, 'Unknown', 'UnknownError'), 'HeadObject', 'k')).toBe(true);
    expect(isMissingObject(s3Error(403, 'AccessDenied', 'Access Denied'), 'GetObject', 'k')).toBe(true);
    expect(
      isMissingObject(s3Error(403, 'AccessDenied', 'not authorized to perform: kms:Decrypt'), 'GetObject', 'k'),
    ).toBe(true);
  });

  it('reads any other failure as not missing: a precondition, a throttle, a server error, no status at all', () => {
    for (const error of [
      s3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold'),
      s3Error(503, 'SlowDown', 'Please reduce your request rate.'),
      s3Error(500, 'InternalError', 'We encountered an internal error.'),
      new Error('socket hang up'),
    ]) {
      expect(isMissingObject(error, 'GetObject', 'k')).toBe(false);
    }
  });
});
