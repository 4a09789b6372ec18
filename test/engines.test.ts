/**
 * What README.md says of Node 20: its npm installs the project, warning `EBADENGINE` for exactly the
 * packages it names (they run only on the project's Node 24). Checked with the npm that runs this
 * test (`npm_execpath` on `npm_node_execpath`), by a dry `npm ci` of the lockfile in a scratch folder.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));
const npmNode = process.env.npm_node_execpath;
const npmCli = process.env.npm_execpath;
const npmNodeMajor =
  npmNode && npmCli
    ? Number(execFileSync(npmNode, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }))
    : 0;

/** The packages README.md names as warning on Node 20. */
const namedInReadme = () => {
  const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8');
  const sentence = /warns `EBADENGINE` for the packages that declare Node 22\s+or newer: ([^.]+)\./.exec(readme)?.[1];
  if (!sentence) throw new Error('README.md no longer says which packages warn EBADENGINE on Node 20');
  return [...sentence.matchAll(/`([^`]+)`/g)].map((m) => m[1]).sort();
};

describe('engines on Node 20', () => {
  it.runIf(npmNodeMajor === 20)('npm ci warns EBADENGINE for exactly the packages README.md names', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'engines-'));
    try {
      for (const file of ['package.json', 'package-lock.json', 'packages/client/package.json'])
        cpSync(join(repositoryRoot, file), join(scratch, file));
      const dry = spawnSync(
        npmNode as string,
        [npmCli as string, 'ci', '--dry-run', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'],
        { cwd: scratch, encoding: 'utf8', timeout: 120_000 },
      );
      expect(dry.status, dry.stderr).toBe(0);
      const warned = [...dry.stderr.matchAll(/EBADENGINE {3}package: '(.+)@[^@']+'/g)].map((m) => m[1]).sort();
      expect(warned.length).toBeGreaterThan(0);
      expect(warned).toEqual(namedInReadme());
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('the root package says what installs it (Node 20), and the Node that runs it is the node devDependency', () => {
    const root = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8'));
    expect(root.engines).toEqual({ node: '>=20' });
    expect(root.devDependencies.node).toMatch(/^24\./);
  });
});
