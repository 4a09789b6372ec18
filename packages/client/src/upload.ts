/**
 * `uploadFile`'s parts: the content type a file name implies, and the bytes as a stream read in
 * chunks, so a large file is never held whole in memory and its progress can be counted.
 */
import { open } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { UnknownContentTypeError } from './errors.ts';
import type { components } from './openapi-types.ts';

export type UploadContentType = components['schemas']['CreateFileRequest']['contentType'];

/** The accepted content type each file extension names (docs/api.md, "Uploading a file"). */
export const contentTypesByExtension: Readonly<Record<string, UploadContentType>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.flac': 'audio/flac',
  '.ogg': 'audio/ogg',
  '.glb': 'model/gltf-binary',
  '.gltf': 'model/gltf+json',
  '.obj': 'model/obj',
  '.fbx': 'model/fbx',
  '.json': 'application/json',
  '.txt': 'text/plain',
};

/** The content type a file's extension names (case aside); `UnknownContentTypeError` for any other. */
export const contentTypeOf = (path: string): UploadContentType => {
  const extension = extname(path).toLowerCase();
  const type = contentTypesByExtension[extension];
  if (!type) throw new UnknownContentTypeError(path, extension, Object.keys(contentTypesByExtension));
  return type;
};

/** A name for bytes that came without one: `upload` and the type's first extension. */
export const defaultName = (contentType: string): string => {
  const extension = Object.entries(contentTypesByExtension).find(([, type]) => type === contentType)?.[0];
  return `upload${extension ?? ''}`;
};

export const nameOf = (path: string): string => basename(path);

/** How much of the file each read takes; progress is reported once per chunk. */
export const uploadChunkBytes = 1024 * 1024;

export interface UploadProgress {
  /** Bytes handed to the connection so far. */
  sentBytes: number;
  /** The file's size: the declared size. */
  totalBytes: number;
}

/** Where the bytes come from: in memory, or a file read chunk by chunk as the connection asks. */
export type ByteSource =
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'file'; path: string; size: number; read: (offset: number, into: Uint8Array) => Promise<number> };

/** Opens `path` for the upload: its size now, and reads at an offset (the handle is closed by `close`). */
export const openFile = async (path: string) => {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const source: ByteSource = {
      kind: 'file',
      path,
      size,
      read: async (offset, into) => (await handle.read(into, 0, into.length, offset)).bytesRead,
    };
    return { source, close: () => handle.close() };
  } catch (error) {
    await handle.close();
    throw error;
  }
};

/**
 * The bytes as a stream of chunks, each pulled only when the connection asks for it (high-water
 * mark 0), so `onProgress` counts what fetch took, not what was read ahead. Exactly `total` bytes:
 * a file that shrank meanwhile errors the stream rather than sending less than the signed length.
 */
export const chunkedStream = (
  source: ByteSource,
  total: number,
  onProgress?: (progress: UploadProgress) => void,
  chunkBytes = uploadChunkBytes,
): ReadableStream<Uint8Array> => {
  let sent = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        if (sent >= total) return controller.close();
        const length = Math.min(chunkBytes, total - sent);
        let chunk: Uint8Array;
        if (source.kind === 'bytes') chunk = source.bytes.subarray(sent, sent + length);
        else {
          chunk = new Uint8Array(length);
          let filled = 0;
          while (filled < length) {
            const read = await source.read(sent + filled, chunk.subarray(filled));
            if (read === 0) throw new Error(`${source.path} is shorter than the ${total} bytes declared`);
            filled += read;
          }
        }
        sent += length;
        controller.enqueue(chunk);
        onProgress?.({ sentBytes: sent, totalBytes: total });
        if (sent >= total) controller.close();
      },
    },
    { highWaterMark: 0 },
  );
};
