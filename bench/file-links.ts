/**
 * Section `links`: a file link's redirect (GET /file-links/{object}?exp&sig answering 302) through
 * the API server in its own process, beside its floor, a bare presign of the same object
 * (`getSignedUrl`) timed here in the same rounds: what the link adds to the presign is the HTTP
 * request, the gateway's event, the HMAC check and the answer. The link's signing key is read
 * once per container, so a warm redirect sends no AWS request at all.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { fileLinkFor } from '../functions/app/file-links.ts';
import type { Deps } from '../functions/deps.ts';
import { fileRedirectSeconds } from '../functions/domain/file-link-lifetime.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { putRunFile } from '../functions/store/files.ts';
import { type LoopResult, runLoops } from './floor.ts';
import { type LoadResult, runLoad } from './load.ts';
import { heading, latencyLine, line, ratio } from './report.ts';
import type { ServerProcess } from './server-process.ts';
import { summarize, type Targets } from './stats.ts';

const rounds = 5;

const merge = <T extends LoopResult | LoadResult>(parts: T[]) => ({
  latencies: parts.flatMap((p) => p.latencies),
  errors: parts.reduce((n, p) => n + p.errors, 0),
  elapsedMs: parts.reduce((n, p) => n + p.elapsedMs, 0),
  unexpected: parts.reduce((n, p) => n + ('non2xx' in p ? p.non2xx : 0), 0),
});

export const benchFileLinks = async (options: {
  deps: Deps;
  server: ServerProcess;
  targets: Targets;
  teamId: string;
  seconds: number;
}) => {
  const { deps, server, targets, teamId } = options;
  heading(
    `File link: GET /file-links/… answering 302 (1 connection) vs a bare presign (1 loop), ${options.seconds} s each in ${rounds} rounds`,
  );
  const stored = await putRunFile(
    deps,
    { teamId, jobId: '00000000-0000-4000-8000-00000000b0b0', nodeId: 'image' },
    {
      name: 'image.png',
      contentType: 'image/png',
      body: encodePng(makeImage(16, 16, () => [0, 0, 0, 255])),
      aiGenerated: true,
    },
  );
  // The link as a run read gives it, pointed at the server (it shares the table, so the key too).
  const { url } = await fileLinkFor({ ...deps, publicBaseUrl: new URL(server.baseUrl).origin }, teamId, stored.key);
  const first = await fetch(url, { redirect: 'manual' });
  await first.arrayBuffer();
  if (first.status !== 302) throw new Error(`the file link answered ${first.status}`);
  const presign = () =>
    getSignedUrl(deps.s3, new GetObjectCommand({ Bucket: deps.bucket, Key: stored.key }), {
      expiresIn: fileRedirectSeconds,
    });
  const chunkMs = (options.seconds * 1000) / rounds;
  // Warm-up: both paths once through their JIT, not measured.
  await runLoops(presign, { concurrency: 1, durationMs: chunkMs });
  await runLoad({ url, connections: 1, duration: chunkMs / 1000, expectedStatus: 302 });
  const floorParts: LoopResult[] = [];
  const linkParts: LoadResult[] = [];
  for (let r = 0; r < rounds; r++) {
    floorParts.push(await runLoops(presign, { concurrency: 1, durationMs: chunkMs }));
    linkParts.push(await runLoad({ url, connections: 1, duration: chunkMs / 1000, expectedStatus: 302 }));
  }
  const floorRun = merge(floorParts);
  const linkRun = merge(linkParts);
  const floor = summarize(floorRun.latencies, floorRun.elapsedMs);
  const link = summarize(linkRun.latencies, linkRun.elapsedMs);
  latencyLine('floor: bare presign of the object (getSignedUrl, in process)', floor);
  latencyLine('GET /file-links/… → 302 (through the local API server)', link);
  line(
    'file link errors + answers other than 302',
    targets.check('file link failures', linkRun.errors + linkRun.unexpected, '==', 0, String),
  );
  line('ratio file link p50 / presign p50 (shown, not judged)', ratio(link.p50 / floor.p50));
  line('ratio file link p99 / presign p99', ratio(link.p99 / floor.p99));
};
