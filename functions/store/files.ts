import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { Deps } from '../deps.ts';
import type { StoredFile } from '../domain/executors/types.ts';

/** Where a run's files live in the team's library bucket. */
export const runFileKey = (teamId: string, jobId: string, nodeId: string, name: string) =>
  `teams/${teamId}/runs/${jobId}/${encodeURIComponent(nodeId)}/${name}`;

/**
 * Stores a step's file in the library bucket; AI-made files carry the mark in their object
 * metadata (the bytes are marked by the caller, per format). A failed copy reads `unavailable`.
 */
export const putRunFile = async (
  deps: Deps,
  where: { teamId: string; jobId: string; nodeId: string },
  file: { name: string; contentType: string; body: Uint8Array; aiGenerated: boolean },
): Promise<StoredFile> => {
  const key = runFileKey(where.teamId, where.jobId, where.nodeId, file.name);
  try {
    await deps.s3.send(
      new PutObjectCommand({
        Bucket: deps.bucket,
        Key: key,
        Body: file.body,
        ContentType: file.contentType,
        Metadata: file.aiGenerated
          ? { 'ai-generated': 'true', 'digital-source-type': 'trainedAlgorithmicMedia' }
          : { 'ai-generated': 'false' },
      }),
    );
    return { kind: 'file', key, contentType: file.contentType, bytes: file.body.byteLength, availability: 'ready' };
  } catch {
    return {
      kind: 'file',
      key,
      contentType: file.contentType,
      bytes: file.body.byteLength,
      availability: 'unavailable',
    };
  }
};
