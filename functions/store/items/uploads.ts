/**
 * Uploaded files (TEAM#<teamId>, FILE#<fileId>). One family of the stored items: see item.ts for
 * how every item is read and written.
 */
import * as v from 'valibot';
import { fileStates } from '../../../schemas/files.ts';
import { uploadContentTypes } from '../../../schemas/upload-types.ts';
import { storedItem } from './item.ts';

/**
 * A file a caller uploads (functions/store/uploads.ts): declared `awaiting_upload`, then settled
 * once, conditionally, to `ready` or `rejected`. Kept 24 hours (`ttl`), as its object is (the
 * bucket's lifecycle rule on `uploads/`); in the team's partition, so another team's id reads as none.
 */
export const UploadItemSchema = v.object({
  fileId: v.string(),
  name: v.string(),
  contentType: v.picklist(uploadContentTypes),
  size: v.number(),
  state: v.picklist(fileStates),
  /** Why it was rejected (`rejected` only). */
  reason: v.optional(v.string()),
  createdAt: v.string(),
  /** When the presigned PUT stops working: an object absent past it will never come. */
  uploadExpiresAt: v.string(),
  /** When the file is deleted if nothing used it (its `ttl`). */
  expiresAt: v.string(),
  /**
   * The ETag of the object that was checked (`ready` only). The PUT URL works until it expires, so
   * the object may be replaced after the check: every later read of it is conditional on this one.
   */
  etag: v.optional(v.string()),
  /** An image's dimensions, read from its header (`ready` images only). */
  width: v.optional(v.number()),
  height: v.optional(v.number()),
});
export type UploadItem = v.InferOutput<typeof UploadItemSchema>;
/** The file item, with the key that declared it, for operators. */
export const storedUpload = storedItem(UploadItemSchema, ['keyId']);
