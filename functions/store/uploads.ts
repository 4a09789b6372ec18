/**
 * The files callers upload: their items (`TEAM#<team>`, `FILE#<fileId>`) and their objects
 * (`uploads/<team>/<fileId>` in the library bucket). The caller's bytes never pass through a
 * function: it PUTs them to the presigned URL made here, bound to the declared content type and size.
 */
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { libraryBucket } from '../../platform/definitions.ts';
import type { UploadContentType } from '../../schemas/upload-types.ts';
import type { Deps } from '../deps.ts';
import { epochSeconds } from '../domain/retention.ts';
import type { ByteSource } from '../nodes/media/whole-file.ts';
import { itemUpdate } from './item-update.ts';
import { itemVersion, parseItem, type StoredItem, unexpired } from './items/item.ts';
import { storedUpload, type UploadItem, UploadItemSchema } from './items/uploads.ts';
import { uploadKey } from './keys.ts';
import { isMissingObject, s3StatusOf as statusOf } from './missing-object.ts';
import { conditionalWrite } from './write.ts';

/** Where a file's bytes are: under the uploads prefix (its own lifecycle rule), then its team. */
export const uploadObjectKey = (teamId: string, fileId: string) => `${libraryBucket.uploadPrefix}${teamId}/${fileId}`;

/** The item of a file just declared: `awaiting_upload`, deleted by DynamoDB's TTL at `expiresAt`. */
export const newUploadItem = (
  file: Pick<UploadItem, 'fileId' | 'name' | 'contentType' | 'size' | 'createdAt' | 'uploadExpiresAt' | 'expiresAt'>,
  owner: { teamId: string; keyId: string },
) =>
  ({
    ...uploadKey(owner.teamId, file.fileId),
    type: 'Upload',
    ...file,
    state: 'awaiting_upload',
    keyId: owner.keyId,
    ttl: epochSeconds(new Date(file.expiresAt)),
    v: itemVersion,
  }) satisfies StoredItem<typeof storedUpload>;

/** Stores a declared file; its id is new, so a collision is a bug. */
export const putUpload = async (deps: Deps, item: ReturnType<typeof newUploadItem>): Promise<void> => {
  const put = await conditionalWrite(
    deps,
    new PutCommand({ TableName: deps.tableName, Item: item, ConditionExpression: 'attribute_not_exists(PK)' }),
  );
  if (!put.written) throw new Error(`file ${item.fileId} exists already`);
};

/** A file of the team, or undefined: another team's, an unknown one and one past its `ttl` read alike. */
export const getUpload = async (deps: Deps, teamId: string, fileId: string): Promise<UploadItem | undefined> => {
  const { Item } = await deps.ddb.send(
    new GetCommand({ TableName: deps.tableName, Key: uploadKey(teamId, fileId), ConsistentRead: true }),
  );
  const item = unexpired(Item, deps.now());
  return item && parseItem(UploadItemSchema, item);
};

/**
 * A presigned PUT of the file's object, signed at `deps.now()` for `seconds`. Its content type and
 * length are signed headers (S3 signs neither by default: the presigner leaves `content-type`
 * unsigned and a length unchecked), so storage refuses any other type or size.
 */
export const presignUpload = (
  deps: Deps,
  key: string,
  file: { contentType: UploadContentType; size: number },
  seconds: number,
): Promise<string> =>
  getSignedUrl(
    deps.s3,
    new PutObjectCommand({ Bucket: deps.bucket, Key: key, ContentType: file.contentType, ContentLength: file.size }),
    { expiresIn: seconds, signingDate: deps.now(), signableHeaders: new Set(['content-type', 'content-length']) },
  );

/** What arrived: its size and ETag, or undefined while nothing has. */
export const headUpload = async (deps: Deps, key: string): Promise<{ size: number; etag: string } | undefined> => {
  try {
    const head = await deps.s3.send(new HeadObjectCommand({ Bucket: deps.bucket, Key: key }));
    return { size: head.ContentLength ?? 0, etag: head.ETag ?? '' };
  } catch (error) {
    if (isMissingObject(error, 'HeadObject', key)) return undefined;
    throw error;
  }
};

/**
 * The object's first `bytes` bytes, of the version whose ETag is `etag`; undefined when it was
 * replaced or deleted since (S3's 412; a missing key), so what is read is always what was measured.
 */
export const readUploadHead = (deps: Deps, key: string, etag: string, bytes: number): Promise<Uint8Array | undefined> =>
  readUploadRange(deps, key, etag, 0, bytes);

const readUploadRange = async (
  deps: Deps,
  key: string,
  etag: string,
  from: number,
  bytes: number,
): Promise<Uint8Array | undefined> => {
  try {
    const { Body } = await deps.s3.send(
      new GetObjectCommand({
        Bucket: deps.bucket,
        Key: key,
        Range: `bytes=${from}-${from + bytes - 1}`,
        IfMatch: etag,
      }),
    );
    return Body ? Body.transformToByteArray() : new Uint8Array();
  } catch (error) {
    if (statusOf(error) === 412 || isMissingObject(error, 'GetObject', key)) return undefined;
    throw error;
  }
};

/** The object changed (replaced or deleted) while it was being read. */
export class UploadChangedError extends Error {}

/** How much of an upload one read fetches while its whole is checked: a few reads for 100 MiB, little memory. */
const uploadWindowBytes = 8 * 1024 * 1024;

/**
 * The upload's object as a `ByteSource` (functions/nodes/media/whole-file.ts) read in windows, each a
 * ranged GET held to the ETag that was checked; a change midway throws UploadChangedError.
 */
export const uploadSource = (deps: Deps, key: string, etag: string, size: number): ByteSource => {
  let window: { start: number; bytes: Uint8Array } | undefined;
  return {
    size,
    read: async (offset, length) => {
      const end = Math.min(offset + length, size);
      if (!window || offset < window.start || end > window.start + window.bytes.length) {
        const take = Math.min(Math.max(length, uploadWindowBytes), size - offset);
        if (take <= 0) return new Uint8Array();
        const bytes = await readUploadRange(deps, key, etag, offset, take);
        if (!bytes) throw new UploadChangedError(key);
        window = { start: offset, bytes };
      }
      return window.bytes.subarray(offset - window.start, end - window.start);
    },
  };
};

/** Deletes a file's object (a rejected upload's bytes are not kept). */
export const deleteUploadObject = async (deps: Deps, key: string): Promise<void> => {
  await deps.s3.send(new DeleteObjectCommand({ Bucket: deps.bucket, Key: key }));
};

/** How an upload settles: checked and usable, or refused with its reason. */
export type UploadSettlement =
  | { state: 'ready'; etag: string; width?: number; height?: number }
  | { state: 'rejected'; reason: string };

/**
 * Moves a file still `awaiting_upload` to its settlement, once: the item as written, or undefined
 * when it had already left `awaiting_upload` (a concurrent settle won; its answer is the same
 * file's) or is gone.
 */
export const settleUploadItem = async (
  deps: Deps,
  teamId: string,
  fileId: string,
  settlement: UploadSettlement,
): Promise<UploadItem | undefined> => {
  const written = await conditionalWrite(
    deps,
    new UpdateCommand({
      TableName: deps.tableName,
      Key: uploadKey(teamId, fileId),
      ...itemUpdate(
        storedUpload,
        { set: settlement },
        {
          ConditionExpression: '#state = :awaiting',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':awaiting': 'awaiting_upload' },
        },
      ),
      ReturnValues: 'ALL_NEW',
    }),
  );
  return written.written ? parseItem(UploadItemSchema, written.output.Attributes ?? {}) : undefined;
};

/**
 * Where a run keeps its own copy of a file its `inputs` named: under its team's prefix (so every
 * reader's team check passes, and the retention's lifecycle rule expires it), by the run that
 * holds it and the upload's `fileId` (one copy however many keys name it). The name is the
 * caller's, reduced to characters no key reader treats specially.
 */
export const inputObjectKey = (teamId: string, holderId: string, fileId: string, name: string) =>
  `${libraryBucket.objectPrefix}${teamId}/inputs/${holderId}/${fileId}/${name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/\.{2,}/g, '.')}`;

/**
 * Copies a ready upload's object to `to` inside S3 (no byte passes through the function), only if
 * it is still the object that was checked (`CopySourceIfMatch` its ETag): `changed` when it was
 * replaced since, `gone` when it was deleted. The copy is marked as no AI's work.
 */
export const copyUpload = async (
  deps: Deps,
  from: { key: string; etag: string; contentType: string },
  to: string,
): Promise<'copied' | 'changed' | 'gone'> => {
  try {
    await deps.s3.send(
      new CopyObjectCommand({
        Bucket: deps.bucket,
        Key: to,
        CopySource: `${deps.bucket}/${from.key}`,
        CopySourceIfMatch: from.etag,
        MetadataDirective: 'REPLACE',
        ContentType: from.contentType,
        Metadata: { 'ai-generated': 'false' },
      }),
    );
    return 'copied';
  } catch (error) {
    if (statusOf(error) === 412) return 'changed';
    if (isMissingObject(error, 'CopyObject', from.key)) return 'gone';
    throw error;
  }
};
