/**
 * Whether S3 refused a read of one of our own bucket's keys because the key is not there. Our
 * functions may not list the bucket (no `s3:ListBucket`, platform/access.ts), and to such a caller
 * S3 answers a missing key with 403 AccessDenied, not 404 NoSuchKey (HeadObject, GetObject and
 * CopyObject's source: the "Permissions" of each in the S3 API reference). Both read as missing.
 *
 * A 403 can also be a real denial (a grant or key policy gone wrong, KMS refusing the decrypt, an
 * explicit deny): S3 answers those the same way, and HEAD carries no body to tell them apart. So
 * each 403 read as missing is logged, with whatever S3 said: a file the caller did send that keeps
 * reading `awaiting_upload`, beside these lines, is how a denial shows. A 403 that names its cause
 * (S3's message says more than "Access Denied", as its denials by a policy or by KMS do) is a
 * warning; the bare one a missing key gets is routine.
 */
import { logger } from '../observability/logger.ts';

/** The HTTP status S3 answered a failed command with. */
export const s3StatusOf = (error: unknown) =>
  (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** What S3's answer said: its code and message (HEAD's answers have none). */
const said = (error: unknown) => {
  const { name, message } = error as { name?: string; message?: string };
  return { code: name, message };
};

/** S3's bare denial, as a missing key without `s3:ListBucket` gets it (HEAD's carry no message: the SDK names the status). */
const bareDenial = (message: string | undefined) =>
  message === undefined ||
  message === '' ||
  message === 'Access Denied' ||
  message === 'Forbidden' ||
  message === 'UnknownError';

/**
 * True when `error` is S3's answer to a missing key of our bucket: 404, or 403 as S3 answers it to
 * a caller that may not list the bucket (logged: see above). `operation` and `key` name the read in the log.
 */
export const isMissingObject = (error: unknown, operation: string, key: string): boolean => {
  const status = s3StatusOf(error);
  if (status === 404) return true;
  if (status !== 403) return false;
  const { code, message } = said(error);
  const line = { operation, key, status, code, s3Message: message };
  if (bareDenial(message)) logger.info('S3 answered 403 for a key of our bucket: read as missing', line);
  else logger.warn('S3 answered 403 naming a cause for a key of our bucket: read as missing', line);
  return true;
};
