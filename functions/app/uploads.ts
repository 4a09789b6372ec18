/**
 * Files a caller uploads (docs/api.md, "Uploading a file"): declared with `createUpload`, whose
 * answer is a presigned PUT bound to the declared type and size; sent by the caller straight to
 * S3; checked by `settleUpload` the first time anyone looks after the bytes arrived (a read of the
 * file, and a run that names it). The check is lazy: no S3 event, queue or function watches the
 * bucket, so a rejected object lives until someone looks or the bucket's lifecycle deletes it two days
 * later (docs/decisions/files.md, "Uploads are checked when read").
 */
import { libraryBucket } from '../../platform/definitions.ts';
import { fileIdPrefix } from '../../schemas/file-limits.ts';
import type { CreateFileRequest, CreateFileResponse, FileView, StorageUsageView } from '../../schemas/files.ts';
import type { Deps } from '../deps.ts';
import { expiresOn } from '../domain/stored-bytes.ts';
import { FileNotFoundError } from '../errors/table.ts';
import { sniffHeadBytes, sniffUpload } from '../nodes/media/file-sniff.ts';
import { wholeFileRefusal } from '../nodes/media/whole-file.ts';
import type { UploadItem } from '../store/items/uploads.ts';
import { countStoredBytes, readStorageUsage, reserveStoredBytes } from '../store/stored-bytes.ts';
import {
  deleteUploadObject,
  getUpload,
  headUpload,
  newUploadItem,
  presignUpload,
  putUpload,
  readUploadHead,
  settleUploadItem,
  UploadChangedError,
  type UploadSettlement,
  uploadObjectKey,
  uploadSource,
} from '../store/uploads.ts';

/** How long the presigned PUT works: long enough to send 100 MiB on a slow line, short enough not to be shared. */
export const uploadUrlSeconds = 15 * 60;

/** How long a file is kept for a run to use it, from its declaration (its item's `ttl`, its object's lifecycle). */
export const uploadLifetimeSeconds = 24 * 60 * 60;

/** The day the bucket's lifecycle rule on `uploads/` expires a file's object. */
const uploadExpiresOn = (item: Pick<UploadItem, 'createdAt'>) =>
  expiresOn(new Date(item.createdAt), libraryBucket.uploadExpiryDays);

const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString();

/** The File a caller reads. */
export const fileView = (item: UploadItem): FileView => ({
  fileId: item.fileId,
  name: item.name,
  contentType: item.contentType,
  size: item.size,
  state: item.state,
  ...(item.state === 'rejected' && item.reason !== undefined ? { reason: item.reason } : {}),
  createdAt: item.createdAt,
  expiresAt: item.expiresAt,
});

/** POST /files: stores the declared file and answers how to upload its bytes. */
export const createUpload = async (
  deps: Deps,
  owner: { teamId: string; keyId: string },
  request: CreateFileRequest,
): Promise<CreateFileResponse> => {
  const now = deps.now();
  const fileId = `${fileIdPrefix}${deps.newId()}`;
  const item = newUploadItem(
    {
      fileId,
      name: request.name,
      contentType: request.contentType,
      size: request.size,
      createdAt: now.toISOString(),
      uploadExpiresAt: later(now, uploadUrlSeconds),
      expiresAt: later(now, uploadLifetimeSeconds),
    },
    owner,
  );
  // Counted at its declared size from now until its lifecycle rule expires it, sent or not.
  await reserveStoredBytes(deps, owner.teamId, request.size, uploadExpiresOn(item));
  const url = await presignUpload(deps, uploadObjectKey(owner.teamId, fileId), request, uploadUrlSeconds);
  await putUpload(deps, item);
  return {
    fileId,
    name: item.name,
    contentType: item.contentType,
    size: item.size,
    state: item.state,
    createdAt: item.createdAt,
    expiresAt: item.expiresAt,
    upload: {
      method: 'PUT',
      url,
      headers: { 'content-type': item.contentType, 'content-length': String(item.size) },
      expiresAt: item.uploadExpiresAt,
    },
  };
};

/**
 * What the object shows, checked against the declaration: its size, its first bytes against the
 * declared type, an image's dimensions against the pixel limit, and the whole file's structure to
 * its end (functions/nodes/media/whole-file.ts). Undefined while nothing arrived
 * and the upload URL still works.
 */
const inspect = async (deps: Deps, teamId: string, item: UploadItem): Promise<UploadSettlement | undefined> => {
  const key = uploadObjectKey(teamId, item.fileId);
  const head = await headUpload(deps, key);
  if (!head) {
    if (deps.now().toISOString() < item.uploadExpiresAt) return undefined;
    return { state: 'rejected', reason: `upload expired: nothing was sent before ${item.uploadExpiresAt}` };
  }
  if (head.size !== item.size) {
    return { state: 'rejected', reason: `size is ${head.size} bytes, not the declared ${item.size}` };
  }
  const bytes = await readUploadHead(deps, key, head.etag, Math.min(sniffHeadBytes, head.size));
  // Replaced or deleted while it was being checked: the next look checks what is there then.
  if (!bytes) return undefined;
  const verdict = sniffUpload(item.contentType, bytes, head.size <= sniffHeadBytes);
  if (!verdict.ok) return { state: 'rejected', reason: verdict.reason };
  // The whole file, not only its head: nothing may ride after the image (HTML after a PNG's IEND).
  let whole: string | undefined;
  try {
    whole = await wholeFileRefusal(item.contentType, uploadSource(deps, key, head.etag, head.size));
  } catch (error) {
    if (error instanceof UploadChangedError) return undefined;
    throw error;
  }
  if (whole) return { state: 'rejected', reason: whole };
  return { state: 'ready', etag: head.etag, width: verdict.width, height: verdict.height };
};

/**
 * A file of the team, settled if it can be: one still `awaiting_upload` whose bytes arrived becomes
 * `ready` or `rejected` (its object deleted), one whose URL expired with nothing sent `rejected`.
 * Idempotent: the move is conditional, so of concurrent settles one writes and the others read it.
 * Unknown, another team's and expired files are a FileNotFoundError.
 */
export const settleUpload = async (deps: Deps, teamId: string, fileId: string): Promise<UploadItem> => {
  const item = await getUpload(deps, teamId, fileId);
  if (!item) throw new FileNotFoundError(fileId);
  if (item.state !== 'awaiting_upload') return item;
  const settlement = await inspect(deps, teamId, item);
  if (!settlement) return item;
  const written = await settleUploadItem(deps, teamId, fileId, settlement);
  const settled = written ?? (await getUpload(deps, teamId, fileId));
  if (!settled) throw new FileNotFoundError(fileId);
  // Nothing refused is kept; after a crash here the lifecycle rule deletes it within two days.
  if (settled.state === 'rejected') {
    await deleteUploadObject(deps, uploadObjectKey(teamId, fileId));
    // Uncounted once, by the settle that rejected it.
    if (written) await countStoredBytes(deps, teamId, -settled.size, uploadExpiresOn(settled));
  }
  return settled;
};

/** GET /files/{fileId}. */
export const readUpload = async (deps: Deps, teamId: string, fileId: string): Promise<FileView> =>
  fileView(await settleUpload(deps, teamId, fileId));

/** GET /storage: what the team holds (uploads, input copies, output files) against its quota. */
export const readStorage = (deps: Deps, teamId: string): Promise<StorageUsageView> => readStorageUsage(deps, teamId);
