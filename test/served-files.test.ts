/** Where a presigned GET is given (functions/domain/served-files.ts): the edge's files host, path and query untouched. */
import { describe, expect, it } from 'vitest';
import { servedUrl } from '../functions/domain/served-files.ts';

const presigned =
  'https://lib-abc123.s3.eu-west-1.amazonaws.com/teams/t1/runs/j1/node%2520a/page.html' +
  '?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIA%2F20261207%2Feu-west-1%2Fs3%2Faws4_request' +
  '&response-content-disposition=attachment%3B%20filename%3D%22page.html%22&X-Amz-Signature=abc';

describe('servedUrl', () => {
  it('puts the URL on the files host, its encoded path and whole query exactly as signed', () => {
    const served = servedUrl(presigned, 'https://files.api.example.com');
    expect(served).toBe(
      presigned.replace('https://lib-abc123.s3.eu-west-1.amazonaws.com', 'https://files.api.example.com'),
    );
  });

  it('takes only the origin of the files base, and leaves the URL as signed without one', () => {
    expect(servedUrl(presigned, 'https://files.api.example.com/ignored/')).toMatch(
      /^https:\/\/files\.api\.example\.com\/teams\//,
    );
    expect(servedUrl(presigned, undefined)).toBe(presigned);
  });
});
