/**
 * How a stored file is served by a presigned GET: the headers S3 answers in place of the object's
 * own (the signed `response-content-type` and `response-content-disposition` overrides). A type
 * that is not one the service stores (an object written before types came from the bytes, say)
 * is served as `application/octet-stream`; anything that is not an image, a sound or a model is an
 * attachment, so a browser saves it and never renders it as a page.
 */
import { type UploadContentType, uploadContentTypes } from '../../schemas/upload-types.ts';

export interface ServedHeaders {
  contentType: string;
  contentDisposition: string;
}

const isStoredType = (type: string): type is UploadContentType =>
  (uploadContentTypes as readonly string[]).includes(type);

/** A file name safe in a header's quoted string, or none. */
const safeName = (key: string): string | undefined => {
  const name = key.slice(key.lastIndexOf('/') + 1);
  return /^[A-Za-z0-9._-]{1,128}$/.test(name) ? name : undefined;
};

export const servedHeaders = (key: string, storedType: string | undefined): ServedHeaders => {
  const type = storedType?.split(';')[0]?.trim().toLowerCase() ?? '';
  const contentType = isStoredType(type) ? type : 'application/octet-stream';
  const inline = /^(image|audio|model)\//.test(contentType);
  const name = safeName(key);
  const disposition = inline ? 'inline' : 'attachment';
  return { contentType, contentDisposition: name ? `${disposition}; filename="${name}"` : disposition };
};
