import { CopyObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { AiMark } from '../../schemas/runs.ts';
import type { Deps } from '../deps.ts';
import { servedHeaders } from '../domain/served-files.ts';
import type { StoredFile } from '../nodes/executors/types.ts';
import { aiObjectMetadata } from '../nodes/media/marks.ts';
import { isMissingObject } from './missing-object.ts';

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
    return { ...stored, availability: 'ready' };
  } catch {
    return { ...stored, availability: 'unavailable' };
  }
};

/**
 * A run's own copy of a file of the team (a resume's carried-over output, or an input file of the
 * run it resumes), at `to` under the team's prefix: copied inside S3 with its metadata (the AI
 * mark) and type, so the bucket's lifecycle counts its age from now and it lives as long as the
 * new run. `gone` when the object is no longer there.
 */
export const copyTeamFile = async (
  deps: Deps,
  teamId: string,
  from: string,
  to: string,
): Promise<'copied' | 'gone'> => {
  if (!isTeamObject(teamId, from) || !isTeamObject(teamId, to)) throw new Error('File is not in this team’s library');
  try {
    await deps.s3.send(
      new CopyObjectCommand({
        Bucket: deps.bucket,
        Key: to,
        CopySource: `${deps.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`,
        MetadataDirective: 'COPY',
      }),
    );
    return 'copied';
  } catch (error) {
    if (isMissingObject(error, 'CopyObject', from)) return 'gone';
    throw error;
  }
};

/** Where a resumed run keeps its copy of a carried-over step's file: the run's own key for the step and name. */
export const carriedFileKey = (teamId: string, jobId: string, nodeId: string, from: string) =>
  runFileKey(teamId, jobId, nodeId, from.slice(from.lastIndexOf('/') + 1));

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
  return getSignedUrl(deps.s3, command, { expiresIn: seconds });
};
