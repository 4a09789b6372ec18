/**
 * Files a caller uploads (our design, beyond the spec): the upload request, the File as read, and
 * what it may be. A caller declares a file (`POST /files`), sends its bytes to the presigned PUT it
 * is answered, and reads it (`GET /files/{fileId}`), which checks what arrived against what was
 * declared. Requests use `v.object` (never taking an array for one), responses `v.strictObject`.
 */
import * as v from 'valibot';
import { DateTimeSchema, notArray } from './common.ts';
import { FileIdSchema, fileMessages, fileNotAcceptedPrefix, maxFileNameLength, maxUploadBytes } from './file-limits.ts';
import { type DocumentedParameter, jsonResponse, type OperationSpec, ref, storageBusyText } from './openapi-parts.ts';
import { uploadContentTypes } from './upload-types.ts';

/** 422 of POST /files: which limit, and every limit, so a client can correct itself. */
export const FileNotAcceptedErrorSchema = v.strictObject({
  error: v.pipe(v.string(), v.startsWith(fileNotAcceptedPrefix)),
  maxBytes: v.literal(maxUploadBytes),
  contentTypes: v.array(v.picklist(uploadContentTypes)),
});
export type FileNotAcceptedErrorBody = v.InferOutput<typeof FileNotAcceptedErrorSchema>;

/** Body of POST /files. Each limit's message is the 422's (`FileNotAcceptedError`); a wrong type is a 400. */
export const CreateFileRequestSchema = notArray(
  v.object({
    /** The file's name, for the caller: no path, no control characters. */
    name: v.pipe(
      v.string(),
      v.minLength(1, fileMessages.nameInvalid),
      v.maxLength(maxFileNameLength, fileMessages.nameInvalid),
      // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
      v.regex(/^[^/\\\u0000-\u001f\u007f]+$/, fileMessages.nameInvalid),
      v.check((name) => name !== '.' && name !== '..', fileMessages.nameInvalid),
    ),
    contentType: v.picklist(uploadContentTypes, fileMessages.contentTypeNotAccepted),
    /** Exact size in bytes: the upload must send exactly this many. */
    size: v.pipe(
      v.number(),
      v.integer(fileMessages.sizeOutOfRange),
      v.minValue(1, fileMessages.sizeOutOfRange),
      v.maxValue(maxUploadBytes, fileMessages.sizeOutOfRange),
    ),
  }),
);
export type CreateFileRequest = v.InferOutput<typeof CreateFileRequestSchema>;

/**
 * Where a file is: declared and not yet seen (`awaiting_upload`), checked and usable (`ready`), or
 * refused (`rejected`, with its `reason`; its bytes are deleted).
 */
export const fileStates = ['awaiting_upload', 'ready', 'rejected'] as const;
export const FileStateSchema = v.picklist(fileStates);
export type FileState = v.InferOutput<typeof FileStateSchema>;

/** 200 of GET /files/{fileId}. */
export const FileSchema = v.strictObject({
  fileId: FileIdSchema,
  name: v.string(),
  contentType: v.picklist(uploadContentTypes),
  size: v.number(),
  state: FileStateSchema,
  /** Why it was rejected (only when `rejected`). */
  reason: v.optional(v.string()),
  createdAt: DateTimeSchema,
  /** When the file is deleted if nothing uses it: 24 hours after it was declared. */
  expiresAt: DateTimeSchema,
});
export type FileView = v.InferOutput<typeof FileSchema>;

/** How to send the bytes: exactly this method, URL and headers, before `expiresAt`. */
export const FileUploadSchema = v.strictObject({
  method: v.literal('PUT'),
  url: v.pipe(v.string(), v.url()),
  headers: v.strictObject({ 'content-type': v.picklist(uploadContentTypes), 'content-length': v.string() }),
  /** The end of the URL's validity (15 minutes). */
  expiresAt: DateTimeSchema,
});

/** 201 of POST /files: the File, and how to upload its bytes. */
export const CreateFileResponseSchema = v.strictObject({
  ...v.omit(FileSchema, ['reason']).entries,
  upload: FileUploadSchema,
});
export type CreateFileResponse = v.InferOutput<typeof CreateFileResponseSchema>;

/** 200 of GET /storage (our design): the bytes the team holds now, and its storage quota. */
export const StorageUsageSchema = v.strictObject({
  /** Uploads (at their declared size), runs' input copies and output files not yet expired. */
  usedBytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
  quotaBytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
});
export type StorageUsageView = v.InferOutput<typeof StorageUsageSchema>;

/** The named schemas of the document this module holds (its 422's body is an error's, named with the errors). */
export const fileComponents = {
  CreateFileRequest: CreateFileRequestSchema,
  CreateFileResponse: CreateFileResponseSchema,
  FileUpload: FileUploadSchema,
  File: FileSchema,
  StorageUsage: StorageUsageSchema,
};

const fileIdPath: DocumentedParameter = {
  name: 'fileId',
  in: 'path',
  required: true,
  description: 'The `fileId` returned when the file was declared.',
  schema: FileIdSchema,
};

/** The operations of the file routes, for the document (schemas/openapi.ts). */
export const fileOperations: OperationSpec[] = [
  {
    operationId: 'CreateFile',
    tag: 'Files',
    summary: 'Upload a file',
    description: [
      'Declares a file (its name, content type and exact size) and answers a presigned `PUT` to send its ' +
        'bytes: send exactly that method, URL and headers, before `upload.expiresAt` (15 minutes). The URL is ' +
        'bound to the content type and the size; storage refuses any other.',
      `At most ${maxUploadBytes} bytes (100 MiB), of one of the accepted content types. Get a file then ` +
        'checks what arrived against what was declared (its magic bytes, its size, an image dimensions) and ' +
        'answers `ready` or `rejected`. A file nothing uses is deleted 24 hours after it was declared (`expiresAt`).',
    ].join('\n\n'),
    requestBody: { required: true, content: { 'application/json': { schema: ref('CreateFileRequest') } } },
    responses: {
      201: jsonResponse('The file, `awaiting_upload`, and how to upload it.', 'CreateFileResponse'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: {
      400: 'The body is not JSON or a field has the wrong type.',
      413: 'The body is larger than 4 KiB.',
      422: 'The size is 0 or above the limit, the content type is not accepted, or the name is not a plain file name.',
      503: storageBusyText,
    },
  },
  {
    operationId: 'GetFile',
    tag: 'Files',
    summary: 'Get a file',
    description:
      'Reads a file. A file still `awaiting_upload` whose bytes have arrived is checked on this read: its size ' +
      'against the declared one, its first bytes against the declared content type, and an image dimensions ' +
      'against the pixel limit. It is then `ready`, or `rejected` with a `reason` (its bytes deleted). One whose ' +
      'upload URL expired with nothing sent is `rejected` too.',
    parameters: [fileIdPath],
    responses: {
      200: jsonResponse('The file.', 'File'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 404: 'No such file in the team.', 503: storageBusyText },
  },
  {
    operationId: 'GetStorage',
    tag: 'Files',
    summary: 'Get the team’s stored bytes',
    description:
      'The bytes the team holds now (its uploads at their declared size, its runs’ input copies and output ' +
      'files, each until the retention expires it) and its storage quota. An upload or run start that would ' +
      'store past the quota answers 409 `Storage quota reached`.',
    responses: {
      200: jsonResponse('What the team holds, and its quota.', 'StorageUsage'),
      500: jsonResponse('Server failure.', 'ServerError'),
    },
    errorWords: { 503: storageBusyText },
  },
];
