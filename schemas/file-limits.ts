/**
 * A file's id and the limits of an upload (our design, schemas/files.ts): the constants the run
 * start, the keyed handler and the error table read, apart from the file schemas and operations,
 * so importing one builds nothing else.
 */
import * as v from 'valibot';
import { uploadContentTypes } from './upload-types.ts';

/** The largest file a caller may upload: 100 MiB. */
export const maxUploadBytes = 100 * 1024 * 1024;

/** Longest file name, in characters. */
export const maxFileNameLength = 255;

/**
 * A file's id: `file_` and a uuid, so a run's input names a file at a glance (item 2 of the
 * feature reads it there). Any other path value names no file and reads as one that does not exist.
 */
export const fileIdPattern = /^file_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const FileIdSchema = v.pipe(v.string(), v.regex(fileIdPattern));
export const fileIdPrefix = 'file_';

/** What each limit of POST /files says when a request passes it (the detail of the 422). */
export const fileMessages = {
  nameInvalid: `name must be 1 to ${maxFileNameLength} characters, with no path separator or control character`,
  contentTypeNotAccepted: `contentType must be one of ${uploadContentTypes.join(', ')}`,
  sizeOutOfRange: `size must be a whole number of bytes from 1 to ${maxUploadBytes} (100 MiB)`,
} as const;

/** The 422 of POST /files begins with this. */
export const fileNotAcceptedPrefix = 'File not accepted: ';
