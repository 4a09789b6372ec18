/**
 * What a caller may upload, apart from the rest of `files.ts` (its schemas and OpenAPI words): the
 * node catalogue names these types for its file steps, and every bundle that reads the catalogue
 * would otherwise carry the whole module.
 */
/**
 * The content types a caller may upload, by kind. FBX has no registered media type: `model/fbx`
 * names it beside the other meshes (`application/octet-stream` is refused: it says nothing to check).
 */
export const uploadContentTypes = [
  'image/png',
  'image/jpeg',
  'image/webp',
  'image/gif',
  'audio/wav',
  'audio/x-wav',
  'audio/mpeg',
  'audio/flac',
  'audio/ogg',
  'model/gltf-binary',
  'model/gltf+json',
  'model/obj',
  'model/fbx',
  'application/json',
  'text/plain',
] as const;
export type UploadContentType = (typeof uploadContentTypes)[number];
