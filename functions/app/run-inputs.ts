/**
 * Files as run inputs (docs/api.md, "Files as run inputs"): a run's `inputs` value for a
 * loader step that reads a file (its catalogue entry's `acceptsApiInputKey: { file }`) is a
 * `fileId` or an https URL. A run start checks each before anything is held (`checkFileInputs`):
 * the upload is the team's, `ready` (settled here if its bytes arrived) and of a type the step
 * reads; a URL is https and its host public; the run names at most `maxFileInputs` files and
 * `maxFileInputBytes` of uploads. Then the run takes its own copy of each distinct upload, once
 * however many keys name it (`holdFileInputs`), counted against the team's storage quota, so the
 * upload expiring or being deleted never touches it. A URL is fetched by its step, once
 * (functions/nodes/executors/inputs.ts).
 */
import * as v from 'valibot';
import { FileIdSchema, fileIdPrefix } from '../../schemas/file-limits.ts';
import type { Deps } from '../deps.ts';
import { distinctBytes, expiresOn, maxFileInputBytes, maxFileInputs } from '../domain/stored-bytes.ts';
import { apiInputTargets } from '../domain/workflow-graph.ts';
import { FileNotFoundError, InputFileNotUsableError, TooManyFileInputsError } from '../errors/table.ts';
import { GuardedFetchError, vetUrl } from '../http-client/address-vet.ts';
import type { Canvas } from '../nodes/catalogue/canvas.ts';
import { getNodeSpec } from '../nodes/catalogue/index.ts';
import { fileInputTypes } from '../nodes/catalogue/node-spec.ts';
import { logger } from '../observability/logger.ts';
import type { InputFile, CheckedUploadRecord as StoredCheckedUpload } from '../store/items/runs.ts';
import type { UploadItem } from '../store/items/uploads.ts';
import { assertRoomFor, reserveStoredBytes } from '../store/stored-bytes.ts';
import { copyUpload, inputObjectKey, uploadObjectKey } from '../store/uploads.ts';
import { settleUpload } from './uploads.ts';

/** An upload a run start checked for an input key: the run copies it once admitted (a deferred run, when dispatched). */
export interface CheckedUpload {
  key: string;
  item: StoredCheckedUpload;
}

/** The checked uploads by input key, as a deferred run stores them, and back. */
export const uploadsByKey = (uploads: readonly CheckedUpload[]): Record<string, StoredCheckedUpload> =>
  Object.fromEntries(uploads.map(({ key, item }) => [key, item]));
export const uploadsOf = (byKey: Readonly<Record<string, StoredCheckedUpload>>): CheckedUpload[] =>
  Object.entries(byKey).map(([key, item]) => ({ key, item }));

/** The upload `fileId` names, usable by a step that reads `types`; else the 422 naming `key`. */
const checkUpload = async (
  deps: Deps,
  teamId: string,
  input: { key: string; fileId: string; nodeType: string; types: readonly string[] },
): Promise<CheckedUpload> => {
  const { key, fileId } = input;
  const refuse = (reason: string) => new InputFileNotUsableError(key, reason);
  let item: UploadItem;
  try {
    // Another team's id and an unknown one read alike: no item in this team's partition.
    if (!v.is(FileIdSchema, fileId)) throw new FileNotFoundError(fileId);
    item = await settleUpload(deps, teamId, fileId);
  } catch (error) {
    if (error instanceof FileNotFoundError) throw refuse(`file ${fileId} not found`);
    throw error;
  }
  if (item.state === 'awaiting_upload') throw refuse(`file ${fileId} is awaiting_upload: its bytes have not arrived`);
  if (item.state === 'rejected')
    throw refuse(`file ${fileId} was rejected: ${item.reason ?? 'its content was refused'}`);
  if (!input.types.includes(item.contentType)) {
    throw refuse(`${input.nodeType} reads ${input.types.join(', ')}, not ${item.contentType}`);
  }
  if (item.etag === undefined) throw new Error(`ready file ${fileId} has no ETag`);
  const { name, contentType, size, etag } = item;
  return { key, item: { fileId, name, contentType, size, etag } };
};

/** A URL input the step may fetch: https (http to loopback only where loopback is allowed), its host public. */
const checkUrl = async (deps: Deps, key: string, url: string): Promise<void> => {
  try {
    await vetUrl(url, { allowLoopback: deps.allowLoopback ?? false, localStack: deps.localStack ?? false });
  } catch (error) {
    if (!(error instanceof GuardedFetchError)) throw error;
    // Why an address was refused is for the logs: the caller reads the same text for every reason.
    if (error.detail) logger.info('URL input refused', { key, detail: error.detail });
    const reason =
      error.code === 'forbidden_scheme'
        ? 'only https URLs are allowed'
        : error.code === 'invalid_url'
          ? `not a fileId (${fileIdPrefix}…) nor a valid https URL: ${error.message}`
          : error.message;
    throw new InputFileNotUsableError(key, reason);
  }
};

/**
 * Checks every `inputs` value that feeds a file step (the others are text, used as they are), in
 * the order sent, before anything is held: the uploads to copy, or the 422 naming the first key
 * that cannot be used.
 */
export const checkFileInputs = async (
  deps: Deps,
  teamId: string,
  canvas: Canvas,
  inputs: Record<string, string>,
): Promise<CheckedUpload[]> => {
  const targets = apiInputTargets(canvas);
  const uploads: CheckedUpload[] = [];
  const fileInputsOf = Object.entries(inputs).flatMap(([key, value]) => {
    const node = canvas.nodes.find((n) => n.id === targets.get(key));
    const spec = node && getNodeSpec(node.type);
    const types = spec && fileInputTypes(spec);
    return node && types ? [{ key, value, node, types }] : [];
  });
  // Counted before any is read: a request naming hundreds is refused at once.
  if (fileInputsOf.length > maxFileInputs) throw new TooManyFileInputsError(fileInputsOf.length, 0);
  for (const { key, value, node, types } of fileInputsOf) {
    if (value.startsWith(fileIdPrefix)) {
      uploads.push(await checkUpload(deps, teamId, { key, fileId: value, nodeType: node.type, types }));
    } else {
      await checkUrl(deps, key, value);
    }
  }
  const bytes = distinctBytes(uploads.map((u) => u.item));
  if (bytes > maxFileInputBytes) throw new TooManyFileInputsError(fileInputsOf.length, bytes);
  return uploads;
};

/** The bytes a run's copies of its checked uploads hold: each distinct upload once. */
const copiedBytes = (uploads: readonly CheckedUpload[]): number => distinctBytes(uploads.map(({ item }) => item));

/**
 * Whether the copies `holdFileInputs` would make fit the team's storage quota now: its refusal, or
 * nothing. A read (the estimate's): nothing is counted or copied.
 */
export const checkRoomForInputs = async (deps: Deps, teamId: string, uploads: readonly CheckedUpload[]) => {
  if (uploads.length > 0) await assertRoomFor(deps, teamId, copiedBytes(uploads));
};

/**
 * The run's own copy of each distinct checked upload (one however many keys name it), under its
 * team's prefix and named by `holderId` (the run's jobId) and the `fileId`: counted against the
 * team's storage quota (the StorageQuotaReachedError when it would not fit), then copied inside S3,
 * only if the object is still the one that was checked. A copy whose start is then refused is left
 * to the retention's lifecycle rule (and counted until then).
 */
export const holdFileInputs = async (
  deps: Deps,
  teamId: string,
  holderId: string,
  uploads: readonly CheckedUpload[],
): Promise<Record<string, InputFile>> => {
  if (uploads.length === 0) return {};
  const distinct = new Map(uploads.map(({ item }) => [item.fileId, item]));
  await reserveStoredBytes(deps, teamId, copiedBytes(uploads), expiresOn(deps.now(), deps.retentionDays));
  const copies = new Map<string, InputFile>();
  for (const item of distinct.values()) {
    const to = inputObjectKey(teamId, holderId, item.fileId, item.name);
    const copied = await copyUpload(
      deps,
      { key: uploadObjectKey(teamId, item.fileId), etag: item.etag, contentType: item.contentType },
      to,
    );
    const key = uploads.find((u) => u.item.fileId === item.fileId)?.key ?? item.fileId;
    if (copied === 'changed') {
      throw new InputFileNotUsableError(key, `file ${item.fileId} changed after it was checked: upload it again`);
    }
    if (copied === 'gone') throw new InputFileNotUsableError(key, `file ${item.fileId} not found`);
    copies.set(item.fileId, {
      kind: 'file',
      key: to,
      name: item.name,
      contentType: item.contentType,
      bytes: item.size,
      availability: 'ready',
    });
  }
  return Object.fromEntries(uploads.map(({ key, item }) => [key, copies.get(item.fileId) as InputFile]));
};
