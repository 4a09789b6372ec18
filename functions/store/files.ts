import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { AiMark } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { servedHeaders, servedUrl } from '../domain/served-files.ts';
import { expiresOn } from '../domain/stored-bytes.ts';
import type { StoredFile } from '../nodes/executors/types.ts';
import { aiObjectMetadata } from '../nodes/media/marks.ts';
import { countStoredBytes } from './stored-bytes.ts';

/** Where a run's files live in the team's library bucket. */
const runFileKey = (teamId: string, jobId: string, nodeId: string, name: string) =>
  `teams/${teamId}/runs/${jobId}/${encodeURIComponent(nodeId)}/${name}`;

/** A stored file belongs to the team only under its prefix: a forged key in user JSON is refused. */
export const isTeamObject = (teamId: string, key: string) => key.startsWith(`teams/${teamId}/`) && !key.includes('..');

/**
 * Stores a step's file in the library bucket; AI-made files carry the mark in their object
 * metadata (the executors mark the bytes themselves, per format, or keep a provider's C2PA
 * manifest: `aiMark`). The bytes are stored as given. A failed copy reads `unavailable`.
 */
export const putRunFile = async (
  deps: Deps,
  where: { teamId: string; jobId: string; nodeId: string },
  file: { name: string; contentType: string; body: Uint8Array; aiGenerated: boolean; aiMark?: AiMark },
): Promise<StoredFile> => {
  const key = runFileKey(where.teamId, where.jobId, where.nodeId, file.name);
  const aiMark = file.aiGenerated ? (file.aiMark ?? 'service') : undefined;
  const stored = {
    kind: 'file' as const,
    key,
    name: file.name,
    contentType: file.contentType,
    bytes: file.body.byteLength,
    ...(aiMark && { aiMark }),
  };
  try {
    await deps.s3.send(
      new PutObjectCommand({
        Bucket: deps.bucket,
        Key: key,
        Body: file.body,
        ContentType: file.contentType,
        Metadata: aiMark ? aiObjectMetadata(aiMark) : { 'ai-generated': 'false' },
      }),
    );
  } catch {
    return { ...stored, availability: 'unavailable' };
  }
  // Counted against the team's quota, never refused: the run was admitted; a team over its quota starts no more.
  await countStoredBytes(deps, where.teamId, stored.bytes, expiresOn(deps.now(), deps.retentionDays));
  return { ...stored, availability: 'ready' };
};

/** Reads a file of the team (refused outside its prefix). */
export const readTeamFile = async (deps: Deps, teamId: string, file: StoredFile): Promise<Uint8Array> => {
  if (!isTeamObject(teamId, file.key)) throw new Error('File is not in this team’s library');
  const { Body } = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: file.key }));
  if (!Body) throw new Error('Empty object');
  return Body.transformToByteArray();
};

/** The object's stored type, or undefined when it cannot be read (gone, or not this role's). */
const storedTypeOfObject = async (deps: Deps, key: string): Promise<string | undefined> => {
  try {
    return (await deps.s3.send(new HeadObjectCommand({ Bucket: deps.bucket, Key: key }))).ContentType;
  } catch {
    return undefined;
  }
};

/**
 * A presigned GET of a team's file, valid `seconds` (refused outside the team's prefix), whose
 * answer's type and disposition are signed into the URL (functions/domain/served-files.ts): the
 * `contentType` the caller knows, else the object's own (one HEAD), else octet-stream, attached.
 * Given on the edge's files host when the stage has one (`filesBaseUrl`), which adds nosniff.
 */
export const presignTeamFile = async (
  deps: Deps,
  teamId: string,
  key: string,
  seconds: number,
  contentType?: string,
): Promise<string> => {
  if (!isTeamObject(teamId, key)) throw new Error('File is not in this team’s library');
  const served = servedHeaders(key, contentType ?? (await storedTypeOfObject(deps, key)));
  const command = new GetObjectCommand({
    Bucket: deps.bucket,
    Key: key,
    ResponseContentType: served.contentType,
    ResponseContentDisposition: served.contentDisposition,
  });
  return servedUrl(await getSignedUrl(deps.s3, command, { expiresIn: seconds }), deps.filesBaseUrl);
};
